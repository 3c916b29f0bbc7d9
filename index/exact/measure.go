package exact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
)

// Measure is what a query shares with one candidate, over window sets (see
// the package doc).
type Measure struct {
	// Level is the sampling level the measure was made at: 0 means exact.
	Level int
	// QueryWindows, CandidateWindows and SharedWindows count distinct
	// windows (at Level: sampled ones) of the query, of the candidate, and
	// of both.
	QueryWindows, CandidateWindows, SharedWindows int
	// Containment of the query in the candidate, ReverseContainment of the
	// candidate in the query, and Resemblance, each 0..1.
	Containment, ReverseContainment, Resemblance float64
	// SharedBytes are the query's bytes covered by a window found in the
	// candidate: counted when Level is 0, else containment × query size.
	SharedBytes int64
	// Size is the number of candidate bytes read.
	Size int64
}

// Query is the query side of measures, prepared once and measured against
// any number of candidates. It is not safe for concurrent use.
type Query struct {
	size     int64
	level    int
	data     []byte // the query's bytes, when known (hasData)
	hasData  bool
	distinct []uint64 // distinct window hashes (at level)
	// ownDistinct says distinct is the Query's, from u64Bufs, and not a
	// caller's signature.
	ownDistinct bool
	posID       []int32 // per window of data: index of its hash in distinct

	bases map[[2]int]*table // (level, table size) → the query's windows kept at level
	seen  []bool
	hbuf  []uint64
	pbuf  []uint64
	undo  []int32
	ends  []int32
	rbuf  []byte
}

// NewQuery prepares a query from its bytes, which it keeps (the caller
// must not change them while the Query is in use).
func NewQuery(data []byte) *Query {
	q := &Query{size: int64(len(data)), data: data, hasData: true, ownDistinct: true}
	var h Hasher
	hs := h.Append(u64Bufs.get(len(data)-Window+1), data)
	t := newTable(2 * len(hs))
	q.posID = i32Bufs.get(len(hs))[:len(hs)]
	q.distinct = u64Bufs.get(len(hs))
	// Visit the windows grouped by the table region their hash falls in,
	// so the table is touched one cache-sized region at a time.
	order := partitionIndex(i32Bufs.get(len(hs)), hs, t)
	for _, i := range order {
		h := hs[i]
		p := place(h)
		s := t.slot(p)
		if t.vals[s] == 0 {
			q.distinct = append(q.distinct, h)
			t.insert(s, p, int32(len(q.distinct)))
		}
		q.posID[i] = t.vals[s] - 1
	}
	i32Bufs.put(order)
	u64Bufs.put(hs)
	q.bases = map[[2]int]*table{{0, len(t.keys)}: t}
	return q
}

// regionSlots is the number of slots in a table region: about 48 KiB of
// keys and values, which stay in a core's cache while they are probed.
const regionSlots = 1 << 12

// partitionBits returns how many top bits of a hash name its region of t.
func partitionBits(t *table) uint {
	return uint(max(0, bits.Len(uint(len(t.keys)/regionSlots))-1))
}

// partitionIndex returns the indexes of hs (window hashes, not placed)
// grouped by the region of t their placed hash falls in (a counting sort
// on its top bits), in dst's space, which must have room for them.
func partitionIndex(dst []int32, hs []uint64, t *table) []int32 {
	pb := partitionBits(t)
	out := dst[:len(hs)]
	if pb == 0 {
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	counts := make([]int32, 1<<pb+1)
	for _, h := range hs {
		counts[place(h)>>(64-pb)+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	for i, h := range hs {
		b := place(h) >> (64 - pb)
		out[counts[b]] = int32(i)
		counts[b]++
	}
	return out
}

// partition returns hs, placed hashes, grouped by the region of t they
// fall in, in dst's space, and the end of each region's group in ends'
// space.
func partition(dst, hs []uint64, ends []int32, t *table) ([]uint64, []int32) {
	pb := partitionBits(t)
	if pb == 0 {
		return append(dst[:0], hs...), append(ends[:0], int32(len(hs)))
	}
	dst = u64Bufs.grow(dst[:0], len(hs))[:len(hs)]
	ends = slices.Grow(ends[:0], 1<<pb+1)[:1<<pb+1]
	clear(ends)
	for _, h := range hs {
		ends[h>>(64-pb)+1]++
	}
	for i := 1; i < len(ends); i++ {
		ends[i] += ends[i-1]
	}
	for _, h := range hs {
		b := h >> (64 - pb)
		dst[ends[b]] = h
		ends[b]++
	}
	return dst, ends[:1<<pb]
}

// NewSignatureQuery prepares a query of size bytes from its signature at
// level (see Signature). It keeps sig. Errors wrap ErrBadSignature.
func NewSignatureQuery(size int64, level int, sig []uint64) (*Query, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: size %d: must not be negative", ErrBadSignature, size)
	}
	if err := CheckSignature(sig, level); err != nil {
		return nil, err
	}
	return &Query{size: size, level: level, distinct: sig}, nil
}

// Size returns the query's size in bytes.
func (q *Query) Size() int64 { return q.size }

// Level returns 0 for a query made from bytes, else its signature's level.
func (q *Query) Level() int { return q.level }

// Bytes returns the query's bytes, or nil for a signature.
func (q *Query) Bytes() []byte { return q.data }

// Release gives the Query's scratch space back for other queries to reuse.
// The Query must not be used afterwards.
func (q *Query) Release() {
	for k, t := range q.bases {
		t.release()
		delete(q.bases, k)
	}
	if q.ownDistinct {
		u64Bufs.put(q.distinct)
	}
	i32Bufs.put(q.posID)
	u64Bufs.put(q.hbuf)
	u64Bufs.put(q.pbuf)
	boolBufs.put(q.seen)
	byteBufs.put(q.rbuf)
	*q = Query{}
}

// readSize is the size of a Measure's reads of a candidate.
const readSize = 64 << 10

// ErrNoEvidence: a sampled measure kept no window of the query, so it
// cannot tell anything.
var ErrNoEvidence = errors.New("exact: no query window at this sampling level")

// MeasureBytes measures the query against a candidate held in memory.
func (q *Query) MeasureBytes(c []byte) (Measure, error) {
	return q.Measure(bytes.NewReader(c), int64(len(c)))
}

// Measure measures the query against the candidate read from r to its
// end. size is what the candidate's size is expected to be (it chooses the
// sampling level and sizes tables); the measure is of what r yields. It
// fails with ErrNoEvidence when the level leaves no query window to
// compare, and with r's errors.
func (q *Query) Measure(r io.Reader, size int64) (Measure, error) {
	level := max(q.level, LevelFor(max(q.size, size)))
	m := Measure{Level: level}
	mask := levelMask(level)
	qkept := len(q.distinct)
	if level != q.level {
		qkept = 0
		for _, h := range q.distinct {
			if h&mask == 0 {
				qkept++
			}
		}
	}
	if qkept == 0 && q.size >= Window {
		return m, ErrNoEvidence
	}
	m.QueryWindows = qkept
	if cap(q.seen) < len(q.distinct) {
		boolBufs.put(q.seen)
		q.seen = boolBufs.get(len(q.distinct))
	}
	seen := q.seen[:len(q.distinct)]
	clear(seen)
	if q.rbuf == nil {
		q.rbuf = byteBufs.get(readSize)[:readSize]
	}
	var h Hasher
	var head [Window]byte // the candidate's first bytes, for a query without windows
	// Room for the hashes the candidate is expected to keep.
	want := int(size - Window + 1)
	if level > 0 {
		want = int(size>>level)*2 + 1024
	}
	q.hbuf = u64Bufs.grow(q.hbuf[:0], max(want, 0))
	hs := q.hbuf
	for {
		n, err := r.Read(q.rbuf)
		if n > 0 {
			if m.Size < Window {
				copy(head[m.Size:], q.rbuf[:n])
			}
			m.Size += int64(n)
			hs = h.AppendKept(hs, q.rbuf[:n], mask)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			q.hbuf = hs
			return m, err
		}
	}
	q.hbuf = hs
	if q.size < Window {
		// No windows: containment is 1 in an equal file, else 0.
		if q.hasData && m.Size == q.size && bytes.Equal(head[:m.Size], q.data) {
			m.Containment, m.ReverseContainment, m.Resemblance, m.SharedBytes = 1, 1, 1, q.size
		}
		return m, nil
	}
	t := q.base(level, qkept+max(len(hs), qkept))
	for i, x := range hs {
		hs[i] = place(x) // the table holds placed hashes
	}
	q.pbuf, q.ends = partition(q.pbuf, hs, q.ends, t)
	slots := len(t.keys)
	from := 0
	for _, end := range q.ends {
		undo := q.undo[:0]
		for _, x := range q.pbuf[from:end] {
			s := t.slot(x)
			switch v := t.vals[s]; {
			case v == 0: // the candidate's only
				if !t.insert(s, x, -1) {
					// t grew, so the undo log's slots are stale: finish
					// without one, and build t anew next time.
					return q.measureRest(m, t, level, slots, q.pbuf[from:], seen)
				}
				undo = append(undo, int32(s))
				m.CandidateWindows++
			case v > 0: // the query's, first seen here
				t.vals[s] = -v - 1
				undo = append(undo, int32(s))
				seen[v-1] = true
				m.SharedWindows++
				m.CandidateWindows++
			}
		}
		// Back to the query's windows alone, while the region is in
		// cache. The candidate's entries were all inserted after the
		// query's, so removing them leaves every probe sequence of the
		// query's intact.
		for _, s := range undo {
			if v := t.vals[s]; v == -1 {
				t.vals[s] = 0
				t.n--
			} else {
				t.vals[s] = -v - 1
			}
		}
		q.undo = undo
		from = int(end)
	}
	return q.finish(m, seen), nil
}

// measureRest goes on with a measure after t grew: it counts what is left
// of hs (the first one was inserted) without restoring t, which it drops.
func (q *Query) measureRest(m Measure, t *table, level, slots int, hs []uint64, seen []bool) (Measure, error) {
	delete(q.bases, [2]int{level, slots})
	m.CandidateWindows++
	for _, x := range hs[1:] {
		s := t.slot(x)
		switch v := t.vals[s]; {
		case v == 0:
			t.insert(s, x, -1)
			m.CandidateWindows++
		case v > 0:
			t.vals[s] = -v - 1
			seen[v-1] = true
			m.SharedWindows++
			m.CandidateWindows++
		}
	}
	return q.finish(m, seen), nil
}

// finish computes the ratios of m from its counts.
func (q *Query) finish(m Measure, seen []bool) Measure {
	sh := float64(m.SharedWindows)
	m.Containment = sh / float64(m.QueryWindows)
	if m.CandidateWindows > 0 {
		m.ReverseContainment = sh / float64(m.CandidateWindows)
	}
	m.Resemblance = sh / float64(m.QueryWindows+m.CandidateWindows-m.SharedWindows)
	if m.Level == 0 && q.posID != nil {
		m.SharedBytes = coveredBytes(q.posID, seen)
	} else {
		m.SharedBytes = int64(m.Containment*float64(q.size) + 0.5)
	}
	return m
}

// coveredBytes counts the bytes in at least one window whose id is seen.
func coveredBytes(posID []int32, seen []bool) int64 {
	var n int64
	end := 0 // bytes before end are counted
	for i, id := range posID {
		if !seen[id] {
			continue
		}
		from := max(i, end)
		n += int64(i + Window - from)
		end = i + Window
	}
	return n
}

// base returns the table of the query's windows kept at level, sized for
// capacity entries.
func (q *Query) base(level, capacity int) *table {
	key := [2]int{level, tableSize(capacity)}
	if b, ok := q.bases[key]; ok {
		return b
	}
	// A table made for a larger candidate serves too.
	for k, b := range q.bases {
		if k[0] == level && k[1] >= key[1] && k[1] <= 4*key[1] {
			return b
		}
	}
	t := newTable(capacity)
	mask := levelMask(level)
	for i, h := range q.distinct {
		if h&mask == 0 {
			p := place(h)
			t.insert(t.slot(p), p, int32(i+1))
		}
	}
	if q.bases == nil {
		q.bases = map[[2]int]*table{}
	}
	q.bases[key] = t
	return t
}
