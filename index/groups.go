package index

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// withDefaults validates o and fills in its defaults. Errors wrap
// ErrBadQuery and name the field.
func (o GroupOptions) withDefaults() (GroupOptions, error) {
	if math.IsNaN(o.Threshold) || o.Threshold < 0 || o.Threshold > 1 {
		return o, fmt.Errorf("%w: threshold %v: want 0..1", ErrBadQuery, o.Threshold)
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.MaxDF == 0 {
		o.MaxDF = DefaultMaxDF
	}
	switch {
	case o.MinShared < 0:
		return o, fmt.Errorf("%w: min shared %d: want 0 (the default) or more", ErrBadQuery, o.MinShared)
	case o.MinShared == 0:
		o.MinShared = DefaultMinFeatures
	}
	return o, nil
}

// Groups finds all groups of similar files (Manber §4): it scans the
// postings in fingerprint-key order; for every fingerprint key held by 2
// to MaxDF files it adds min(weight in a, weight in b) to the shared
// weight of every pair of those files; the weight of keys held by more
// files (boilerplate) is left out of each holder's weight, as Similar
// leaves it out of the query's (template suppression, Forman et al. §4).
// Two files are compared at the higher of their levels, over their keys of
// that level or more (every key they share is), so a file's boilerplate
// leaves its weight there only as far as it is of that level or more. The
// level of a key is not stored: a key held by too many files is taken to
// be of the highest level of the files holding it (a file holds no key
// below its own level), except for what is more than the file's weight
// below the level of the comparison, which must be of that level or more.
// A containment is thus at most 1, and at most what Similar finds for a
// query of the file, which knows the levels of its fingerprints (key
// collisions aside, doc.go); it is less only when boilerplate of a level
// is held by no file of that level. A pair is linked only when it shares
// at least MinShared fingerprint keys.
//
// Template files (doc.go) are the exception: a file whose keys held by
// more than MaxDF files are most of its weight at a level is judged there
// on all of its weight, as a query of it is, and the keys it shares with
// other template files through them link it to its family: for each such
// key, its first template holder (the hub) is paired with each other
// template holder, and a pair's common weight so summed counts for a file
// when it is more than TemplateShare of the file's common weight (GroupLink
// and GroupMember say Template). A family of n files thus costs about n pairs, not n², and is
// one group; a file with more content of its own than boilerplate is
// linked by its own keys only. Identical files
// (equal strong hash and size) are folded into one node first, so copies
// do not multiply links; they are listed under the member's Copies. Two
// nodes are linked when either contains at least Threshold of the other
// (and, with SameType, they have one type), and linked nodes are merged
// into groups with union-find (Forman et al. §3), so a group can hold
// files that are not similar to one another directly. Identical files with
// nothing else similar form no group: Dupes reports them.
//
// Each group's reference is the member with the most links (then the larger
// weight, then the first path). With GroupOptions.Links, each group also
// lists its links, with both containments (Group.Links). The output is deterministic: groups by
// size, descending, then by reference path; members by Percent, descending,
// then by path. Groups sees one consistent state of the index.
//
// Memory. Groups works on content ids (doc.go), not on records: it keeps
// about 24 bytes per content considered, a byte per content (its level)
// and a bit per file id, 4 bytes per level between its own and the top for
// each file sampled below the top level that holds boilerplate, the pairs
// of one pass, the links, and the answer (EachGroup, instead of the
// answer, a sort key per group and one group at a time). It reads no
// record but the file records under the prefix (none without a prefix or
// Visible), every content record once for its level (with levels and
// MaxDF set), those of the pairs it judges, and the records of the files
// it lists.
// The pairs that share a fingerprint are hash-partitioned (Forman et al.):
// a pass over the postings holds about groupPairBudget of them at most,
// and when a pass would hold more, it keeps half of its partition and
// leaves the other half to a later pass, so an index whose files share
// fingerprints with very many others is read several times rather than
// held in memory at once.
//
// Groups stops when ctx is done, with an error wrapping ctx's (see
// cancel.go).
func (ix *Index) Groups(ctx context.Context, opts GroupOptions) ([]Group, error) {
	var gs []Group
	err := ix.groups(ctx, opts, func(g Group) error {
		gs = append(gs, g)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index.Groups: %w", err)
	}
	return gs, nil
}

// EachGroup finds the groups Groups returns and calls fn with each, in
// Groups' order, instead of returning them: it holds the sort keys of the
// groups (about 40 bytes and the reference's path each) and one group's
// files at a time, not the answer. fn is called on the caller's goroutine
// and owns the Group it is given. EachGroup holds one view of the index
// (a Pebble snapshot) until it returns, so a slow fn keeps that view's
// files on disk and delays Close. When fn returns an error, EachGroup
// stops and returns it as is; its own errors are wrapped with
// "index.EachGroup". It stops when ctx is done, between groups as while
// it works out the first, with an error wrapping ctx's.
func (ix *Index) EachGroup(ctx context.Context, opts GroupOptions, fn func(Group) error) error {
	var fnErr error
	err := ix.groups(ctx, opts, func(g Group) error {
		if err := fn(g); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("index.EachGroup: %w", err)
	}
	return nil
}

// groupPairBudget is the most pairs of nodes sharing a fingerprint that a
// pass of Groups holds (a little more, by the pairs of one fingerprint
// key): about 16–32 MB of map.
var groupPairBudget = 1 << 19

// lastGroupPasses is the number of passes over the postings the last
// Groups made, for tests.
var lastGroupPasses atomic.Int32

func (ix *Index) groups(ctx context.Context, opts GroupOptions, fn func(Group) error) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ix.acquire(); err != nil {
		return err
	}
	defer ix.release()
	snap := ix.db.NewSnapshot()
	defer snap.Close()

	g := &grouping{r: snap, poll: poller{ctx: ctx}, opts: opts, budget: groupPairBudget, top: min(ix.params.Bits, maxLevel)}
	// Files have levels below the top only with the manber scheme and a
	// MinBits below Bits; their boilerplate only with MaxDF set.
	g.leveled = ix.params.MinBits < g.top && opts.MaxDF >= 0
	if err := g.selectContents(); err != nil {
		return err
	}
	if g.leveled {
		if err := g.readLevels(); err != nil {
			return err
		}
	}
	if err := g.linkAll(); err != nil {
		return err
	}
	return g.emit(fn)
}

// grouping is the state of one Groups run. A node is named by the dense
// number (the rank among the contents considered, in content id order) of
// its content; when contents of one strong hash and size are folded into
// one node, by the number of the one whose first file comes first.
type grouping struct {
	r      pebble.Reader
	poll   poller // the run's context, looked at by scan and readContent
	opts   GroupOptions
	budget int

	// filtered: a prefix or Visible leaves files out; files holds the ids of
	// the files considered then.
	filtered bool
	files    idSet
	contents idSet    // the contents of the files considered
	cids     []uint32 // node number → content id
	multi    idSet    // the contents held by two or more files, all of them
	nfiles   []uint32 // multi's rank → the number of files holding it
	// alias maps the number of a content folded into another node to that
	// node's; folded holds the node's other contents. Both are empty unless
	// two contents have one strong hash and size.
	alias  map[uint32]uint32
	folded map[uint32][]uint32

	// Levels (leveled: the scheme has several, and MaxDF is set): levels
	// holds the level of every content, by its rank in all.
	top     int
	leveled bool
	all     idSet
	levels  []uint8

	common []uint64 // node → weight of its keys held by more than MaxDF files
	// tmpl marks the template nodes (bit per node): those whose keys held
	// by more than MaxDF files are more than TemplateShare of their weight.
	tmpl  []uint64
	ntmpl int
	// The weight of a node's boilerplate whose level is known only to be
	// below the top: below[belowAt[d]-1+m-L] is that of its keys held by
	// more than MaxDF files of which the highest level is m, for m from the
	// node's level L to top-1 (belowAt[d] is 0 when there is none).
	belowAt []uint32
	below   []uint32
	parent  []uint32 // union-find
	nlinks  []uint32
	links   []groupLink
}

// groupLink links nodes a and b: ab is how much of a b contains, ba how
// much of b a contains.
type groupLink struct {
	a, b   uint32
	ab, ba float64
	// template: the link counts the keys held by more than MaxDF files
	// that its two template nodes share (see linkTemplates).
	template bool
}

// percent is the link's strength: the larger containment.
func (l groupLink) percent() float64 { return max(l.ab, l.ba) }

// scan is scan on the run's view, stopping when its context is done.
func (g *grouping) scan(lo, hi []byte, fn func(k, v []byte) error) error {
	return scan(g.r, lo, hi, func(k, v []byte) error {
		if err := g.poll.tick(); err != nil {
			return err
		}
		return fn(k, v)
	})
}

// readContent is readContent on the run's view, failing when its context
// is done.
func (g *grouping) readContent(cid uint32, rec *FileRecord) (bool, error) {
	if err := g.poll.tick(); err != nil {
		return false, err
	}
	return readContent(g.r, cid, rec)
}

// fileOK reports whether the file with id is considered.
func (g *grouping) fileOK(id uint32) bool { return !g.filtered || g.files.has(id) }

// node returns the node of content cid, and whether it is considered.
func (g *grouping) node(cid uint32) (uint32, bool) {
	d, ok := g.contents.rank(cid)
	if ok && len(g.alias) > 0 {
		if a, folded := g.alias[d]; folded {
			d = a
		}
	}
	return d, ok
}

// filesOf returns the number of files holding content cid.
func (g *grouping) filesOf(cid uint32) int {
	if i, ok := g.multi.rank(cid); ok {
		return int(g.nfiles[i])
	}
	return 1
}

// selectContents finds the files and contents considered, counts the files
// of every content, and folds contents of one strong hash and size.
func (g *grouping) selectContents() error {
	prefix := strings.TrimRight(g.opts.PathPrefix, "/")
	visible := g.opts.Visible
	g.filtered = prefix != "" || visible != nil
	if g.filtered {
		keep := func(id, cid uint32, meta *FileMeta) {
			if InTree(meta.Path, g.opts.PathPrefix) && (visible == nil || visible(meta)) {
				g.files.add(id)
				g.contents.add(cid)
			}
		}
		var err error
		if prefix == "" {
			// Every file: the records in id order, without a read per file.
			lo, hi := keyspace(prefixRecord)
			err = g.scan(lo, hi, func(k, v []byte) error {
				id, err := parseIDKey(k, prefixRecord)
				if err != nil {
					return err
				}
				meta, cid, err := decodeRecord(v)
				if err != nil {
					return fmt.Errorf("file id %d: %w", id, err)
				}
				keep(id, cid, &meta)
				return nil
			})
		} else {
			lo := pathKey(prefix)
			err = g.scan(lo, prefixEnd(lo), func(k, v []byte) error {
				id, err := decodeID(v)
				if err != nil {
					return fmt.Errorf("path %q: %w", k[1:], err)
				}
				meta, cid, found, err := readMeta(g.r, id)
				if err != nil {
					return err
				}
				if found {
					keep(id, cid, &meta)
				}
				return nil
			})
		}
		if err != nil {
			return err
		}
	}

	// The copy keys, in content id order: the number of files of every
	// content (the document frequency of a key counts them).
	type count struct{ cid, n uint32 }
	var (
		counts []count
		cur, n uint32
	)
	lo, hi := keyspace(prefixCopy)
	err := g.scan(lo, hi, func(k, _ []byte) error {
		cid, _, err := parseCopyKey(k)
		if err != nil {
			return err
		}
		if n > 0 && cid != cur {
			if n >= 2 {
				counts = append(counts, count{cur, n})
			}
			n = 0
		}
		if n == 0 {
			cur = cid
			if !g.filtered {
				g.contents.add(cid)
			}
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	if n >= 2 {
		counts = append(counts, count{cur, n})
	}
	g.nfiles = make([]uint32, len(counts))
	for i, c := range counts {
		g.multi.add(c.cid)
		g.nfiles[i] = c.n
	}
	g.multi.freeze()

	// The hash keys, in runs of contents whose strong hashes begin alike:
	// the strong hashes held by several contents considered.
	type foldMember struct {
		cid  uint32
		size int64
	}
	type foldRun struct {
		strong  [32]byte
		members []foldMember
	}
	var (
		runs []foldRun
		run  []uint32 // the contents considered of one run
		head [hashBytes]byte
	)
	endRun := func() error {
		if len(run) < 2 {
			return nil
		}
		byStrong := make(map[[32]byte][]foldMember)
		for _, cid := range run {
			var c FileRecord
			found, err := g.readContent(cid, &c)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("%w: a hash key names content %d, which has no record", ErrCorrupt, cid)
			}
			byStrong[c.Strong] = append(byStrong[c.Strong], foldMember{cid, c.Summary.Size})
		}
		for strong, ms := range byStrong {
			if len(ms) >= 2 {
				runs = append(runs, foldRun{strong, ms})
			}
		}
		return nil
	}
	started := false
	lo, hi = keyspace(prefixHash)
	err = g.scan(lo, hi, func(k, _ []byte) error {
		h, cid, err := parseHashKey(k)
		if err != nil {
			return err
		}
		if !started || h != head {
			if err := endRun(); err != nil {
				return err
			}
			head, run, started = h, run[:0], true
		}
		if g.contents.has(cid) {
			run = append(run, cid)
		}
		return nil
	})
	if err == nil {
		err = endRun()
	}
	if err != nil {
		return err
	}
	g.contents.freeze()
	g.cids = make([]uint32, 0, g.contents.len())
	g.contents.each(func(cid uint32) { g.cids = append(g.cids, cid) })

	// Fold the contents of one strong hash and size into the node of the
	// one whose first file (in path order) comes first, as identical files
	// are folded.
	for _, fr := range runs {
		type cand struct {
			cid   uint32
			size  int64
			first string
		}
		var cs []cand
		for _, m := range fr.members {
			fs, err := g.filesOfContent(m.cid)
			if err != nil {
				return err
			}
			if len(fs) > 0 {
				cs = append(cs, cand{m.cid, m.size, fs[0].meta.Path})
			}
		}
		slices.SortFunc(cs, func(x, y cand) int { return cmp.Or(cmp.Compare(x.size, y.size), strings.Compare(x.first, y.first)) })
		for i := 0; i < len(cs); {
			j := i + 1
			for j < len(cs) && cs[j].size == cs[i].size {
				j++
			}
			for _, c := range cs[i+1 : j] {
				if g.alias == nil {
					g.alias, g.folded = make(map[uint32]uint32), make(map[uint32][]uint32)
				}
				rep, _ := g.contents.rank(cs[i].cid)
				d, _ := g.contents.rank(c.cid)
				g.alias[d] = rep
				g.folded[rep] = append(g.folded[rep], c.cid)
			}
			i = j
		}
	}
	return nil
}

// readLevels reads the level of every content from its record, in
// content id order.
func (g *grouping) readLevels() error {
	g.levels = make([]uint8, 0, g.contents.len()) // all of them, unless filtered
	var c FileRecord
	lo, hi := keyspace(prefixContent)
	err := g.scan(lo, hi, func(k, v []byte) error {
		cid, err := parseIDKey(k, prefixContent)
		if err != nil {
			return err
		}
		if _, err := decodeContent(v, &c); err != nil {
			return fmt.Errorf("content %d: %w", cid, err)
		}
		g.all.add(cid)
		g.levels = append(g.levels, c.Level)
		return nil
	})
	g.all.freeze()
	return err
}

// levelOf returns the level of content cid: 0 when levels are not read or
// it has no record (which only a corrupt index lacks).
func (g *grouping) levelOf(cid uint32) uint8 {
	if g.levels == nil {
		return 0
	}
	if i, ok := g.all.rank(cid); ok {
		return g.levels[i]
	}
	return 0
}

// addBelow adds w to the boilerplate of node d whose level is known only
// to be m or more, m below the top.
func (g *grouping) addBelow(d uint32, m uint8, w uint64) {
	l := g.levelOf(g.cids[d])
	if m < l {
		return // a key the node holds is of its level or more
	}
	if g.belowAt == nil {
		g.belowAt = make([]uint32, len(g.cids))
	}
	if g.belowAt[d] == 0 {
		g.belowAt[d] = uint32(len(g.below)) + 1
		g.below = append(g.below, make([]uint32, g.top-int(l))...)
	}
	i := g.belowAt[d] - 1 + uint32(m-l)
	// Saturating: a file below the top level is small, and its weight with
	// the manber scheme is the number of its windows kept.
	g.below[i] = uint32(min(uint64(g.below[i])+w, math.MaxUint32))
}

// belowWeight returns the weight of node d's boilerplate whose level is
// known only to be below lvl: that of its keys held by more than MaxDF
// files of which the highest level is below lvl. l is the node's level.
func (g *grouping) belowWeight(d uint32, l uint8, lvl int) uint64 {
	if g.belowAt == nil || g.belowAt[d] == 0 {
		return 0
	}
	var w uint64
	at := g.belowAt[d] - 1
	for m := int(l); m < lvl && m < g.top; m++ {
		w += uint64(g.below[at+uint32(m-int(l))])
	}
	return w
}

// consideredFile is a file considered, with its id.
type consideredFile struct {
	id   uint32
	meta FileMeta
}

// filesOfContent returns the files considered that hold content cid, in
// path order.
func (g *grouping) filesOfContent(cid uint32) ([]consideredFile, error) {
	var fs []consideredFile
	lo := copyPrefix(nil, cid)
	err := g.scan(lo, prefixEnd(lo), func(k, _ []byte) error {
		_, id, err := parseCopyKey(k)
		if err != nil {
			return err
		}
		if !g.fileOK(id) {
			return nil
		}
		meta, _, found, err := readMeta(g.r, id)
		if err != nil {
			return err
		}
		if found {
			fs = append(fs, consideredFile{id, meta})
		}
		return nil
	})
	slices.SortFunc(fs, func(a, b consideredFile) int { return strings.Compare(a.meta.Path, b.meta.Path) })
	return fs, err
}

// partition names the pairs of nodes whose key a<<32|b (a < b) mixes to
// residue in its low bits bits.
type partition struct {
	bits    uint
	residue uint64
}

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
	for len(todo) > 0 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		shared.clear()
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

// isTemplate reports whether node d is a template node.
func (g *grouping) isTemplate(d uint32) bool {
	return g.tmpl != nil && g.tmpl[d/64]&(1<<(d%64)) != 0
}

// findTemplates marks the template nodes, once the first pass has summed
// every node's common weight: those whose keys held by more than MaxDF
// files weigh more than TemplateShare of their weight, as a query of one
// is a template query (Similar). Such a file is mostly what many files
// share (a member of a family made from one template or form): the keys
// that would be boilerplate in another file are its content, and it is
// judged on all of its weight, and linked through them to the other
// template nodes holding them (linkTemplates). A file with more content
// of its own than of common keys is not: its licence header or
// boilerplate links it to nothing. It reads the content records of the
// nodes holding common keys.
func (g *grouping) findTemplates() error {
	for d, c := range g.common {
		if c == 0 {
			continue
		}
		var rec FileRecord
		found, err := g.readContent(g.cids[d], &rec)
		if err != nil {
			return err
		}
		if !found || !g.templateAt(rec.Weight, c, rec.Features, 2) {
			continue
		}
		if g.tmpl == nil {
			g.tmpl = make([]uint64, (len(g.cids)+63)/64)
		}
		g.tmpl[d/64] |= 1 << (d % 64)
		g.ntmpl++
	}
	return nil
}

// linkTemplates judges the pairs of template nodes of a template pass:
// their shared weight is that of the common keys they share through a
// hub. It adds to the link the passes over the other keys made, when
// there is one (both nodes are judged on all of their weight, so the two
// add up); else it links the pair when it passes, as link does. A pair
// that shares both kinds of keys but passed on neither alone is judged on
// its common keys only: a template link's percentages are at most what a
// query of either finds.
func (g *grouping) linkTemplates(shared *pairTable) error {
	linked := make(map[uint64]int)
	for i, l := range g.links {
		if g.isTemplate(l.a) && g.isTemplate(l.b) {
			linked[uint64(l.a)<<32|uint64(l.b)] = i
		}
	}
	// How much of node d, compared at level l, the common weight it
	// shares is: none unless d is a template file there and the other
	// holds more than TemplateShare of its common keys (of its family, as
	// Similar judges a candidate).
	ratio := func(d uint32, w *nodeWeights, l int, shared uint64) float64 {
		wl, common := g.commonAt(d, w, l)
		if !g.templateAt(wl, common, w.features, 2) || float64(shared) <= TemplateShare*float64(common) {
			return 0 // not of d's family: judged on its distinctive part
		}
		return fingerprint.Ratio(shared, wl)
	}
	return g.eachPair(shared, func(k uint64, a, b uint32, wa, wb *nodeWeights, l int, weight uint64) {
		ab, ba := ratio(a, wa, l, weight), ratio(b, wb, l, weight)
		if i, ok := linked[k]; ok {
			lk := &g.links[i]
			lk.ab, lk.ba, lk.template = min(1, lk.ab+ab), min(1, lk.ba+ba), true
			return
		}
		ab, ba = min(1, ab), min(1, ba)
		if max(ab, ba) < g.opts.Threshold {
			return
		}
		g.addLink(groupLink{a, b, ab, ba, true})
	})
}

// pairShare is what two nodes share: weight, and the number of keys.
type pairShare struct {
	weight uint64
	n      uint32
}

// pairTable holds the pairShares of pairs of nodes, keyed by a<<32|b.
// Most fit in one word, 40 bits of weight and 24 of count: a pair that
// outgrows it moves to big.
type pairTable struct {
	packed map[uint64]uint64
	big    map[uint64]pairShare
}

const (
	pairCountBits = 24
	pairCountMax  = 1<<pairCountBits - 1
	pairWeightMax = 1<<(64-pairCountBits) - 1
)

func newPairTable() *pairTable {
	return &pairTable{packed: make(map[uint64]uint64), big: make(map[uint64]pairShare)}
}

func (t *pairTable) len() int { return len(t.packed) + len(t.big) }

func (t *pairTable) clear() {
	clear(t.packed)
	clear(t.big)
}

// add adds weight w and one key to pair k. No overflow of the weight:
// shared weight is at most either file's weight.
func (t *pairTable) add(k, w uint64) {
	if ps, ok := t.big[k]; ok {
		ps.weight += w
		ps.n++
		t.big[k] = ps
		return
	}
	v := t.packed[k]
	weight, n := v>>pairCountBits+w, v&pairCountMax+1
	if weight > pairWeightMax || n > pairCountMax {
		delete(t.packed, k)
		t.big[k] = pairShare{weight, uint32(n)}
		return
	}
	t.packed[k] = weight<<pairCountBits | n
}

// each calls fn for every pair.
func (t *pairTable) each(fn func(k uint64, ps pairShare)) {
	for k, v := range t.packed {
		fn(k, pairShare{v >> pairCountBits, uint32(v & pairCountMax)})
	}
	for k, ps := range t.big {
		fn(k, ps)
	}
}

// deleteFunc deletes the pairs for whose keys del returns true.
func (t *pairTable) deleteFunc(del func(k uint64) bool) {
	maps.DeleteFunc(t.packed, func(k, _ uint64) bool { return del(k) })
	maps.DeleteFunc(t.big, func(k uint64, _ pairShare) bool { return del(k) })
}

// mixPair spreads a pair key over 64 bits (murmur3's fmix64).
func mixPair(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// pairShares scans the postings once and puts in shared, for every pair of
// nodes of partition p that share a fingerprint key held by 2 to MaxDF
// files, their shared weight and key count, keyed by a<<32|b with a < b. When the
// pairs outgrow the budget, it narrows p, and returns the partitions it
// left out. With first, it also sums, for every node holding keys held by
// more than MaxDF files, the weight of those keys (its boilerplate, left
// out of its weight when containments are computed) into g.common, and
// that of those whose level is known only to be below the top into
// g.below, by the highest level of the files holding each.
//
// With template (and not first), it reads only the keys held by more than
// MaxDF files, and puts in shared, for every such key, the pairs of its
// first template holder (in node order), the key's hub, with each of its
// other template holders: a star per key, so a family of n files that
// share their common keys adds about n pairs however many keys they share,
// and a hub's pairs sum all the common weight it shares with each.
func (g *grouping) pairShares(shared *pairTable, p partition, first, template bool) ([]partition, error) {
	type holder struct {
		node   uint32
		weight uint64
	}
	maxDF := g.opts.MaxDF
	var (
		more    []partition
		mask    = uint64(1)<<p.bits - 1
		cur     uint32 // the current fingerprint key
		started bool   // whether cur is set
		n       int    // the files holding it, all of them: a posting counts its content's
		lmax    uint8  // the highest level of the contents holding it (with first)
		holders []holder
	)
	flush := func() error {
		if n < 2 || len(holders) == 0 {
			return nil
		}
		slices.SortStableFunc(holders, func(x, y holder) int { return cmp.Compare(x.node, y.node) })
		holders = slices.CompactFunc(holders, func(x, y holder) bool { return x.node == y.node })
		common := maxDF >= 0 && n > maxDF
		switch {
		case template && !common:
			return nil
		case template:
			hub, started := holder{}, false
			for _, h := range holders {
				if !g.isTemplate(h.node) {
					continue
				}
				if !started {
					hub, started = h, true
					continue
				}
				k := uint64(hub.node)<<32 | uint64(h.node)
				if mixPair(k)&mask == p.residue {
					shared.add(k, min(hub.weight, h.weight))
				}
			}
		case common:
			if first {
				for _, h := range holders {
					g.common[h.node] += h.weight
					if g.leveled && int(lmax) < g.top {
						g.addBelow(h.node, lmax, h.weight)
					}
				}
			}
			return nil
		default:
			for i, a := range holders {
				if err := g.poll.tickN(len(holders) - i); err != nil {
					return err
				}
				for _, b := range holders[i+1:] {
					k := uint64(a.node)<<32 | uint64(b.node)
					if mixPair(k)&mask != p.residue {
						continue
					}
					shared.add(k, min(a.weight, b.weight))
				}
			}
		}
		for shared.len() > g.budget && p.bits < 63 {
			// Keep the half of the partition whose next bit is 0; the
			// other half is read again later.
			more = append(more, partition{p.bits + 1, p.residue | 1<<p.bits})
			p.bits++
			mask = uint64(1)<<p.bits - 1
			shared.deleteFunc(func(k uint64) bool { return mixPair(k)&mask != p.residue })
		}
		return nil
	}
	err := scanPostings(g.r, func(p postingEntry) error {
		if err := g.poll.tick(); err != nil {
			return err
		}
		if !started || p.key != cur {
			if err := flush(); err != nil {
				return err
			}
			cur, started = p.key, true
			n, lmax, holders = 0, 0, holders[:0]
		}
		n += g.filesOf(p.cid)
		if first && g.leveled {
			lmax = max(lmax, g.levelOf(p.cid))
		}
		if node, ok := g.node(p.cid); ok {
			holders = append(holders, holder{node, p.weight})
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, err
	}
	return more, nil
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

// templateAt reports whether a node of weight wl at a level, common of it
// boilerplate, with n features in all, is compared there as a template
// file: on all of its weight, as a query of it at that level is
// (Similar), when the boilerplate is more than templateCut(·, z) of it.
// Its features of that level or more, which a query counts, are taken to
// be at most n and at most wl (each weighs 1 or more), so that with z = 1
// a query of a file is never judged a template where Groups does not
// judge it one (a link is at most what a query finds). Links through
// common keys take z = 2 (findTemplates).
func (g *grouping) templateAt(wl, common uint64, n uint32, z float64) bool {
	return float64(common) > templateCut(int(min(uint64(n), wl)), z)*float64(wl)
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

// groupNode is a node of the group being listed: its first file (in path
// order) and the paths of the others.
type groupNode struct {
	d      uint32
	rec    FileRecord
	copies []string
	// Of the node's links: the percentage to the reference, if linked to
	// it, and the strongest (then the one whose path comes first).
	toRef  float64
	linked bool
	best   int
	bestP  float64
	// Whether those links are template links.
	refTmpl, bestTmpl bool
}

func (n *groupNode) member(percent float64, via string, template bool) GroupMember {
	return GroupMember{FileRecord: n.rec, Percent: percent, Via: via, Copies: n.copies, Template: template}
}

// groupKey is what ordering a group and choosing its reference needs: its
// nodes, its reference and the reference's first path and weight.
type groupKey struct {
	nodes  uint32
	ref    uint32
	weight uint64
	path   string
}

// emit lists the groups of the nodes that were linked, in order, one at a
// time. It holds the groups' sort keys and where each group's nodes and
// links are, not their files: it reads the nodes' files once to choose
// each group's reference and order the groups, and again, a group at a
// time, to list them.
func (g *grouping) emit(fn func(Group) error) error {
	// The groups, in the order their first nodes come, and the number of
	// the group of every linked node.
	groupOf := make(map[uint32]uint32) // union-find root → group
	var keys []groupKey
	for d, nl := range g.nlinks {
		if nl == 0 {
			continue
		}
		r := g.find(uint32(d))
		gi, ok := groupOf[r]
		if !ok {
			gi = uint32(len(keys))
			groupOf[r] = gi
			keys = append(keys, groupKey{ref: uint32(d)})
		}
		keys[gi].nodes++
	}
	// Each group's reference: the node with the most links, then the
	// larger weight, then the first path. The most links and the weight
	// first, from the content records; then the first path, read only for
	// the nodes that tie for both, most often one per group.
	first := make([]bool, len(keys))
	for d, nl := range g.nlinks {
		if nl == 0 {
			continue
		}
		w, err := g.nodeWeight(uint32(d))
		if err != nil {
			return err
		}
		gi := groupOf[g.find(uint32(d))]
		k := &keys[gi]
		if !first[gi] || cmp.Or(-cmp.Compare(nl, g.nlinks[k.ref]), -cmp.Compare(w, k.weight)) < 0 {
			first[gi] = true
			k.ref, k.weight = uint32(d), w
		}
	}
	clear(first) // now: the group's path is read
	for d, nl := range g.nlinks {
		if nl == 0 {
			continue
		}
		gi := groupOf[g.find(uint32(d))]
		k := &keys[gi]
		if nl != g.nlinks[k.ref] {
			continue
		}
		if w, err := g.nodeWeight(uint32(d)); err != nil {
			return err
		} else if w != k.weight {
			continue
		}
		n, err := g.loadNode(uint32(d))
		if err != nil {
			return err
		}
		if !first[gi] || n.rec.Path < k.path {
			first[gi] = true
			k.ref, k.path = uint32(d), n.rec.Path
		}
	}
	first = nil

	// Where each group's nodes and links are: nodes[start[gi]:start[gi+1]],
	// links[lstart[gi]:lstart[gi+1]], in node order and link order.
	start := make([]uint32, len(keys)+1)
	lstart := make([]uint32, len(keys)+1)
	for gi, k := range keys {
		start[gi+1] = start[gi] + k.nodes
	}
	nodes := make([]uint32, start[len(keys)])
	fill := slices.Clone(start[:len(keys)])
	for d, nl := range g.nlinks {
		if nl > 0 {
			gi := groupOf[g.find(uint32(d))]
			nodes[fill[gi]] = uint32(d)
			fill[gi]++
		}
	}
	for _, l := range g.links {
		lstart[groupOf[g.find(l.a)]+1]++
	}
	for gi := range keys {
		lstart[gi+1] += lstart[gi]
	}
	links := make([]groupLink, len(g.links))
	copy(fill, lstart[:len(keys)])
	for _, l := range g.links {
		gi := groupOf[g.find(l.a)]
		links[fill[gi]] = l
		fill[gi]++
	}
	g.links, fill, groupOf = nil, nil, nil

	order := make([]uint32, len(keys))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(x, y uint32) int {
		return cmp.Or(-cmp.Compare(keys[x].nodes, keys[y].nodes), strings.Compare(keys[x].path, keys[y].path))
	})
	for _, gi := range order {
		if err := g.poll.now(); err != nil {
			return err
		}
		grp, err := g.group(nodes[start[gi]:start[gi+1]], links[lstart[gi]:lstart[gi+1]], keys[gi].ref)
		if err != nil {
			return err
		}
		keys[gi].path = "" // not needed any more
		if err := fn(grp); err != nil {
			return err
		}
	}
	return nil
}

// group reads the files of the nodes of one group and builds it: ds are
// its nodes, in node order, links its links, and ref its reference.
func (g *grouping) group(ds []uint32, links []groupLink, ref uint32) (Group, error) {
	nodes := make([]groupNode, len(ds))
	r := -1
	for i, d := range ds {
		n, err := g.loadNode(d)
		if err != nil {
			return Group{}, err
		}
		n.best, n.bestP = -1, -1
		nodes[i] = n
		if d == ref {
			r = i
		}
	}
	at := func(d uint32) int { i, _ := slices.BinarySearch(ds, d); return i }
	for _, l := range links {
		a, b := at(l.a), at(l.b)
		for _, e := range [2][2]int{{a, b}, {b, a}} {
			m, o := &nodes[e[0]], e[1]
			p := l.percent()
			if o == r {
				m.toRef, m.linked, m.refTmpl = p, true, l.template
			}
			if p > m.bestP || p == m.bestP && nodes[o].rec.Path < nodes[m.best].rec.Path {
				m.best, m.bestP, m.bestTmpl = o, p, l.template
			}
		}
	}
	// The members, by percentage, then path; one not linked to the
	// reference (toRef 0) names its strongest link.
	order := make([]int, 0, len(nodes)-1)
	for i := range nodes {
		if i != r {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(-cmp.Compare(nodes[x].toRef, nodes[y].toRef), strings.Compare(nodes[x].rec.Path, nodes[y].rec.Path))
	})
	grp := Group{Reference: nodes[r].member(1, "", false), Members: make([]GroupMember, 0, len(order))}
	for _, i := range order {
		n := &nodes[i]
		if n.linked {
			grp.Members = append(grp.Members, n.member(n.toRef, "", n.refTmpl))
		} else {
			grp.Members = append(grp.Members, n.member(0, nodes[n.best].rec.Path, n.bestTmpl))
		}
	}
	if g.opts.Links {
		place := make([]int, len(nodes)) // node → its place in the group; the reference's is 0
		for p, i := range order {
			place[i] = p + 1
		}
		grp.Links = make([]GroupLink, 0, len(links))
		for _, l := range links {
			gl := GroupLink{A: place[at(l.a)], B: place[at(l.b)], AInB: l.ab, BInA: l.ba}
			if gl.A > gl.B {
				gl.A, gl.B, gl.AInB, gl.BInA = gl.B, gl.A, gl.BInA, gl.AInB
			}
			grp.Links = append(grp.Links, gl)
		}
		slices.SortFunc(grp.Links, func(x, y GroupLink) int { return cmp.Or(cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B)) })
	}
	return grp, nil
}

// nodeWeight returns the weight of node d's first file (in path order),
// which loadNode would put in its record: its content's, read alone,
// unless the node folds several contents.
func (g *grouping) nodeWeight(d uint32) (uint64, error) {
	if len(g.folded[d]) > 0 {
		n, err := g.loadNode(d)
		return n.rec.Weight, err
	}
	var c FileRecord
	found, err := g.readContent(g.cids[d], &c)
	if err == nil && !found {
		err = fmt.Errorf("%w: a posting names content %d, which has no record", ErrCorrupt, g.cids[d])
	}
	return c.Weight, err
}

// loadNode reads the files considered of node d: its first file's record,
// with its content's, and the paths of the others.
func (g *grouping) loadNode(d uint32) (groupNode, error) {
	n := groupNode{d: d}
	cids := append([]uint32{g.cids[d]}, g.folded[d]...)
	type file struct {
		consideredFile
		cid uint32
	}
	var fs []file
	for _, cid := range cids {
		var c FileRecord
		found, err := g.readContent(cid, &c)
		if err != nil {
			return n, err
		}
		if !found {
			return n, fmt.Errorf("%w: a posting names content %d, which has no record", ErrCorrupt, cid)
		}
		metas, err := g.filesOfContent(cid)
		if err != nil {
			return n, err
		}
		for _, m := range metas {
			fs = append(fs, file{m, cid})
		}
	}
	if len(fs) == 0 {
		return n, fmt.Errorf("%w: content %d has no file", ErrCorrupt, g.cids[d])
	}
	slices.SortFunc(fs, func(a, b file) int { return strings.Compare(a.meta.Path, b.meta.Path) })
	n.rec = FileRecord{ID: fs[0].id, FileMeta: fs[0].meta}
	found, err := g.readContent(fs[0].cid, &n.rec)
	if err == nil && !found {
		err = fmt.Errorf("%w: content %d has no record", ErrCorrupt, fs[0].cid)
	}
	if err != nil {
		return n, err
	}
	for _, f := range fs[1:] {
		n.copies = append(n.copies, f.meta.Path)
	}
	return n, nil
}
