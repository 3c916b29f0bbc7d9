package index

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Posting lists. The postings of every fingerprint key whose top
// bucketBits bits are equal (a bucket) live in one Pebble value, under the
// key 'P' and those bits. Writes stay blind: a change merges into a bucket
// an operand listing the postings it sets and the ones it removes
// (tombstones), and the merge operator (postingMerger) folds operands
// together, newest first, when Pebble reads or compacts them; a tombstone
// is dropped once the merge holds the bucket's oldest operand.
//
// A posting list, merged or not, is:
//
//	uvarint  n, the number of postings (none: the list is empty, and the
//	         value too)
//	byte     k, the Rice parameter of the key gaps
//	byte     cb, the bits of each content id (1..32)
//	bits     per posting, in (fingerprint key, content id) order, packed
//	         from the most significant bit of each byte:
//	           - unless it is the first, 1 if its key differs from the
//	             previous posting's, else 0;
//	           - when it does (and for the first), the gap from the previous
//	             key's low bits (minus one; for the first, the low bits
//	             themselves), Rice-coded with parameter k: the quotient
//	             gap>>k in unary (ones ended by a zero), then k bits;
//	           - the content id, cb bits;
//	           - the weight: 0 for 1; 10 and gap-free Elias gamma of
//	             weight−1 for more; 11 for a tombstone.
//	         and zero bits up to the byte boundary.
//
// Postings are random bits (keys and ids): one Pebble key per posting
// cost about 8 bytes each on Go's sources after zstd; Rice-coded key gaps
// and fixed-width ids in a bucket cost about half that.
const (
	bucketBits     = 16
	lowBits        = 32 - bucketBits
	bucketKeyLen   = 1 + (bucketBits+7)/8
	postingsMerger = "sif.postings.v1"
)

// tombstone is the weight of a removed posting in a merge operand.
const tombstone = 0

// postingEntry is one posting: content cid holds fingerprint key key with
// weight weight (tombstone in an operand: removed).
type postingEntry struct {
	key    uint32
	cid    uint32
	weight uint64
}

func comparePostings(a, b postingEntry) int {
	switch {
	case a.key != b.key:
		if a.key < b.key {
			return -1
		}
		return 1
	case a.cid != b.cid:
		if a.cid < b.cid {
			return -1
		}
		return 1
	}
	return 0
}

// bucketOf returns the bucket of fingerprint key key.
func bucketOf(key uint32) uint32 { return key >> lowBits }

// appendBucketKey appends the Pebble key of bucket b to dst.
func appendBucketKey(dst []byte, b uint32) []byte {
	dst = append(dst, prefixPosting)
	var buf [4]byte
	binary.BigEndian.PutUint32(buf[:], b<<lowBits)
	return append(dst, buf[:bucketKeyLen-1]...)
}

// parseBucketKey returns the bucket of a posting-list key.
func parseBucketKey(k []byte) (uint32, error) {
	if len(k) != bucketKeyLen || k[0] != prefixPosting {
		return 0, fmt.Errorf("%w: posting list key %x: want %d bytes", ErrCorrupt, k, bucketKeyLen)
	}
	var buf [4]byte
	copy(buf[:], k[1:])
	v := binary.BigEndian.Uint32(buf[:])
	if v&(1<<lowBits-1) != 0 {
		return 0, fmt.Errorf("%w: posting list key %x: bits below the bucket", ErrCorrupt, k)
	}
	return v >> lowBits, nil
}

// bitWriter packs bits from the most significant bit of each byte.
type bitWriter struct {
	buf  []byte
	acc  uint64 // pending bits, the nacc low ones
	nacc uint   // < 32 between calls
}

// write appends the n low bits of v, n ≤ 64.
func (w *bitWriter) write(v uint64, n uint) {
	if n > 32 {
		w.write(v>>32, n-32)
		n = 32
	}
	w.acc = w.acc<<n | v&(1<<n-1)
	w.nacc += n
	if w.nacc >= 32 {
		w.nacc -= 32
		w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(w.acc>>w.nacc))
	}
}

func (w *bitWriter) ones(n uint64) {
	for ; n >= 32; n -= 32 {
		w.write(1<<32-1, 32)
	}
	w.write(1<<n-1, uint(n))
}

// rice writes v Rice-coded with parameter k: v>>k in unary (ones ended by
// a zero), then the k low bits of v.
func (w *bitWriter) rice(v uint64, k uint) {
	if q := uint(v >> k); q+1+k <= 64 {
		w.write((1<<(q+1)-2)<<k|v&(1<<k-1), q+1+k)
		return
	}
	w.ones(v >> k)
	w.write(0, 1)
	w.write(v, k)
}

// gamma writes v ≥ 1 in Elias gamma: as many zeros as v has bits after its
// first, then v.
func (w *bitWriter) gamma(v uint64) {
	n := uint(bits.Len64(v))
	if n <= 32 {
		w.write(v, 2*n-1) // the zeros are v's own leading bits
		return
	}
	w.write(0, n-1)
	w.write(v, n)
}

// flush pads the last byte with zero bits.
func (w *bitWriter) flush() []byte {
	for w.nacc >= 8 {
		w.nacc -= 8
		w.buf = append(w.buf, byte(w.acc>>w.nacc))
	}
	if w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc<<(8-w.nacc)))
		w.nacc = 0
	}
	return w.buf
}

// bitReader reads what bitWriter wrote.
type bitReader struct {
	b   []byte
	pos uint // bit position
}

func (r *bitReader) left() uint { return uint(len(r.b))*8 - r.pos }

// peek returns the next bits, left-aligned, and how many of them there
// are (up to 64, at least 57 unless the end is near).
func (r *bitReader) peek() (uint64, uint) {
	i, off := r.pos/8, r.pos%8
	if i+8 <= uint(cap(r.b)) {
		// Past len(r.b) is zero padding, or nothing: see decodePostingList.
		return binary.BigEndian.Uint64(r.b[i:i+8]) << off, min(r.left(), 64-off)
	}
	var w uint64
	for j := uint(0); j < 8; j++ {
		w <<= 8
		if i+j < uint(len(r.b)) {
			w |= uint64(r.b[i+j])
		}
	}
	return w << off, min(r.left(), 64-off)
}

// read returns the next n bits, n ≤ 64, and false past the end.
func (r *bitReader) read(n uint) (uint64, bool) {
	if n > 56 {
		hi, ok := r.read(n - 32)
		lo, ok2 := r.read(32)
		return hi<<32 | lo, ok && ok2
	}
	if n == 0 {
		return 0, true
	}
	w, avail := r.peek()
	if n > avail {
		return 0, false
	}
	r.pos += n
	return w >> (64 - n), true
}

func (r *bitReader) bit() (bool, bool) {
	v, ok := r.read(1)
	return v == 1, ok
}

// unary counts ones up to a zero, which it consumes, failing past limit
// ones or the end.
func (r *bitReader) unary(limit uint64) (uint64, bool) {
	var n uint64
	for {
		w, avail := r.peek()
		if avail == 0 {
			return 0, false
		}
		ones := uint(bits.LeadingZeros64(^w))
		if ones < avail {
			n += uint64(ones)
			r.pos += ones + 1
			return n, n <= limit
		}
		n += uint64(avail)
		r.pos += avail
		if n > limit {
			return 0, false
		}
	}
}

// rice reads a value Rice-coded with parameter k (see bitWriter.rice),
// failing past a quotient of limit or the end.
func (r *bitReader) rice(k uint, limit uint64) (uint64, bool) {
	w, avail := r.peek()
	if q := uint(bits.LeadingZeros64(^w)); q+1+k <= avail {
		r.pos += q + 1 + k
		return uint64(q)<<k | w<<(q+1)>>(64-k), uint64(q) <= limit
	}
	q, ok := r.unary(limit)
	if !ok {
		return 0, false
	}
	rem, ok := r.read(k)
	return q<<k | rem, ok
}

// gamma reads a value written by bitWriter.gamma, failing past the end or
// past 64 bits.
func (r *bitReader) gamma() (uint64, bool) {
	w, avail := r.peek()
	if z := uint(bits.LeadingZeros64(w)); 2*z+1 <= avail {
		r.pos += 2*z + 1
		return w >> (63 - 2*z), true
	}
	z, ok := r.zeros(63)
	if !ok {
		return 0, false
	}
	rest, ok := r.read(z)
	return 1<<z | rest, ok
}

// zeros counts zero bits up to a one, which it consumes, failing past
// limit zeros or the end.
func (r *bitReader) zeros(limit uint) (uint, bool) {
	var n uint
	for {
		w, avail := r.peek()
		if avail == 0 {
			return 0, false
		}
		z := uint(bits.LeadingZeros64(w))
		if z < avail {
			n += z
			r.pos += z + 1
			return n, n <= limit
		}
		n += avail
		r.pos += avail
		if n > limit {
			return 0, false
		}
	}
}

// riceParam returns the Rice parameter, at most maxK, that codes gaps in
// the fewest bits: of those near the one the mean gap suggests.
func riceParam(gaps []uint32, maxK uint) uint {
	if len(gaps) == 0 {
		return 0
	}
	var sum uint64
	for _, g := range gaps {
		sum += uint64(g)
	}
	guess := uint(bits.Len64(sum / uint64(len(gaps))))
	best, bestBits := uint(0), uint64(1<<63)
	for k := min(max(guess, 2)-2, maxK); k <= min(guess+1, maxK); k++ {
		n := uint64(0)
		for _, g := range gaps {
			n += uint64(g>>k) + 1 + uint64(k)
		}
		if n < bestBits {
			best, bestBits = k, n
		}
	}
	return best
}

// encodePostingList appends the posting list of es to dst: es are of one
// bucket, sorted by key and content id, without duplicates. gaps is
// scratch space, returned for reuse.
func encodePostingList(dst []byte, es []postingEntry, gaps []uint32) ([]byte, []uint32) {
	gaps = gaps[:0]
	if len(es) == 0 {
		return dst, gaps
	}
	var maxCID uint32
	for i, e := range es {
		low := e.key & (1<<lowBits - 1)
		switch {
		case i == 0:
			gaps = append(gaps, low)
		case e.key != es[i-1].key:
			gaps = append(gaps, low-es[i-1].key&(1<<lowBits-1)-1)
		}
		maxCID = max(maxCID, e.cid)
	}
	k := riceParam(gaps, lowBits)
	cb := uint(max(bits.Len32(maxCID), 1))
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	dst = append(dst, byte(k), byte(cb))
	w := bitWriter{buf: dst}
	g := 0
	for i, e := range es {
		if i > 0 {
			if e.key == es[i-1].key {
				w.write(0, 1)
			} else {
				w.write(1, 1)
			}
		}
		if i == 0 || e.key != es[i-1].key {
			w.rice(uint64(gaps[g]), k)
			g++
		}
		w.write(uint64(e.cid), cb)
		switch e.weight {
		case 1:
			w.write(0, 1)
		case tombstone:
			w.write(3, 2)
		default:
			w.write(2, 2)
			w.gamma(e.weight - 1) // at least 1
		}
	}
	return w.flush(), gaps
}

// decodePostingList appends the postings of v, the posting list of bucket
// b, to dst. tombstones says whether removals may appear (in a merge
// operand; a list as readers see it has none).
func decodePostingList(dst []postingEntry, b uint32, v []byte, tombstones bool) ([]postingEntry, error) {
	if len(v) == 0 {
		return dst, nil
	}
	n, m := binary.Uvarint(v)
	if m <= 0 || n == 0 || len(v) < m+2 {
		return dst, fmt.Errorf("%w: posting list %x: bad header", ErrCorrupt, v)
	}
	k, cb := uint(v[m]), uint(v[m+1])
	if k > lowBits || cb < 1 || cb > 32 || n > uint64(len(v))*8 {
		return dst, fmt.Errorf("%w: posting list %x: bad header", ErrCorrupt, v)
	}
	// A short list is read from a copy padded with zeros, so that every
	// peek reads a whole word; a long one only near its end reads bytes
	// one at a time. The reader never looks past cap(r.b).
	body := v[m+2:]
	r := bitReader{b: body[:len(body):len(body)]}
	var pad [64 + 8]byte
	if len(body) <= 64 {
		copy(pad[:], body)
		r.b = pad[: len(body) : len(body)+8]
	}
	bad := func(what string) error {
		return fmt.Errorf("%w: posting list of bucket %x: %s at posting %d", ErrCorrupt, b, what, len(dst))
	}
	var low uint64
	high := uint64(b) << lowBits
	start := len(dst)
	for i := uint64(0); i < n; i++ {
		newKey := i == 0
		if i > 0 {
			bit, ok := r.bit()
			if !ok {
				return dst, bad("truncated")
			}
			newKey = bit
		}
		if newKey {
			q, ok := r.unary(1 << lowBits >> k)
			if !ok {
				return dst, bad("bad key gap")
			}
			rem, ok := r.read(k)
			if !ok {
				return dst, bad("truncated")
			}
			gap := q<<k | rem
			if i > 0 {
				gap += low + 1
			}
			if gap >= 1<<lowBits {
				return dst, bad("key out of its bucket")
			}
			low = gap
		}
		cid, ok := r.read(cb)
		if !ok {
			return dst, bad("truncated")
		}
		e := postingEntry{key: uint32(high | low), cid: uint32(cid)}
		if !newKey && e.cid <= dst[len(dst)-1].cid {
			return dst, bad("content ids out of order")
		}
		w, ok := r.bit()
		if !ok {
			return dst, bad("truncated")
		}
		if !w {
			e.weight = 1
		} else {
			t, ok := r.bit()
			if !ok {
				return dst, bad("truncated")
			}
			if t {
				if !tombstones {
					return dst, bad("removed posting")
				}
				e.weight = tombstone
			} else {
				z := uint(0)
				for {
					b, ok := r.bit()
					if !ok || z > 63 {
						return dst, bad("bad weight")
					}
					if b {
						break
					}
					z++
				}
				rest, ok := r.read(z)
				if !ok {
					return dst, bad("truncated")
				}
				e.weight = (1<<z | rest) + 1
				if e.weight < 2 {
					return dst, bad("bad weight")
				}
			}
		}
		dst = append(dst, e)
	}
	if r.left() >= 8 || r.pos%8 != 0 && r.b[len(r.b)-1]&(1<<(8-r.pos%8)-1) != 0 {
		return dst[:start], bad("trailing bits")
	}
	return dst, nil
}

// postingMerger is the merge operator of posting lists.
var postingMerger = &pebble.Merger{
	Name: postingsMerger,
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		b, err := parseBucketKey(key)
		if err != nil {
			return nil, err
		}
		m := listMergers.Get().(*listMerger)
		m.bucket = b
		return m, m.add(value, 0)
	},
}

// listMerger merges the operands of one bucket: it decodes each as it
// comes, ranked by age, and merges them at Finish. Each operand is a
// sorted list, so Finish merges the runs pairwise, in log2(operands)
// passes, rather than sorting their concatenation. Finish returns it as
// the closer of its result, and Close puts it back in listMergers.
type listMerger struct {
	bucket uint32
	es     []rankedPosting
	// runs holds where each operand's postings begin in es; each is in
	// order, as decodePostingList checks.
	runs         []int
	tmp          []rankedPosting
	scratch      []postingEntry
	out          []byte
	gaps         []uint32
	newer, older int
	// raw is the first operand as it came, and tombs whether it holds a
	// tombstone: a merge of that operand alone (a read of a compacted
	// bucket) returns it as it is.
	raw   []byte
	tombs bool
}

var listMergers = sync.Pool{New: func() any { return new(listMerger) }}

// Close recycles the merger, and the result Finish returned.
func (m *listMerger) Close() error {
	if cap(m.es) <= 1<<16 && cap(m.tmp) <= 1<<16 && cap(m.out) <= 1<<20 && cap(m.raw) <= 1<<20 {
		m.es, m.scratch, m.out = m.es[:0], m.scratch[:0], m.out[:0]
		m.runs, m.tmp, m.raw = m.runs[:0], m.tmp[:0], m.raw[:0]
		m.newer, m.older = 0, 0
		listMergers.Put(m)
	}
	return nil
}

type rankedPosting struct {
	postingEntry
	rank int // higher is newer
}

func (m *listMerger) add(v []byte, rank int) error {
	var err error
	m.scratch, err = decodePostingList(m.scratch[:0], m.bucket, v, true)
	if err != nil {
		return err
	}
	if len(m.runs) == 0 {
		m.raw = append(m.raw[:0], v...)
		m.tombs = false
		for _, e := range m.scratch {
			m.tombs = m.tombs || e.weight == tombstone
		}
	}
	m.runs = append(m.runs, len(m.es))
	for _, e := range m.scratch {
		m.es = append(m.es, rankedPosting{e, rank})
	}
	return nil
}

// compareRanked orders postings by key and content id, the newest first
// among equal ones.
func compareRanked(a, b rankedPosting) int {
	if c := comparePostings(a.postingEntry, b.postingEntry); c != 0 {
		return c
	}
	return b.rank - a.rank
}

// order puts m.es in compareRanked order by merging its runs, each
// sorted, pairwise.
func (m *listMerger) order() {
	if len(m.runs) < 2 {
		return // one operand: in order, all of one rank
	}
	bounds := append(m.runs, len(m.es))
	src := m.es
	dst := slices.Grow(m.tmp[:0], len(src))[:len(src)]
	for len(bounds) > 2 {
		next := bounds[:0]
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid := bounds[i], bounds[i+1]
			next = append(next, lo)
			if i+2 == len(bounds) { // an odd run out: carried over
				copy(dst[lo:mid], src[lo:mid])
				continue
			}
			mergeRuns(dst[lo:bounds[i+2]], src[lo:mid], src[mid:bounds[i+2]])
		}
		bounds = append(next, len(src))
		src, dst = dst, src
	}
	m.es, m.tmp = src, dst
	m.runs = bounds[:0]
}

// mergeRuns merges a and b, each in compareRanked order, into dst, whose
// length is theirs together.
func mergeRuns(dst, a, b []rankedPosting) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if compareRanked(a[i], b[j]) <= 0 {
			dst[k] = a[i]
			i++
		} else {
			dst[k] = b[j]
			j++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

func (m *listMerger) MergeNewer(v []byte) error { m.newer++; return m.add(v, m.newer) }
func (m *listMerger) MergeOlder(v []byte) error { m.older--; return m.add(v, m.older) }

// Finish keeps the newest posting of each (key, content id) and, when the
// merge includes the oldest operand, drops the tombstones. A bucket left
// with no posting keeps an empty list: the merger does not delete keys
// (Pebble v2's compaction iterator fails an assertion on the key after a
// deleted merge result).
func (m *listMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	if len(m.runs) == 1 && !(includesBase && m.tombs) {
		return m.raw, m, nil // one list, decoded and in order: as it is
	}
	m.order()
	out := m.scratch[:0]
	for i, e := range m.es {
		if i > 0 && comparePostings(e.postingEntry, m.es[i-1].postingEntry) == 0 {
			continue // an older version
		}
		if includesBase && e.weight == tombstone {
			continue
		}
		out = append(out, e.postingEntry)
	}
	m.out, m.gaps = encodePostingList(m.out[:0], out, m.gaps)
	return m.out, m, nil
}

// scanPostings calls fn for every posting in r, in (key, content id)
// order. It stops at fn's first error, or at an undecodable posting list,
// and returns it.
func scanPostings(r pebble.Reader, fn func(p postingEntry) error) error {
	var list []postingEntry
	lo, hi := keyspace(prefixPosting)
	return scan(r, lo, hi, func(k, v []byte) error {
		b, err := parseBucketKey(k)
		if err != nil {
			return err
		}
		if list, err = decodePostingList(list[:0], b, v, false); err != nil {
			return err
		}
		for _, p := range list {
			if err := fn(p); err != nil {
				return err
			}
		}
		return nil
	})
}
