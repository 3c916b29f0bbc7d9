package index

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// DefaultSimiWindow is the default SimiGroupOptions.MaxWindow: at about
// 100 bytes a content, 4 MB of window at most.
const DefaultSimiWindow = 40000

// SimiGroupOptions are the options of SimiGroups.
type SimiGroupOptions struct {
	// Tolerances are SimiFind's; zero fields mean the defaults.
	Tolerances fingerprint.Tolerances
	// MaxWindow bounds the contents the sweep holds at once (the window):
	// each content is compared with at most MaxWindow contents before it
	// in key order, and pairs farther apart are not compared (counted in
	// SimiGroupStats.Overflow). 0 means DefaultSimiWindow.
	MaxWindow int
	// PathPrefix keeps only files in this directory tree (InTree); ""
	// keeps all.
	PathPrefix string
	// Visible, when set, keeps only files whose record it accepts, as if
	// the others were not indexed.
	Visible func(m *FileMeta) bool
}

// SimiGroup is a group SimiGroups found: files linked by chains of
// SimiFind-similar pairs.
type SimiGroup struct {
	// Members are the group's files: first the file of the content first
	// in key order (the one the others are measured against), then by sum
	// distance to it, then by path. Copies of one content are all listed.
	Members []SimiMember
}

// SimiMember is a file of a SimiGroup with its distances to the group's
// first member.
type SimiMember struct {
	FileRecord
	// SumDistance and KeyDistance are to the first member; a member
	// linked through others may be farther than the tolerances from it.
	SumDistance, KeyDistance uint64
	// Identical is set when the member has the first member's content
	// (never on the first member itself).
	Identical bool
}

// SimiGroupStats counts a SimiGroups sweep.
type SimiGroupStats struct {
	Tolerances fingerprint.Tolerances // normalized
	// Contents counts the distinct contents swept (those with a file kept),
	// Pairs their pairs, n(n−1)/2, and Comparisons the sum-table
	// comparisons the sweep made (pairs within the key tolerance and the
	// size ratio); Similar counts those SimiFind called similar.
	Contents                    int
	Pairs, Comparisons, Similar int64
	// Overflow counts the contents that left a full window while still
	// within reach (their pairs with the contents after them are not
	// compared; 0 when the window never filled), Window is the most
	// contents the window held, and Groups the groups listed.
	Overflow int64
	Window   int
	Groups   int
}

// simiEntry is a content in the sweep's window.
type simiEntry struct {
	cid   uint32
	key   uint32
	reach uint64 // key + the farthest key a later content may be linked at
	sum   fingerprint.Summary
}

// SimiGroups finds the groups of near-identical files by SimiHash (Sadowski
// and Levin 2011, §4.3, all against all): it reads the SimiHash keys once,
// in key order, and compares each content only with the contents before it
// whose keys are within reach, then by size ratio, then by sum-table
// distance. A pair is linked when SimiFind of either file would list the
// other (fingerprint.Tolerances.Judge with the larger file as the query,
// whose tolerances are the wider), and linked contents are merged into
// groups with union-find over content ids, as Groups does, so a group can
// hold files not similar to one another directly. A content with no
// similar content forms no group, even with copies (Dupes lists those).
// Groups come largest first, then by first member's path; fn is called
// with each on the caller's goroutine.
//
// Memory. The window holds the contents whose keys are within reach of the
// current one: a content of size s reaches Key·s/SizeRatio past its key
// (no later content within the size ratio may be linked farther), about
// 100 bytes each, and at most MaxWindow of them: on a set of many equal
// keys, the oldest leaves the window when it is full, and its pairs with
// later contents are not compared (SimiGroupStats.Overflow counts it).
// Beyond the window, the sweep keeps about 40 bytes per linked content
// (union-find) and the answer, which it sorts before calling fn; it reads each content record once, then the
// records of the files of the groups it lists. It fails with ErrNoSimiHash
// on an index without SimiHash keys, sees one consistent state of the
// index, and stops when ctx is done with an error wrapping ctx's.
func (ix *Index) SimiGroups(ctx context.Context, o SimiGroupOptions, fn func(SimiGroup) error) (*SimiGroupStats, error) {
	st, err := ix.simiGroups(ctx, o, fn)
	if err != nil {
		return nil, fmt.Errorf("index.SimiGroups: %w", err)
	}
	return st, nil
}

func (ix *Index) simiGroups(ctx context.Context, o SimiGroupOptions, fn func(SimiGroup) error) (*SimiGroupStats, error) {
	tol, err := o.Tolerances.Normalize()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQuery, err)
	}
	switch {
	case o.MaxWindow < 0:
		return nil, fmt.Errorf("%w: max window %d: want 0 (the default) or more", ErrBadQuery, o.MaxWindow)
	case o.MaxWindow == 0:
		o.MaxWindow = DefaultSimiWindow
	}
	if !ix.simihash {
		return nil, ErrNoSimiHash
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ix.acquire(); err != nil {
		return nil, err
	}
	defer ix.release()
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	s := simiSweep{r: snap, o: o, tol: tol, poll: poller{ctx: ctx}, parent: map[uint32]uint32{}}
	s.st.Tolerances = tol
	if err := s.sweep(); err != nil {
		return nil, err
	}
	if err := s.emit(fn); err != nil {
		return nil, err
	}
	n := int64(s.st.Contents)
	s.st.Pairs = n * (n - 1) / 2
	return &s.st, nil
}

// simiSweep is the state of one SimiGroups run.
type simiSweep struct {
	r      pebble.Reader
	o      SimiGroupOptions
	tol    fingerprint.Tolerances
	poll   poller
	window []simiEntry
	parent map[uint32]uint32 // union-find over the linked contents
	st     SimiGroupStats
}

// filtered reports whether the run keeps only some files.
func (s *simiSweep) filtered() bool { return s.o.PathPrefix != "" || s.o.Visible != nil }

// keeps reports whether the run keeps the file of meta.
func (s *simiSweep) keeps(m *FileMeta) bool {
	return InTree(m.Path, s.o.PathPrefix) && (s.o.Visible == nil || s.o.Visible(m))
}

// sweep reads the SimiHash keys in order and links each content with the
// similar ones in the window.
func (s *simiSweep) sweep() error {
	lo := []byte{prefixSimi}
	return scan(s.r, lo, prefixEnd(lo), func(k, _ []byte) error {
		if err := s.poll.tick(); err != nil {
			return err
		}
		key, cid, err := parseSimiKey(k)
		if err != nil {
			return err
		}
		var rec FileRecord
		found, err := readContent(s.r, cid, &rec)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: simihash key %x names content %d, which has no record", ErrCorrupt, k, cid)
		}
		if s.filtered() {
			files, err := s.files(cid, &rec)
			if err != nil || len(files) == 0 {
				return err
			}
		}
		s.add(simiEntry{cid: cid, key: key, reach: uint64(key) + s.reachOf(rec.Summary.Size), sum: rec.Summary})
		return nil
	})
}

// reachOf is how far past its key a content of size bytes may be linked:
// a later content within the size ratio is at most size/SizeRatio long,
// and the key tolerance is taken from the larger size.
func (s *simiSweep) reachOf(size int64) uint64 {
	return s.tol.KeyTolerance(int64(math.Min(float64(size)/s.tol.SizeRatio+1, math.MaxInt64/2)))
}

// add compares e with the contents of the window within reach, drops those
// out of reach, and puts e in the window, dropping the oldest when full.
func (s *simiSweep) add(e simiEntry) {
	s.st.Contents++
	j := 0 // the entries kept, moved only past a dropped one
	for i := range s.window {
		w := &s.window[i]
		if w.reach < uint64(e.key) {
			continue // out of reach of e and of every later content
		}
		s.compare(w, &e)
		if j != i {
			s.window[j] = *w
		}
		j++
	}
	s.window = s.window[:j]
	if len(s.window) == s.o.MaxWindow {
		s.window = slices.Delete(s.window, 0, 1)
		s.st.Overflow++
	}
	s.window = append(s.window, e)
	s.st.Window = max(s.st.Window, len(s.window))
}

// compare judges the pair of a and b, the larger as the query, and links
// them when similar; it counts the sum-table comparisons and the pairs the
// full window skips.
func (s *simiSweep) compare(a, b *simiEntry) {
	q, c := &a.sum, &b.sum
	if c.Size > q.Size || (c.Size == q.Size && b.cid < a.cid) {
		q, c = c, q
	}
	if uint64(b.key)-uint64(a.key) > s.tol.KeyTolerance(q.Size) || !s.tol.SizesClose(q.Size, c.Size) {
		return
	}
	s.st.Comparisons++
	if s.tol.Judge(q, c).Similar {
		s.st.Similar++
		s.union(a.cid, b.cid)
	}
}

func (s *simiSweep) find(x uint32) uint32 {
	p, ok := s.parent[x]
	if !ok {
		return x
	}
	for p != x {
		gp := s.parent[p]
		s.parent[x] = gp
		x, p = p, gp
	}
	return x
}

func (s *simiSweep) union(a, b uint32) {
	for _, x := range []uint32{a, b} {
		if _, ok := s.parent[x]; !ok {
			s.parent[x] = x
		}
	}
	ra, rb := s.find(a), s.find(b)
	if ra != rb {
		s.parent[max(ra, rb)] = min(ra, rb)
	}
}

// files returns the records of the files of content cid that the run
// keeps, in id order, each with the content's fields from rec.
func (s *simiSweep) files(cid uint32, rec *FileRecord) ([]FileRecord, error) {
	ids, err := filesOfContent(s.r, cid)
	if err != nil {
		return nil, err
	}
	var out []FileRecord
	for _, id := range ids {
		meta, _, found, err := readMeta(s.r, id)
		if err != nil {
			return nil, err
		}
		if found && s.keeps(&meta) {
			f := *rec
			f.ID, f.FileMeta = id, meta
			out = append(out, f)
		}
	}
	return out, nil
}

// emit lists the groups of linked contents, largest first.
func (s *simiSweep) emit(fn func(SimiGroup) error) error {
	byRoot := map[uint32][]uint32{}
	for cid := range s.parent {
		r := s.find(cid)
		byRoot[r] = append(byRoot[r], cid)
	}
	s.parent = nil
	var gs []SimiGroup
	for _, cids := range byRoot {
		g, err := s.group(cids)
		if err != nil {
			return err
		}
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b SimiGroup) int {
		return cmp.Or(cmp.Compare(len(b.Members), len(a.Members)), cmp.Compare(a.Members[0].Path, b.Members[0].Path))
	})
	s.st.Groups = len(gs)
	for _, g := range gs {
		if err := fn(g); err != nil {
			return err
		}
	}
	return nil
}

// group reads the files of the linked contents cids and orders them.
func (s *simiSweep) group(cids []uint32) (SimiGroup, error) {
	var g SimiGroup
	for _, cid := range cids {
		if err := s.poll.tick(); err != nil {
			return g, err
		}
		var rec FileRecord
		found, err := readContent(s.r, cid, &rec)
		if err != nil {
			return g, err
		}
		if !found {
			return g, fmt.Errorf("%w: content %d of a group has no record", ErrCorrupt, cid)
		}
		fs, err := s.files(cid, &rec)
		if err != nil {
			return g, err
		}
		for _, f := range fs {
			g.Members = append(g.Members, SimiMember{FileRecord: f})
		}
	}
	i := 0
	for j, m := range g.Members {
		if cmp.Or(cmp.Compare(m.Key, g.Members[i].Key), cmp.Compare(m.Path, g.Members[i].Path)) < 0 {
			i = j
		}
	}
	g.Members[0], g.Members[i] = g.Members[i], g.Members[0]
	first := g.Members[0].Summary
	for i := range g.Members {
		m := &g.Members[i]
		v := s.tol.Judge(&first, &m.Summary)
		m.SumDistance, m.KeyDistance, m.Identical = v.SumDistance, v.KeyDistance, v.Identical && i > 0
	}
	slices.SortFunc(g.Members[1:], func(a, b SimiMember) int {
		return cmp.Or(cmp.Compare(a.SumDistance, b.SumDistance), cmp.Compare(a.Path, b.Path))
	})
	return g, nil
}
