package index

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/sif-dev/sif/index/fingerprint"
)

// A Bulk is the memory of a bulk load (a daemon's first scan) into an index
// that held no content when the load began: the strong hashes of the files
// it has met, by their first 8 bytes, each with the content the index holds
// for it once known.
//
// It serves the loader, which asks Add whether a file's bytes are new to
// the load (and reads no sketch for a copy, which joins its content by id
// through PutCopyOf), and the index: PutBulk skips the search for an equal
// content (a seek in the hash keys, under the write lock) when it can tell
// that the index holds none. It can while every content made or rewritten
// in place since the Bulk was taken was made by a PutBulk with this Bulk:
// each such write records its strong hash here under the write lock, so a
// hash not recorded is held by no content. One write by anything else (a
// Put, another Bulk) and PutBulk searches as Put does from then on.
type Bulk struct {
	ix   *Index
	gen0 uint64 // ix.contentGen when taken
	own  uint64 // guarded by ix.wmu: contents made or rewritten by PutBulk with b since

	mu sync.Mutex
	// m maps the first 8 bytes of a strong hash to the id of a content
	// that had it, or 0: met by Add, no content recorded.
	m map[uint64]uint32
}

// NewBulk returns a Bulk for a load into ix, or nil when ix holds a
// content already (any file at all).
func (ix *Index) NewBulk() (*Bulk, error) {
	if err := ix.beginWrite(); err != nil {
		return nil, fmt.Errorf("index.NewBulk: %w", err)
	}
	defer ix.endWrite()
	ix.countsMu.Lock()
	contents := ix.counts.Contents
	ix.countsMu.Unlock()
	if contents != 0 {
		return nil, nil
	}
	return &Bulk{ix: ix, gen0: ix.contentGen, m: make(map[uint64]uint32)}, nil
}

func strongKey(h [32]byte) uint64 { return binary.LittleEndian.Uint64(h[:8]) }

// Add records that the load met a file whose strong hash is h, and reports
// whether no file met before shared h's first 8 bytes; when one did, it
// returns the content recorded for them (0 while unknown), which may be
// another's whose hash begins alike: PutCopyOf checks the whole hash.
func (b *Bulk) Add(h [32]byte) (cid uint32, first bool) {
	k := strongKey(h)
	b.mu.Lock()
	defer b.mu.Unlock()
	if cid, ok := b.m[k]; ok {
		return cid, false
	}
	b.m[k] = 0
	return 0, true
}

// SetContent records cid as the content of the files with strong hash h.
func (b *Bulk) SetContent(h [32]byte, cid uint32) {
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

// PutBulk is PutDeferred for a file of the load b remembers (b may be
// nil, or of another index: then it is PutDeferred). It searches for an
// equal content only when the index may hold one (see Bulk), and records
// the file's content in b.
func (ix *Index) PutBulk(meta FileMeta, sk *fingerprint.Sketch, b *Bulk) (FileRecord, error) {
	rec, err := ix.put(meta, sk, true, b)
	if err != nil {
		return FileRecord{}, fmt.Errorf("index.PutBulk %q: %w", meta.Path, err)
	}
	return rec, nil
}
