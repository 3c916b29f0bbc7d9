package index

import (
	"bytes"
	"cmp"
	"context"
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
	shared   map[uint32]uint64 // candidate content id → shared weight
	common   map[uint32]uint64 // of it, through common fingerprints (a template query)
	postings []posting
	list     []postingEntry // the posting list of one bucket
	ids      []uint32       // candidate content ids
	files    []uint32       // the file ids of one content
	key      []byte
	skipped  []bool
	// stash holds the postings of the skipped entries, while they fit
	// in templatePostings, for a template query (countCommon); spans
	// says where each entry's are, in entry order.
	stash []posting
	spans []stashSpan
}

// stashSpan is where the postings of the skipped entry i are in stash.
type stashSpan struct{ i, lo, hi int }

type posting struct {
	cid    uint32
	weight uint64
}

var queryStates = sync.Pool{New: func() any {
	return &queryState{shared: make(map[uint32]uint64, 256), common: make(map[uint32]uint64), key: make([]byte, 0, hashKeyLen)}
}}

func putQueryState(s *queryState) {
	if len(s.shared) > 1<<16 || len(s.common) > 1<<16 || cap(s.postings) > 1<<16 || cap(s.list) > 1<<16 || cap(s.stash) > 1<<16 {
		return // do not keep the scratch of an unusual query alive
	}
	clear(s.shared)
	clear(s.common)
	s.stash, s.spans = s.stash[:0], s.spans[:0]
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
// neither links unrelated files nor dilutes a real match. That holds
// while the skipped entries are a minor part of the query: when they
// hold most of its weight at a level (past TemplateShare by the sampling
// error of its entries there, templateCut), the query is mostly what many
// files share (one of a family made from a template or a form, or the
// template itself), and they are counted (up to a bound on the postings,
// see templatePostings) for the candidates compared there that hold more
// than TemplateShare of them: its family, judged on all
// of the query's weight and flagged Match.Template, ranked by how much of
// the query each holds; Result.Template says one was found, and
// Result.Total how many files passed. Other candidates are judged on the
// query's distinctive part. When fewer than
// MinFeatures entries remain, the result is TooFew. With nothing skipped
// and without fingerprint-key collisions the numbers are
// fingerprint.Compare's. Files identical to the query are
// always listed, first, whatever the threshold and even when the query has
// too few features; their numbers are computed from their forward lists.
// The file at q.Path is never listed.
//
// Similar sees one consistent state of the index. It stops when ctx is
// done, with an error wrapping ctx's (see cancel.go). The caller owns the
// result.
func (ix *Index) Similar(ctx context.Context, q Query, opts QueryOptions) (*Result, error) {
	res, err := ix.similar(ctx, q, opts)
	if err != nil {
		return nil, fmt.Errorf("index.Similar %q: %w", q.Path, err)
	}
	return res, nil
}

func (ix *Index) similar(ctx context.Context, q Query, opts QueryOptions) (*Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if q.Sketch == nil {
		return nil, fmt.Errorf("%w: no sketch", ErrBadQuery)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
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
	qs := querySearch{ix: ix, it: it, st: st, poll: poller{ctx: ctx}, q: q, opts: opts, entries: entries, res: res,
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
	poll    poller
	q       Query
	opts    QueryOptions
	entries []entry
	res     *Result

	// The query's own file, when indexed: its file and content ids, and
	// whether it holds its content alone.
	selfID    uint32
	selfCID   uint32
	hasSelf   bool
	selfAlone bool
	ext       string

	// The query's level and the top level; per level l, the weight and
	// number of the query's entries of level l or more that were not
	// skipped (filled in by levels).
	lvl, top int
	weightAt [maxLevel + 2]uint64
	countAt  [maxLevel + 2]int
	fullAt   [maxLevel + 2]uint64 // weightAt with the skipped entries
	nfullAt  [maxLevel + 2]int    // countAt with the skipped entries
	skipped  []bool               // per entry: skipped for its document frequency
	// tmplFrom is the lowest level of template comparisons (templates),
	// top+1 when there is none; tmpl marks them.
	tmplFrom int
	tmpl     [maxLevel + 2]bool
}

// maxLevel bounds fingerprint.Params.Bits (Normalize refuses more).
const maxLevel = 16

// levels fills in weightAt and countAt from the entries and skipped.
func (s *querySearch) levels() {
	for i, e := range s.entries {
		for l := 0; l <= min(int(e.level), maxLevel); l++ {
			s.fullAt[l] = satAdd(s.fullAt[l], e.weight)
			s.nfullAt[l]++
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

// qweight returns the query's weight at level l for a candidate: all of
// it for one of its family, else that of its entries not skipped.
func (s *querySearch) qweight(l int, family bool) uint64 {
	if family {
		return s.fullAt[l]
	}
	return s.weightAt[l]
}

// counted returns the number of the query's entries that count at level
// l, as qweight.
func (s *querySearch) counted(l int, family bool) int {
	if family {
		return s.nfullAt[l]
	}
	return s.countAt[l]
}

func (s *querySearch) run() error {
	if s.q.Path != "" {
		if err := s.self(); err != nil {
			return err
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
	s.levels()
	templates := s.templates()
	if templates {
		if err := s.countCommon(); err != nil {
			return err
		}
	}
	if len(s.entries)-s.res.Skipped < s.opts.MinFeatures {
		s.res.TooFew = true // unless a family is found
		if !weak && !templates {
			clear(s.st.shared)
		}
	}
	if s.hasSelf && s.selfAlone {
		delete(s.st.shared, s.selfCID) // the query's own content, and no copy of it
	}
	s.res.Candidates = s.candidates()
	identical, done, err := s.identical()
	if err != nil {
		return err
	}

	// A candidate is compared at its level or the query's, whichever is
	// higher, and only at a level where the query has MinFeatures
	// entries that count: its weight there is at least qw. A weak
	// candidate (WeakShared) may be compared at any level up to the top.
	hi := s.lvl
	for hi < s.top && s.counted(hi+1, s.templateAt(hi+1)) >= s.opts.MinFeatures {
		hi++
	}
	if weak {
		hi = s.top
	}
	qw := s.weightAt[hi] // at most the query's weight at any level up to hi
	if qw == 0 {
		qw = 1 // a candidate shares weight only at a level where the query has some
	}

	// Load the records of the candidate contents that can pass the
	// threshold, in content id order (so the seeks move forward), and list
	// each of their files that passes the filters.
	ids := s.st.ids[:0]
	for cid, shared := range s.st.shared {
		if fingerprint.Ratio(shared, qw) >= s.opts.Threshold && !slices.Contains(done, cid) {
			ids = append(ids, cid)
		}
	}
	slices.Sort(ids)
	s.st.ids = ids
	matches := identical
	for _, cid := range ids {
		if err := s.poll.now(); err != nil {
			return err
		}
		var c FileRecord
		ok, err := s.content(cid, &c)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		l := s.level(c.Level)
		shared, common := s.st.shared[cid], s.st.common[cid]
		family := s.family(l, common)
		if !family {
			shared -= common // judged on the query's distinctive part
		}
		isWeak := s.counted(l, family) < s.opts.MinFeatures
		if isWeak && (!weak || shared < uint64(s.opts.WeakShared)) {
			continue // too few of the query's fingerprints at its level
		}
		m := s.match(c, shared, false, family)
		if m.Containment < s.opts.Threshold {
			continue
		}
		if !family {
			s.distinctive(&m, l)
		}
		m.Weak = isWeak
		m.Template = family
		if family && !isWeak {
			s.res.Template, s.res.TooFew = true, false
		}
		if matches, err = s.appendFiles(matches, cid, m); err != nil {
			return err
		}
	}
	slices.SortFunc(matches, compareMatches)
	if s.opts.Visible != nil {
		s.res.Candidates = len(matches)
	}
	s.res.Total = len(matches)
	if s.res.Template {
		s.counts()
	}
	if s.opts.Limit > 0 && len(matches) > s.opts.Limit {
		matches = matches[:s.opts.Limit]
	}
	s.res.Matches = matches
	return nil
}

// accumulate walks the postings of every query entry and adds the shared
// weight of each file to s.st.shared. It holds copiesMu only while it
// counts the files of one key's postings, not while it reads them: a
// write that changes the copies waits for no query's reads, and the
// queries behind that write wait for no other query's.
func (s *querySearch) accumulate() error {
	maxDF := s.opts.MaxDF
	st := s.st
	ix := s.ix
	ix.copiesMu.RLock()
	copies := len(ix.copies) > 0
	ix.copiesMu.RUnlock()
	bucket, have := uint32(0), false
	list := st.list[:0]
	at := 0 // the first posting of list whose key is not below e's
	for i, e := range s.entries {
		if b := bucketOf(e.key); !have || b != bucket {
			bucket, have = b, true
			if err := s.poll.now(); err != nil {
				return err
			}
			var err error
			if list, err = s.postingList(list[:0], b); err != nil {
				return err
			}
			at = 0
		}
		for at < len(list) && list[at].key < e.key {
			at++
		}
		st.postings = st.postings[:0]
		n := 0 // files holding the key: a posting counts its content's
		if copies {
			ix.copiesMu.RLock()
		}
		for _, p := range list[at:] {
			if p.key != e.key {
				break
			}
			if n++; copies {
				n += ix.filesOf(p.cid) - 1
			}
			if maxDF >= 0 && n > maxDF {
				break
			}
			st.postings = append(st.postings, posting{cid: p.cid, weight: p.weight})
		}
		if copies {
			ix.copiesMu.RUnlock()
		}
		if maxDF >= 0 && n > maxDF {
			// Keep its postings, while they fit, for countCommon.
			j := at
			for j < len(list) && list[j].key == e.key {
				j++
			}
			if len(st.stash)+j-at <= templatePostings {
				lo := len(st.stash)
				for _, p := range list[at:j] {
					st.stash = append(st.stash, posting{cid: p.cid, weight: p.weight})
				}
				st.spans = append(st.spans, stashSpan{i, lo, len(st.stash)})
			}
			if s.skipped == nil {
				s.skipped = append(st.skipped[:0], make([]bool, len(s.entries))...)
				st.skipped = s.skipped
			}
			s.skipped[i] = true
			s.res.Skipped++
			s.res.SkippedKeys = append(s.res.SkippedKeys, e.key) // entries are sorted by key
			s.res.SkippedWeight = satAdd(s.res.SkippedWeight, e.weight)
			continue
		}
		for _, p := range st.postings {
			// No overflow: shared weight is at most the query's weight.
			st.shared[p.cid] += min(e.weight, p.weight)
		}
	}
	st.list = list
	return nil
}

// postingList appends the postings of bucket b to dst, read through the
// query's iterator.
func (s *querySearch) postingList(dst []postingEntry, b uint32) ([]postingEntry, error) {
	s.st.key = appendBucketKey(s.st.key[:0], b)
	if !s.it.SeekPrefixGE(s.st.key) || !bytes.Equal(s.it.Key(), s.st.key) {
		return dst, s.it.Error()
	}
	v, err := s.it.ValueAndErr()
	if err != nil {
		return dst, err
	}
	return decodePostingList(dst, b, v, false)
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
	case o.Visible != nil && !o.Visible(&rec.FileMeta):
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
func (s *querySearch) match(rec FileRecord, shared uint64, identical, family bool) Match {
	l := s.level(rec.Level)
	qw, fw := s.qweight(l, family), rec.WeightAt(l)
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

// compareMatches orders identical files first, then by containment,
// resemblance and shared weight, descending, then by path: of files that
// hold all of the query, the one closest to it in size comes first.
func compareMatches(a, b Match) int {
	switch {
	case a.Identical != b.Identical:
		if a.Identical {
			return -1
		}
		return 1
	case a.Containment != b.Containment:
		return -cmp.Compare(a.Containment, b.Containment)
	case a.Resemblance != b.Resemblance:
		return -cmp.Compare(a.Resemblance, b.Resemblance)
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

// meta reads the record of file id through the query's iterator: its
// metadata and content id. A missing record (which only a corrupt index
// lacks) is skipped, not an error, so one bad key does not fail every
// query.
func (s *querySearch) meta(id uint32) (FileMeta, uint32, bool, error) {
	s.st.key = appendIDKey(s.st.key[:0], prefixRecord, id)
	v, ok, err := s.get(s.st.key)
	if err != nil || !ok {
		return FileMeta{}, 0, false, err
	}
	meta, cid, err := decodeRecord(v)
	if err != nil {
		return FileMeta{}, 0, false, fmt.Errorf("file id %d: %w", id, err)
	}
	return meta, cid, true, nil
}

// content reads the record of content cid through the query's iterator
// into rec's content fields, and sets rec.ID to its holder hint. A missing
// record is skipped, as in meta.
func (s *querySearch) content(cid uint32, rec *FileRecord) (bool, error) {
	s.st.key = appendIDKey(s.st.key[:0], prefixContent, cid)
	v, ok, err := s.get(s.st.key)
	if err != nil || !ok {
		return false, err
	}
	if rec.ID, err = decodeContent(v, rec); err != nil {
		return false, fmt.Errorf("content %d: %w", cid, err)
	}
	rec.Content = cid
	return true, nil
}
