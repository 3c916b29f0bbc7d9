package index

import (
	"fmt"

	"github.com/sif-dev/sif/index/fingerprint"
)

// The steps PutFile chooses among, one at a time, so that tests can pin
// each: a writer calls PutFile.

// PutDeferred is Put leaving the postings of a new content pending
// (pending.go): PutFile with FileWrite.Deferred, for a file it sketches.
func (ix *Index) PutDeferred(meta FileMeta, sk *fingerprint.Sketch) (FileRecord, error) {
	rec, err := ix.put(meta, sk, true, nil)
	if err != nil {
		return FileRecord{}, fmt.Errorf("index.PutDeferred %q: %w", meta.Path, err)
	}
	return rec, nil
}

// PutBulk is PutDeferred for a file of the load b remembers (b may be
// nil, or of another index: then it is PutDeferred): PutFile's step 3
// with FileWrite.Bulk b.
func (ix *Index) PutBulk(meta FileMeta, sk *fingerprint.Sketch, b *Bulk) (FileRecord, error) {
	rec, err := ix.put(meta, sk, true, b)
	if err != nil {
		return FileRecord{}, fmt.Errorf("index.PutBulk %q: %w", meta.Path, err)
	}
	return rec, nil
}

// PutCopy joins the file meta to the content of size bytes and strong
// hash strong, if the index holds one, and reports whether it did:
// PutFile's step 2.
func (ix *Index) PutCopy(meta FileMeta, size int64, strong [32]byte) (FileRecord, bool, error) {
	rec, ok, err := ix.putCopy(meta, 0, size, strong, nil)
	if err != nil {
		return FileRecord{}, false, fmt.Errorf("index.PutCopy %q: %w", meta.Path, err)
	}
	return rec, ok, nil
}

// PutCopyOf joins the file meta to content cid, if the index still holds
// it with size bytes and strong hash strong, and reports whether it did:
// PutFile's step 1.
func (ix *Index) PutCopyOf(meta FileMeta, cid uint32, size int64, strong [32]byte, b *Bulk) (FileRecord, bool, error) {
	if cid == 0 {
		return FileRecord{}, false, nil // no content has id 0
	}
	rec, ok, err := ix.putCopy(meta, cid, size, strong, b)
	if err != nil {
		return FileRecord{}, false, fmt.Errorf("index.PutCopyOf %q: %w", meta.Path, err)
	}
	return rec, ok, nil
}

// Add is Bulk.add: it records that the load met bytes of strong hash h.
func (b *Bulk) Add(h [32]byte) (cid uint32, first bool) { return b.add(h) }
