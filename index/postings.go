package index

import (
	"encoding/binary"
	"fmt"
	"io"
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
// The bytes of a posting list, and how they are encoded and decoded, are
// in postings_codec.go.
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
