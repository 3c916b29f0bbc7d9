package index

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Groups, the all-against-all run: its entry points (Groups, EachGroup),
// its options' defaults, and the state of one run (grouping) with the
// reads every pass shares. A run takes the steps of groups, each in a
// file of its own: selectContents (groups_select.go), readLevels
// (groups_levels.go), linkAll (groups_links.go), whose passes over the
// postings are in groups_pairs.go and whose template pass is in
// groups_templates.go, and emit (groups_emit.go).

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
	pr := opts.Progress
	pr.Begin("selecting the files")
	if err := g.selectContents(); err != nil {
		return err
	}
	if g.leveled {
		pr.Begin("reading the files' levels")
		if err := g.readLevels(); err != nil {
			return err
		}
	}
	if err := g.linkAll(); err != nil {
		return err
	}
	pr.Begin("ordering the groups")
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
