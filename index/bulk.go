package index

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/zeebo/xxh3"
)

// A Bulk is the memory of a bulk load (a daemon's first scan) into an index
// that held no content when the load began: the strong hashes of the files
// it has met, by their first 8 bytes, each with the content the index holds
// for it once known.
//
// The loader takes it with NewBulk, passes it to PutFile with every file
// of the load (FileWrite.Bulk), and ends it with End. PutFile asks it
// whether a file's bytes are new to the load: a copy of bytes met before
// joins their content by id, without a search or a sketch. And it skips
// the search for an equal content of a new file (a seek in the hash keys,
// under the write lock) when it can tell that the index holds none. It
// can while every content made or rewritten in place since the Bulk was
// taken was made by a PutFile with this Bulk: each such write records its
// strong hash here under the write lock, so a hash not recorded is held
// by no content. One write by anything else (a Put, another Bulk) and
// PutFile searches as Put does from then on.
//
// A Bulk also spares PutFile the lookup of the file's path
// (a read of its path key, under the write lock), for a path the index
// can tell has no record: the index held no file when the Bulk was taken,
// and until End every write that gives a path a record, by whichever
// writer, adds the path to the Bulk's filter first. A path not in the
// filter has no record; one in it (or a false positive) is looked up.
type Bulk struct {
	ix   *Index
	gen0 uint64 // ix.contentGen when taken
	own  uint64 // guarded by ix.wmu: contents made or rewritten by a put with b since

	// paths holds every path given a record since the Bulk was taken,
	// while it is ix.bulk. Guarded by ix.wmu.
	paths pathFilter

	mu sync.Mutex
	// m maps the first 8 bytes of a strong hash to the id of a content
	// that had it, or 0: met by Add, no content recorded.
	m map[uint64]uint32
}

// NewBulk returns a Bulk for a load into ix, or nil when ix holds a
// content or a file already. The index keeps the filter of paths of one
// Bulk at a time: a Bulk taken ends the one before it.
func (ix *Index) NewBulk() (*Bulk, error) {
	if err := ix.beginWrite(); err != nil {
		return nil, fmt.Errorf("index.NewBulk: %w", err)
	}
	defer ix.endWrite()
	ix.countsMu.Lock()
	empty := ix.counts.Contents == 0 && ix.counts.Files == 0
	ix.countsMu.Unlock()
	if !empty {
		return nil, nil
	}
	b := &Bulk{ix: ix, gen0: ix.contentGen, m: make(map[uint64]uint32)}
	ix.bulk = b
	return b, nil
}

// End ends the load: the index stops adding paths to b's filter, and
// PutFile with b looks up every path from then on. b may be nil.
func (b *Bulk) End() {
	if b == nil || b.ix.acquire() != nil {
		return // closed: nothing adds to the filter any more
	}
	defer b.ix.release()
	b.ix.wmu.Lock()
	defer b.ix.wmu.Unlock()
	if b.ix.bulk == b {
		b.ix.bulk = nil
	}
	b.paths = pathFilter{}
}

// notePath adds the path whose pathHash is h to the filter of the current
// Bulk, if any: a write is about to give it a record. Called with ix.wmu
// held, before the write's batch commits (a failed commit leaves a path
// filtered for nothing).
func (ix *Index) notePath(h pathKeyHash) {
	if ix.bulk != nil {
		ix.bulk.paths.add(h)
	}
}

// pathUnheld reports whether the index holds no record of the path whose
// pathHash is h: it held none when b was taken, and no write has given it
// one since. Called with ix.wmu held.
func (b *Bulk) pathUnheld(ix *Index, h pathKeyHash) bool {
	return b != nil && ix.bulk == b && !b.paths.mayHold(h)
}

// A pathKeyHash is the 128-bit hash of a path that the filter of a Bulk's
// paths holds; it is taken once per write, for both the test and the add.
type pathKeyHash [16]byte

func pathHash(path string) pathKeyHash { return xxh3.HashString128(path).Bytes() }

// A pathFilter is a Bloom filter of paths that grows with them: a chain of
// filters, each for twice as many paths as the one before it at the same
// false-positive rate, so that it holds any number of paths in about 10
// bits each. It has no false negatives. Its keys are the paths' 128-bit
// hashes, which its filters hash again.
type pathFilter struct {
	filters []*bloom.BloomFilter
	n, max  uint // paths in the last filter, and its capacity
}

const (
	pathFilterFirst = 1 << 16 // paths in the first filter
	pathFilterFP    = 0.01    // each filter's false-positive rate
)

func (f *pathFilter) add(h pathKeyHash) {
	if len(f.filters) == 0 || f.n == f.max {
		f.max = max(2*f.max, pathFilterFirst)
		f.filters = append(f.filters, bloom.NewWithEstimates(f.max, pathFilterFP))
		f.n = 0
	}
	f.filters[len(f.filters)-1].Add(h[:])
	f.n++
}

func (f *pathFilter) mayHold(h pathKeyHash) bool {
	for _, g := range f.filters {
		if g.Test(h[:]) {
			return true
		}
	}
	return false
}

func strongKey(h [32]byte) uint64 { return binary.LittleEndian.Uint64(h[:8]) }

// add records that the load met a file whose strong hash is h, and reports
// whether no file met before shared h's first 8 bytes; when one did, it
// returns the content recorded for them (0 while unknown), which may be
// another's whose hash begins alike: putCopy checks the whole hash.
func (b *Bulk) add(h [32]byte) (cid uint32, first bool) {
	k := strongKey(h)
	b.mu.Lock()
	defer b.mu.Unlock()
	if cid, ok := b.m[k]; ok {
		return cid, false
	}
	b.m[k] = 0
	return 0, true
}

// setContent records cid as the content of the files with strong hash h.
func (b *Bulk) setContent(h [32]byte, cid uint32) {
	b.mu.Lock()
	b.m[strongKey(h)] = cid
	b.mu.Unlock()
}

// unheld reports whether the index holds no content whose strong hash is
// h. Called with ix.wmu held.
func (b *Bulk) unheld(ix *Index, h [32]byte) bool {
	if b == nil || b.ix != ix || ix.contentGen-b.gen0 != b.own {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[strongKey(h)] == 0
}
