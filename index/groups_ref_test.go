package index

// The implementation of Groups before it streamed: it loads every record
// under the prefix and holds every pair sharing a fingerprint. Tests and
// benchmarks compare the streaming Groups with it.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// GroupsReference is Groups as it was before it streamed.
func (ix *Index) GroupsReference(opts GroupOptions) ([]Group, error) { return ix.groupsRef(opts) }

// SetGroupPairBudget sets the most pairs a pass of Groups holds, and
// returns a function that restores the default.
func SetGroupPairBudget(n int) (restore func()) {
	old := groupPairBudget
	groupPairBudget = n
	return func() { groupPairBudget = old }
}

// GroupPasses is the number of passes over the postings the last Groups
// made.
func GroupPasses() int { return int(lastGroupPasses.Load()) }

// refNode is one distinct content among the files considered: a
// representative file and its identical copies.
type refNode struct {
	rec    FileRecord
	copies []string
	parent int // union-find
	links  int
}

func (ix *Index) groupsRef(opts GroupOptions) ([]Group, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ix.acquire(); err != nil {
		return nil, err
	}
	defer ix.release()
	snap := ix.db.NewSnapshot()
	defer snap.Close()

	nodes, nodeOf, err := ix.refNodes(snap, opts.PathPrefix, opts.Visible)
	if err != nil {
		return nil, err
	}
	shared, common, commonKeys, err := ix.refPairShares(snap, opts.MaxDF, nodeOf)
	if err != nil {
		return nil, err
	}
	// A template node: its common keys weigh more than TemplateShare of
	// its weight. It is judged on all of its weight.
	template := func(i int) bool {
		var c uint64
		for _, w := range common[i] {
			c += w
		}
		return float64(c) > templateCut(int(min(uint64(nodes[i].rec.Features), nodes[i].rec.Weight)), 2)*float64(nodes[i].rec.Weight)
	}
	// A node's distinctive weight at level l: its weight at that level
	// without its keys held by too many files whose level is l or more.
	// Two files are compared at the higher of their levels
	// (fingerprint.Compare); the keys they share are all of that level or
	// more. The level of a key is not stored: that of a key held by too
	// many files is at least the highest level of the files holding it,
	// and the node's weight below l bounds the weight of those below l.
	// A node is judged at level l as a template file, on all of its
	// weight there, when its boilerplate there is more than
	// TemplateShare of it.
	weights := func(i, l int) (w, bp uint64) {
		rec := &nodes[i].rec
		w = rec.WeightAt(l)
		var below uint64
		for m, cw := range common[i] {
			if m >= l {
				bp += cw
			} else {
				below += cw
			}
		}
		bp += below - min(below, rec.Weight-w)
		return w, bp
	}
	templateAt := func(i, l int, z float64) bool {
		w, bp := weights(i, l)
		return float64(bp) > templateCut(int(min(uint64(nodes[i].rec.Features), w)), z)*float64(w)
	}
	distinct := func(i, l int) uint64 {
		w, bp := weights(i, l)
		if templateAt(i, l, 1) {
			return w
		}
		return w - min(bp, w)
	}

	// Link the pairs that pass, and merge them with union-find: first
	// those of the keys held by 2 to MaxDF files, then the template pairs,
	// whose common weight adds to a link of the first kind.
	type link struct {
		a, b     int
		ab, ba   float64
		percent  float64
		template bool
	}
	linked := map[uint64]int{} // pair → its place in links
	var links []link
	judge := func(pairs map[uint64]refPairShare, tmpl bool) {
		for _, key := range slices.Sorted(maps.Keys(pairs)) {
			ps := pairs[key]
			if int(ps.n) < opts.MinShared {
				continue
			}
			sh := ps.weight
			a, b := int(key>>32), int(key&math.MaxUint32)
			na, nb := &nodes[a], &nodes[b]
			if opts.SameType && na.rec.Type != nb.rec.Type {
				continue
			}
			l := int(max(na.rec.Level, nb.rec.Level))
			ab, ba := fingerprint.Ratio(sh, distinct(a, l)), fingerprint.Ratio(sh, distinct(b, l))
			if tmpl { // common weight counts only within a template file's family
				if _, bp := weights(a, l); !templateAt(a, l, 2) || float64(sh) <= TemplateShare*float64(bp) {
					ab = 0
				}
				if _, bp := weights(b, l); !templateAt(b, l, 2) || float64(sh) <= TemplateShare*float64(bp) {
					ba = 0
				}
			}
			if i, ok := linked[key]; ok && tmpl {
				lk := &links[i]
				lk.ab, lk.ba = min(1, lk.ab+ab), min(1, lk.ba+ba)
				lk.percent, lk.template = max(lk.ab, lk.ba), true
				continue
			}
			ab, ba = min(1, ab), min(1, ba)
			if max(ab, ba) < opts.Threshold {
				continue
			}
			linked[key] = len(links)
			links = append(links, link{a, b, ab, ba, max(ab, ba), tmpl})
			na.links++
			nb.links++
			refUnion(nodes, a, b)
		}
	}
	judge(shared, false)
	judge(refTemplatePairs(commonKeys, template, func(i int) uint32 { return nodes[i].rec.Content }), true)
	slices.SortFunc(links, func(x, y link) int {
		return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b))
	})

	// Collect the groups, and each member's links.
	members := make(map[int][]int) // root → node indexes
	for i := range nodes {
		if nodes[i].links > 0 {
			r := refFind(nodes, i)
			members[r] = append(members[r], i)
		}
	}
	type linkTo struct {
		percent  float64
		template bool
	}
	percentTo := make(map[int]map[int]linkTo) // node → linked node → its link
	for _, l := range links {
		for _, e := range [][2]int{{l.a, l.b}, {l.b, l.a}} {
			m := percentTo[e[0]]
			if m == nil {
				m = make(map[int]linkTo)
				percentTo[e[0]] = m
			}
			m[e[1]] = linkTo{l.percent, l.template}
		}
	}

	groups := make([]Group, 0, len(members))
	for _, ms := range members {
		ref := slices.MinFunc(ms, func(x, y int) int {
			nx, ny := &nodes[x], &nodes[y]
			return cmp.Or(-cmp.Compare(nx.links, ny.links), -cmp.Compare(nx.rec.Weight, ny.rec.Weight),
				strings.Compare(nx.rec.Path, ny.rec.Path))
		})
		g := Group{Reference: nodes[ref].member(1, "", false)}
		for _, m := range ms {
			if m == ref {
				continue
			}
			if l, ok := percentTo[m][ref]; ok {
				g.Members = append(g.Members, nodes[m].member(l.percent, "", l.template))
				continue
			}
			// Not linked to the reference: name the strongest link.
			best, bestP, bestT := -1, -1.0, false
			for o, l := range percentTo[m] {
				if p := l.percent; p > bestP || p == bestP && nodes[o].rec.Path < nodes[best].rec.Path {
					best, bestP, bestT = o, p, l.template
				}
			}
			g.Members = append(g.Members, nodes[m].member(0, nodes[best].rec.Path, bestT))
		}
		slices.SortFunc(g.Members, func(x, y GroupMember) int {
			return cmp.Or(-cmp.Compare(x.Percent, y.Percent), strings.Compare(x.Path, y.Path))
		})
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(x, y Group) int {
		return cmp.Or(-cmp.Compare(len(x.Members), len(y.Members)), strings.Compare(x.Reference.Path, y.Reference.Path))
	})
	return groups, nil
}

func (n *refNode) member(percent float64, via string, template bool) GroupMember {
	return GroupMember{FileRecord: n.rec, Percent: percent, Via: via, Copies: n.copies, Template: template}
}

// refNodes loads the records in the tree prefix (InTree) that visible
// (when not nil) accepts and folds identical files into nodes. nodeOf maps
// a content id to its node's index; contents none of whose files are
// considered are absent.
func (ix *Index) refNodes(r pebble.Reader, prefix string, visible func(*FileMeta) bool) ([]refNode, map[uint32]int, error) {
	type file struct {
		rec FileRecord
		cid uint32
	}
	var files []file
	lo := pathKey(strings.TrimRight(prefix, "/"))
	err := scan(r, lo, prefixEnd(lo), func(k, v []byte) error {
		id, err := decodeID(v)
		if err != nil {
			return fmt.Errorf("path %q: %w", k[1:], err)
		}
		rec, cid, found, err := readRecord(r, id)
		if err != nil {
			return err
		}
		if found && InTree(rec.Path, prefix) && (visible == nil || visible(&rec.FileMeta)) {
			files = append(files, file{rec, cid}) // in path order
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	type content struct {
		strong [32]byte
		size   int64
	}
	byContent := make(map[content]int)
	nodeOf := make(map[uint32]int, len(files))
	var nodes []refNode
	for _, f := range files {
		c := content{f.rec.Strong, f.rec.Summary.Size}
		if n, ok := byContent[c]; ok && f.rec.Strong != ([32]byte{}) {
			nodes[n].copies = append(nodes[n].copies, f.rec.Path) // files are in path order
			nodeOf[f.cid] = n
			continue
		}
		byContent[c] = len(nodes)
		nodeOf[f.cid] = len(nodes)
		nodes = append(nodes, refNode{rec: f.rec, parent: len(nodes)})
	}
	return nodes, nodeOf, nil
}

// refPairShare is what two nodes share: weight, and the number of keys.
type refPairShare struct {
	weight uint64
	n      uint32
}

// refPairShares scans the postings once and returns, for every pair of nodes
// that share a fingerprint key held by 2 to maxDF files, their shared
// weight and key count, keyed by a<<32|b with a < b; and, for every node holding keys
// held by more than maxDF files, the weight of those keys (its boilerplate,
// left out of its weight when containments are computed) by the highest
// level of the contents holding each.
//
// It also returns, per key held by more than maxDF files, its holders, in
// node order, for the template pairs (refTemplatePairs).
func (ix *Index) refPairShares(r pebble.Reader, maxDF int, nodeOf map[uint32]int) (shared map[uint64]refPairShare, common map[int]map[int]uint64, commonKeys [][]refHolder, err error) {
	type holder = refHolder
	shared = make(map[uint64]refPairShare)
	common = make(map[int]map[int]uint64)
	levels := make(map[uint32]int) // content id → level
	levelOf := func(cid uint32) (int, error) {
		if l, ok := levels[cid]; ok {
			return l, nil
		}
		var c FileRecord
		if _, err := readContent(r, cid, &c); err != nil {
			return 0, err
		}
		levels[cid] = int(c.Level)
		return int(c.Level), nil
	}
	ix.copiesMu.RLock()
	copies := maps.Clone(ix.copies)
	ix.copiesMu.RUnlock()
	var (
		cur     uint32 // the current fingerprint key
		n       int    // the files holding it, all of them: a posting counts its content's
		lmax    int    // the highest level of the contents holding it
		holders []holder
	)
	flush := func() {
		if n < 2 {
			return
		}
		slices.SortFunc(holders, func(x, y holder) int { return cmp.Compare(x.node, y.node) })
		holders = slices.CompactFunc(holders, func(x, y holder) bool { return x.node == y.node })
		if maxDF >= 0 && n > maxDF {
			commonKeys = append(commonKeys, slices.Clone(holders))
			for _, h := range holders {
				if common[h.node] == nil {
					common[h.node] = make(map[int]uint64)
				}
				common[h.node][lmax] += h.weight
			}
			return
		}
		for i, a := range holders {
			for _, b := range holders[i+1:] {
				// No overflow: shared weight is at most either file's weight.
				k := uint64(a.node)<<32 | uint64(b.node)
				ps := shared[k]
				ps.weight += min(a.weight, b.weight)
				ps.n++
				shared[k] = ps
			}
		}
	}
	started := false
	err = scanPostings(r, func(p postingEntry) error {
		if !started || p.key != cur {
			flush()
			cur, started = p.key, true
			n, lmax, holders = 0, 0, holders[:0]
		}
		l, err := levelOf(p.cid)
		if err != nil {
			return err
		}
		lmax = max(lmax, l)
		n++
		if c, ok := copies[p.cid]; ok {
			n += int(c) - 1
		}
		if node, ok := nodeOf[p.cid]; ok {
			holders = append(holders, holder{node, p.weight})
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	flush()
	return shared, common, commonKeys, nil
}

// refHolder is a node holding a fingerprint key, with its weight there.
type refHolder struct {
	node   int
	weight uint64
}

// refTemplatePairs returns the template pairs of Groups: for every key held
// by more than maxDF files, its template holder of the least content id
// (the hub) paired with each of its other template holders, their shared
// weight and key count, keyed by a<<32|b with a < b.
func refTemplatePairs(commonKeys [][]refHolder, template func(int) bool, cid func(int) uint32) map[uint64]refPairShare {
	pairs := make(map[uint64]refPairShare)
	for _, hs := range commonKeys {
		hs = slices.Clone(hs)
		slices.SortFunc(hs, func(x, y refHolder) int { return cmp.Compare(cid(x.node), cid(y.node)) })
		hub := -1
		var hw uint64
		for _, h := range hs {
			switch {
			case !template(h.node):
			case hub < 0:
				hub, hw = h.node, h.weight
			default:
				k := uint64(min(hub, h.node))<<32 | uint64(max(hub, h.node))
				ps := pairs[k]
				ps.weight += min(hw, h.weight)
				ps.n++
				pairs[k] = ps
			}
		}
	}
	return pairs
}

func refFind(nodes []refNode, i int) int {
	for nodes[i].parent != i {
		nodes[i].parent = nodes[nodes[i].parent].parent
		i = nodes[i].parent
	}
	return i
}

func refUnion(nodes []refNode, a, b int) {
	ra, rb := refFind(nodes, a), refFind(nodes, b)
	if ra != rb {
		nodes[max(ra, rb)].parent = min(ra, rb)
	}
}
