package index

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// withDefaults validates o and fills in its defaults. Errors wrap
// ErrBadQuery and name the field.
func (o QueryOptions) withDefaults() (QueryOptions, error) {
	switch {
	case math.IsNaN(o.Threshold) || o.Threshold < 0 || o.Threshold > 1:
		return o, fmt.Errorf("%w: threshold %v: want 0..1", ErrBadQuery, o.Threshold)
	case o.Limit < 0:
		return o, fmt.Errorf("%w: limit %d: want 0 (no limit) or more", ErrBadQuery, o.Limit)
	case math.IsNaN(o.SizeRatio) || o.SizeRatio < 0 || o.SizeRatio > 0 && o.SizeRatio < 1:
		return o, fmt.Errorf("%w: size ratio %v: want 0 (any size) or at least 1", ErrBadQuery, o.SizeRatio)
	case o.MinFeatures < 0:
		return o, fmt.Errorf("%w: min features %d: want 0 (the default) or more", ErrBadQuery, o.MinFeatures)
	case o.WeakShared < 0:
		return o, fmt.Errorf("%w: weak shared %d: want 0 (none) or more", ErrBadQuery, o.WeakShared)
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.MaxDF == 0 {
		o.MaxDF = DefaultMaxDF
	}
	if o.MinFeatures == 0 {
		o.MinFeatures = DefaultMinFeatures
	}
	return o, nil
}

// queryState is the scratch space of one query, pooled so a query allocates
// little beyond its result.
type queryState struct {
	shared   map[uint32]uint64 // candidate file id → shared weight
	postings []posting
	ids      []uint32
	key      []byte
	skipped  []bool
}

type posting struct {
	id     uint32
	weight uint64
}

var queryStates = sync.Pool{New: func() any {
	return &queryState{shared: make(map[uint32]uint64, 256), key: make([]byte, 0, strongKeyLen)}
}}

func putQueryState(s *queryState) {
	if len(s.shared) > 1<<16 || cap(s.postings) > 1<<16 {
		return // do not keep the scratch of an unusual query alive
	}
	clear(s.shared)
	queryStates.Put(s)
}

// Similar answers a one-against-all query: the indexed files that contain a
// good part of q (Manber §3, with the options' filters). q.Sketch must have
// been made with the index's parameters (zero Params are taken to be them).
// When q.Sketch.Strong is all zero, identical files are not looked for.
//
// The query's features are taken as the index stores a file's: as entries,
// mapped to fingerprint keys and merged per key (doc.go). For every entry
// whose key is held by at most MaxDF files (the query's own file, when
// indexed, counts), a candidate's shared weight grows by min(weight in
// query, weight in candidate); the others are Skipped, and their weight
// leaves the query's weight, the denominator of Containment and
// Resemblance: like Forman et al.'s template suppression, the query is
// judged on its distinctive part, so a licence header shared by every file
// neither links unrelated files nor dilutes a real match. When fewer than
// MinFeatures entries remain, the result is TooFew. With nothing skipped
// and without fingerprint-key collisions the numbers are
// fingerprint.Compare's. Files identical to the query are
// always listed, first, whatever the threshold and even when the query has
// too few features; their numbers are computed from their forward lists.
// The file at q.Path is never listed.
//
// Similar sees one consistent state of the index. The caller owns the
// result.
func (ix *Index) Similar(q Query, opts QueryOptions) (*Result, error) {
	res, err := ix.similar(q, opts)
	if err != nil {
		return nil, fmt.Errorf("index.Similar %q: %w", q.Path, err)
	}
	return res, nil
}

func (ix *Index) similar(q Query, opts QueryOptions) (*Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if q.Sketch == nil {
		return nil, fmt.Errorf("%w: no sketch", ErrBadQuery)
	}
	entries, err := ix.sketchEntries(q.Sketch)
	if err != nil {
		return nil, err
	}
	if err := ix.acquire(); err != nil {
		return nil, err
	}
	defer ix.release()

	res := &Result{QueryFeatures: len(entries), QueryWeight: totalWeight(entries)}
	it, err := ix.db.NewIter(&pebble.IterOptions{UseL6Filters: true})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	st := queryStates.Get().(*queryState)
	defer putQueryState(st)
	qs := querySearch{ix: ix, it: it, st: st, q: q, opts: opts, entries: entries, res: res,
		lvl: ix.params.Level(q.Sketch.Size), top: min(ix.params.Bits, maxLevel)}
	if err := qs.run(); err != nil {
		return nil, err
	}
	return res, it.Error()
}

// querySearch is one run of Similar over one iterator.
type querySearch struct {
	ix      *Index
	it      *pebble.Iterator
	st      *queryState
	q       Query
	opts    QueryOptions
	entries []entry
	res     *Result

	selfID  uint32
	hasSelf bool
	ext     string

	// The query's level and the top level; per level l, the weight and
	// number of the query's entries of level l or more that were not
	// skipped (filled in by levels).
	lvl, top int
	weightAt [maxLevel + 2]uint64
	countAt  [maxLevel + 2]int
	fullAt   [maxLevel + 2]uint64 // weightAt with the skipped entries
	skipped  []bool               // per entry: skipped for its document frequency
}

// maxLevel bounds fingerprint.Params.Bits (Normalize refuses more).
const maxLevel = 16

// levels fills in weightAt and countAt from the entries and skipped.
func (s *querySearch) levels() {
	for i, e := range s.entries {
		for l := 0; l <= min(int(e.level), maxLevel); l++ {
			s.fullAt[l] = satAdd(s.fullAt[l], e.weight)
		}
		if i < len(s.skipped) && s.skipped[i] {
			continue
		}
		for l := 0; l <= min(int(e.level), maxLevel); l++ {
			s.weightAt[l] = satAdd(s.weightAt[l], e.weight)
			s.countAt[l]++
		}
	}
}

// level returns the level a candidate of level fl is compared at: the
// higher of its and the query's (fingerprint.Compare).
func (s *querySearch) level(fl uint8) int { return max(s.lvl, int(fl)) }

func (s *querySearch) run() error {
	if s.q.Path != "" {
		v, ok, err := s.get(pathKey(s.q.Path))
		if err != nil {
			return err
		}
		if ok {
			if s.selfID, err = decodeID(v); err != nil {
				return err
			}
			s.hasSelf = true
		}
	}
	if s.opts.SameExt {
		s.ext = strings.ToLower(filepath.Ext(s.q.Path))
	}
	weak := s.opts.WeakShared > 0
	if len(s.entries) < s.opts.MinFeatures && !weak {
		s.res.TooFew = true
	} else if err := s.accumulate(); err != nil {
		return err
	}
	if len(s.entries)-s.res.Skipped < s.opts.MinFeatures {
		s.res.TooFew = true
		if !weak {
			clear(s.st.shared)
		}
	}
	s.res.Candidates = len(s.st.shared)
	s.levels()
	identical, err := s.identical()
	if err != nil {
		return err
	}

	// A candidate is compared at its level or the query's, whichever is
	// higher, and only at a level where the query has MinFeatures
	// distinctive entries: its weight there is at least qw. A weak
	// candidate (WeakShared) may be compared at any level up to the top,
	// and the query's weight there is at least its weight at the top.
	hi := s.lvl
	for hi < s.top && s.countAt[hi+1] >= s.opts.MinFeatures {
		hi++
	}
	if weak {
		hi = s.top
	}
	qw := s.weightAt[hi]
	if qw == 0 {
		qw = 1 // a candidate shares weight only at a level where the query has some
	}

	// Load the records of the candidates that can pass the threshold, in id
	// order (so the seeks move forward).
	ids := s.st.ids[:0]
	for id, shared := range s.st.shared {
		if fingerprint.Ratio(shared, qw) >= s.opts.Threshold {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	s.st.ids = ids
	listed := make(map[uint32]bool, len(identical))
	for _, m := range identical {
		listed[m.ID] = true
	}
	matches := identical
	for _, id := range ids {
		if listed[id] {
			continue
		}
		rec, ok, err := s.record(id)
		if err != nil {
			return err
		}
		if !ok || !s.keep(&rec) {
			continue
		}
		l := s.level(rec.Level)
		shared := s.st.shared[id]
		isWeak := s.countAt[l] < s.opts.MinFeatures
		if isWeak && (!weak || shared < uint64(s.opts.WeakShared)) {
			continue // too few of the query's fingerprints at its level
		}
		m := s.match(rec, shared, false)
		if m.Containment < s.opts.Threshold {
			continue
		}
		m.Weak = isWeak
		matches = append(matches, m)
	}
	slices.SortFunc(matches, compareMatches)
	if s.opts.Visible != nil {
		s.res.Candidates = len(matches)
	}
	if s.opts.Limit > 0 && len(matches) > s.opts.Limit {
		matches = matches[:s.opts.Limit]
	}
	s.res.Matches = matches
	return nil
}

// identical returns the files identical to the query that pass the filters,
// with their shared weight computed from their forward lists.
func (s *querySearch) identical() ([]Match, error) {
	sum := &s.q.Sketch.Summary
	if sum.Strong == ([32]byte{}) {
		return nil, nil
	}
	prefix := strongPrefix(sum.Strong)
	var ids []uint32
	for ok := s.it.SeekGE(prefix); ok && bytes.HasPrefix(s.it.Key(), prefix); ok = s.it.Next() {
		_, id, err := parseStrongKey(s.it.Key())
		if err != nil {
			return nil, err
		}
		if !s.hasSelf || id != s.selfID {
			ids = append(ids, id)
		}
	}
	if err := s.it.Error(); err != nil {
		return nil, err
	}
	var out []Match
	for _, id := range ids {
		rec, ok, err := s.record(id)
		if err != nil {
			return nil, err
		}
		if !ok || rec.Summary.Size != sum.Size || !s.keep(&rec) {
			continue
		}
		v, ok, err := s.get(forwardKey(id))
		if err != nil {
			return nil, err
		}
		var shared uint64
		if ok {
			if shared, err = s.sharedWith(v); err != nil {
				return nil, fmt.Errorf("forward list of file id %d: %w", id, err)
			}
		}
		out = append(out, s.match(rec, shared, true))
	}
	return out, nil
}

// sharedWith returns the weight the query shares with a forward list.
func (s *querySearch) sharedWith(forward []byte) (uint64, error) {
	r := newForwardReader(forward)
	es := s.entries
	var shared uint64
	i := 0
	for {
		e, ok := r.next()
		if !ok {
			break
		}
		for i < len(es) && es[i].key < e.key {
			i++
		}
		if i < len(es) && es[i].key == e.key {
			shared = satAdd(shared, min(es[i].weight, e.weight))
		}
	}
	return shared, r.err()
}

// accumulate walks the postings of every query entry and adds the shared
// weight of each file to s.st.shared.
func (s *querySearch) accumulate() error {
	maxDF := s.opts.MaxDF
	st := s.st
	for i, e := range s.entries {
		st.key = appendPostingPrefix(st.key[:0], e.key)
		st.postings = st.postings[:0]
		n := 0
		for ok := s.it.SeekPrefixGE(st.key); ok && bytes.HasPrefix(s.it.Key(), st.key); ok = s.it.Next() {
			n++
			if maxDF >= 0 && n > maxDF {
				break
			}
			k := s.it.Key()
			if len(k) != postingKeyLen {
				return fmt.Errorf("%w: posting key %x", ErrCorrupt, k)
			}
			v, err := s.it.ValueAndErr()
			if err != nil {
				return err
			}
			w, err := decodePosting(v)
			if err != nil {
				return fmt.Errorf("posting %x: %w", k, err)
			}
			st.postings = append(st.postings, posting{id: binary.BigEndian.Uint32(k[postingPrefixLen:]), weight: w})
		}
		if err := s.it.Error(); err != nil {
			return err
		}
		if maxDF >= 0 && n > maxDF {
			if s.skipped == nil {
				s.skipped = append(st.skipped[:0], make([]bool, len(s.entries))...)
				st.skipped = s.skipped
			}
			s.skipped[i] = true
			s.res.Skipped++
			s.res.SkippedWeight = satAdd(s.res.SkippedWeight, e.weight)
			continue
		}
		for _, p := range st.postings {
			if s.hasSelf && p.id == s.selfID {
				continue
			}
			// No overflow: shared weight is at most the query's weight.
			st.shared[p.id] += min(e.weight, p.weight)
		}
	}
	return nil
}

// keep applies the filters other than the threshold.
func (s *querySearch) keep(rec *FileRecord) bool {
	o := &s.opts
	switch {
	case rec.Path == s.q.Path:
		return false
	case !InTree(rec.Path, o.PathPrefix):
		return false
	case o.SameType && rec.Type != s.q.Sketch.Type:
		return false
	case o.SameExt && strings.ToLower(filepath.Ext(rec.Path)) != s.ext:
		return false
	case o.SizeRatio > 0 && !withinRatio(rec.Summary.Size, s.q.Sketch.Size, o.SizeRatio):
		return false
	case o.Visible != nil && !o.Visible(rec.Path):
		return false
	}
	return true
}

// withinRatio reports whether sizes a and b differ by at most the factor
// ratio.
func withinRatio(a, b int64, ratio float64) bool {
	x, y := float64(max(a, 1)), float64(max(b, 1))
	return max(x, y)/min(x, y) <= ratio
}

// match measures a candidate at the level it is compared at: the query's
// distinctive weight (its whole weight for an identical file, whose shared
// weight comes from its forward list) and the candidate's weight are those
// of their entries of that level or more. The shared weight needs no such
// care: the keys a file holds are all of its level or more.
func (s *querySearch) match(rec FileRecord, shared uint64, identical bool) Match {
	l := s.level(rec.Level)
	qw, fw := s.weightAt[l], rec.WeightAt(l)
	if identical {
		qw = s.fullAt[l]
	}
	m := Match{
		FileRecord:         rec,
		SharedWeight:       shared,
		Containment:        fingerprint.Ratio(shared, qw),
		ReverseContainment: fingerprint.Ratio(shared, fw),
		Resemblance:        fingerprint.Ratio(shared, qw+fw-shared),
		SharedBytes:        -1,
		Identical:          isIdentical(&rec.Summary, &s.q.Sketch.Summary),
	}
	if s.ix.knowsLengths {
		m.SharedBytes = int64(shared)
	}
	return m
}

// isIdentical reports whether two summaries have equal, known strong hashes
// and equal sizes.
func isIdentical(a, b *fingerprint.Summary) bool {
	return a.Strong != [32]byte{} && a.Strong == b.Strong && a.Size == b.Size
}

// compareMatches orders identical files first, then by containment and
// shared weight, descending, then by path.
func compareMatches(a, b Match) int {
	switch {
	case a.Identical != b.Identical:
		if a.Identical {
			return -1
		}
		return 1
	case a.Containment != b.Containment:
		return -cmp.Compare(a.Containment, b.Containment)
	case a.SharedWeight != b.SharedWeight:
		return -cmp.Compare(a.SharedWeight, b.SharedWeight)
	}
	return strings.Compare(a.Path, b.Path)
}

// get reads one key through the query's iterator. The value is valid until
// the iterator moves.
func (s *querySearch) get(key []byte) ([]byte, bool, error) {
	if !s.it.SeekGE(key) || !bytes.Equal(s.it.Key(), key) {
		return nil, false, s.it.Error()
	}
	v, err := s.it.ValueAndErr()
	return v, err == nil, err
}

// record reads the record of file id through the query's iterator. A
// missing record (which only a corrupt index lacks) is skipped, not an
// error, so one bad key does not fail every query.
func (s *querySearch) record(id uint32) (FileRecord, bool, error) {
	s.st.key = appendIDKey(s.st.key[:0], prefixRecord, id)
	v, ok, err := s.get(s.st.key)
	if err != nil || !ok {
		return FileRecord{}, false, err
	}
	rec, err := decodeRecord(id, v)
	if err != nil {
		return FileRecord{}, false, fmt.Errorf("file id %d: %w", id, err)
	}
	return rec, true, nil
}
