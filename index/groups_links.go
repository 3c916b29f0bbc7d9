package index

import (
	"fmt"
	"slices"

	"github.com/sif-dev/sif/index/fingerprint"
)

// The link pass of a Groups run (groups.go): linkAll runs the passes over
// the postings (groups_pairs.go), then judges each pass's pairs on their
// distinctive weight at the level they are compared at, links those that
// pass and merges their nodes' groups with union-find.

// linkAll reads the postings once per partition of the pairs, the first
// time for all of them, and links the pairs that pass.
func (g *grouping) linkAll() error {
	n := len(g.cids)
	g.common = make([]uint64, n)
	g.parent = make([]uint32, n)
	for i := range g.parent {
		g.parent[i] = uint32(i)
	}
	g.nlinks = make([]uint32, n)
	todo := []partition{{}}
	shared := newPairTable() // reused: its table stays allocated
	for pass := 0; len(todo) > 0; pass++ {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		shared.clear()
		g.opts.Progress.Begin(passStep("linking similar files", pass, len(todo)))
		more, err := g.pairShares(shared, p, pass == 0, false)
		if err != nil {
			return err
		}
		todo = append(todo, more...)
		if pass == 0 {
			if err := g.findTemplates(); err != nil {
				return err
			}
		}
		if err := g.link(shared); err != nil {
			return err
		}
		lastGroupPasses.Store(int32(pass + 1))
	}
	if g.ntmpl < 2 {
		return nil
	}
	// The template nodes: their common keys, which the passes above left
	// out, link them through each key's hub.
	todo = []partition{{}}
	for pass := 0; len(todo) > 0; pass++ {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		shared.clear()
		g.opts.Progress.Begin(passStep("linking template families", pass, len(todo)))
		more, err := g.pairShares(shared, p, false, true)
		if err != nil {
			return err
		}
		todo = append(todo, more...)
		if err := g.linkTemplates(shared); err != nil {
			return err
		}
	}
	return nil
}

// passStep names a pass over the postings for Progress: what it does,
// and after the first, which pass it is of how many known so far.
func passStep(what string, pass, todo int) string {
	if pass == 0 {
		return what
	}
	return fmt.Sprintf("%s, pass %d of at least %d", what, pass+1, pass+1+todo)
}

// nodeWeights is what judging a pair needs of a node's content.
type nodeWeights struct {
	typ          fingerprint.Type
	level        uint8
	weight       uint64
	levelWeights []uint64
	features     uint32
}

// commonAt returns node d's weight at level l, and a bound of the weight of
// its keys of level l or more held by more than MaxDF files (its
// boilerplate there): at least that weight, less only by what cannot be of
// level l or more (see Groups).
func (g *grouping) commonAt(d uint32, w *nodeWeights, l int) (wl, common uint64) {
	r := FileRecord{Weight: w.weight, Level: w.level, LevelWeights: w.levelWeights}
	wl = r.WeightAt(l)
	common = g.common[d]
	if l > int(w.level) {
		common -= min(common, w.weight-min(wl, w.weight), g.belowWeight(d, w.level, l))
	}
	return wl, common
}

// eachPair calls fn for every pair of shared that is to be judged: its
// nodes share at least MinShared keys and, with SameType, have one type.
// fn is given the pair's key and nodes, what judging needs of each node,
// the level they are compared at (the higher of theirs) and their shared
// weight.
func (g *grouping) eachPair(shared *pairTable, fn func(k uint64, a, b uint32, wa, wb *nodeWeights, l int, weight uint64)) error {
	weightsOf, err := g.pairWeights(shared)
	if err != nil {
		return err
	}
	shared.each(func(k uint64, ps pairShare) {
		if int(ps.n) < g.opts.MinShared {
			return
		}
		a, b := uint32(k>>32), uint32(k)
		wa, wb := weightsOf(a), weightsOf(b)
		if g.opts.SameType && wa.typ != wb.typ {
			return
		}
		fn(k, a, b, wa, wb, int(max(wa.level, wb.level)), ps.weight)
	})
	return nil
}

// pairWeights reads the content records of the nodes of the pairs in
// shared that share at least MinShared keys, in content id order, and
// returns what judging them needs of each.
func (g *grouping) pairWeights(shared *pairTable) (func(d uint32) *nodeWeights, error) {
	var need []uint32
	shared.each(func(k uint64, ps pairShare) {
		if int(ps.n) >= g.opts.MinShared {
			need = append(need, uint32(k>>32), uint32(k))
		}
	})
	slices.Sort(need)
	need = slices.Compact(need)
	ws := make([]nodeWeights, len(need))
	for i, d := range need {
		var c FileRecord
		found, err := g.readContent(g.cids[d], &c)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("%w: a posting names content %d, which has no record", ErrCorrupt, g.cids[d])
		}
		ws[i] = nodeWeights{c.Type, c.Level, c.Weight, c.LevelWeights, c.Features}
	}
	return func(d uint32) *nodeWeights {
		i, _ := slices.BinarySearch(need, d)
		return &ws[i]
	}, nil
}

// link judges the pairs of one pass: it links those that pass, and merges
// them with union-find. It reads the content records of the nodes of the
// pairs that share at least MinShared keys.
func (g *grouping) link(shared *pairTable) error {
	// A node's distinctive weight at level l: its weight at that level
	// without its keys of that level or more held by too many files. Two
	// files are compared at the higher of their levels (fingerprint.Compare);
	// the keys they share are all of that level or more, and so is every
	// key the node holds when l is its own level. Above it, the
	// boilerplate below l is at most the node's weight below l, and at most
	// that of the keys no file of level l or more holds (see Groups).
	distinct := func(d uint32, w *nodeWeights, l int) uint64 {
		wl, common := g.commonAt(d, w, l)
		if g.templateAt(wl, common, w.features, 1) {
			return wl // judged on all of it, as a query of it is (Similar)
		}
		return wl - min(common, wl)
	}
	return g.eachPair(shared, func(_ uint64, a, b uint32, wa, wb *nodeWeights, l int, weight uint64) {
		// At most 1 but for key collisions (doc.go): a key two files share
		// through two hashes can be of a lower level in one of them.
		ab := min(1, fingerprint.Ratio(weight, distinct(a, wa, l)))
		ba := min(1, fingerprint.Ratio(weight, distinct(b, wb, l)))
		if max(ab, ba) < g.opts.Threshold {
			return
		}
		g.addLink(groupLink{a, b, ab, ba, false})
	})
}

// addLink adds l and merges its nodes' groups.
func (g *grouping) addLink(l groupLink) {
	g.links = append(g.links, l)
	g.nlinks[l.a]++
	g.nlinks[l.b]++
	g.union(l.a, l.b)
}

func (g *grouping) find(i uint32) uint32 {
	for g.parent[i] != i {
		g.parent[i] = g.parent[g.parent[i]]
		i = g.parent[i]
	}
	return i
}

func (g *grouping) union(a, b uint32) {
	ra, rb := g.find(a), g.find(b)
	if ra != rb {
		g.parent[max(ra, rb)] = min(ra, rb)
	}
}
