package index

import (
	"errors"
	"fmt"

	"github.com/sif-dev/sif/index/fingerprint"
)

// A FileWrite is what a writer read of one regular file: all PutFile
// needs to bring the file into the index.
type FileWrite struct {
	// Meta is the file's metadata; Meta.Size is its size in bytes.
	Meta FileMeta
	// Strong is the SHA-256 of the file's bytes, or all zero when unknown:
	// then the file is never taken for a copy of another.
	Strong [32]byte
	// Sketch is the file's sketch when the reader made one as it read (a
	// file too large to keep whole), else nil.
	Sketch *fingerprint.Sketch
	// MakeSketch makes the file's sketch when Sketch is nil and the file
	// turns out not to be a copy of a content the index holds: a copy is
	// never sketched. PutFile calls it at most once, on its caller's
	// goroutine, holding no lock of the index.
	MakeSketch func() *fingerprint.Sketch
	// Deferred leaves the postings of a new content pending, to be written
	// many at a time (see pending.go): for a bulk load, such as a first
	// scan.
	Deferred bool
	// Bulk is the memory of the bulk load the file is part of (see Bulk),
	// or nil. PutFile asks it whether the load met the file's bytes
	// before, and records there the content the file gets.
	Bulk *Bulk
}

// PutFile adds the file w describes, or replaces it when its path is
// indexed already, by the cheapest write that gives it the right content:
//
//  1. When w.Bulk has met the file's bytes before and knows their
//     content, the file joins that content by its id, without a search
//     or a sketch, if the index still holds it (putCopy).
//  2. Otherwise, unless w.Bulk meets these bytes for the first time, the
//     file joins a content of its size and strong hash if the index holds
//     one, still without a sketch (putCopy). Bytes the load meets first
//     have no content yet, but for one a concurrent write of the same
//     bytes may be making, which step 3 finds.
//  3. Otherwise the file is sketched (w.Sketch, else w.MakeSketch) and
//     put as Put puts it, its postings left pending when w.Deferred, with
//     w.Bulk sparing the search for an equal content and the lookup of
//     its path while it can (put).
//
// Each step that writes does so in one atomic batch; a step that finds
// nothing to join writes nothing. The content the file gets is recorded
// in w.Bulk. PutFile returns the file's record.
func (ix *Index) PutFile(w FileWrite) (FileRecord, error) {
	rec, err := ix.putFile(w)
	if err != nil {
		return FileRecord{}, fmt.Errorf("index.PutFile %q: %w", w.Meta.Path, err)
	}
	return rec, nil
}

func (ix *Index) putFile(w FileWrite) (rec FileRecord, err error) {
	meta, b := w.Meta, w.Bulk
	var cid uint32 // the content the load met these bytes as, if known
	first := false
	if b != nil {
		cid, first = b.add(w.Strong)
	}
	copied := false
	if cid != 0 {
		if rec, copied, err = ix.putCopy(meta, cid, meta.Size, w.Strong, b); err != nil {
			return FileRecord{}, err
		}
	}
	if !copied && !first {
		if rec, copied, err = ix.putCopy(meta, 0, meta.Size, w.Strong, nil); err != nil {
			return FileRecord{}, err
		}
	}
	if !copied {
		sk := w.Sketch
		if sk == nil && w.MakeSketch != nil {
			sk = w.MakeSketch()
		}
		if sk == nil {
			return FileRecord{}, errors.New("no sketch of a file the index holds no copy of")
		}
		if rec, err = ix.put(meta, sk, w.Deferred, b); err != nil {
			return FileRecord{}, err
		}
	}
	if b != nil && rec.Content != cid {
		b.setContent(w.Strong, rec.Content)
	}
	return rec, nil
}

// putCopy adds the file at meta.Path, or replaces it when the path is
// indexed already, as a copy of a content the index holds: content cid
// when cid is not 0 (the caller knows it from another file with the same
// bytes), else the content it finds by its size and strong hash. Bytes
// with the same size and SHA-256 are taken to be the same bytes, whose
// sketch is the content's: the file joins the content as put would,
// without being sketched, in one atomic batch, and putCopy returns its
// record and true. When the index holds no such content (any more), or
// strong is all zero (unknown), nothing is written and putCopy returns
// false: the caller sketches the file and puts it.
//
// With cid 0, putCopy reads the hash keys of strong and a content's
// record for each content they name until one has the size and the whole
// strong hash, before it takes the write lock. Under it, it reads the
// content's record, and the file's old path key and records unless b, the
// Bulk of a load (or nil), tells that the path has none.
func (ix *Index) putCopy(meta FileMeta, cid uint32, size int64, strong [32]byte, b *Bulk) (FileRecord, bool, error) {
	if meta.Path == "" {
		return FileRecord{}, false, errors.New("empty path")
	}
	if strong == ([32]byte{}) {
		return FileRecord{}, false, nil
	}
	if cid == 0 {
		// The content is looked for before the write lock is taken, so
		// that a new content (the usual miss) costs writers no wait, and
		// confirmed under it by its record alone: a content lives as long
		// as its record.
		if err := ix.acquire(); err != nil {
			return FileRecord{}, false, err
		}
		var found bool
		var err error
		cid, found, err = ix.findCopy(size, strong)
		ix.release()
		if err != nil || !found {
			return FileRecord{}, false, err
		}
	}
	if err := ix.beginWrite(); err != nil {
		return FileRecord{}, false, err
	}
	defer ix.endWrite()
	var rec FileRecord
	ok, err := readContent(ix.db, cid, &rec)
	if err != nil || !ok || rec.Summary.Size != size || rec.Strong != strong {
		return FileRecord{}, false, err // gone meanwhile: the caller puts a sketch
	}
	rec.FileMeta = meta
	rec, err = ix.store(rec, cid, true, nil, false, b)
	return rec, err == nil, err
}

// findCopy returns the id of a content of size bytes whose strong hash is
// strong, if the index holds one. It reads the hash keys of strong, and a
// content's record for each content they name until one has the size and
// the strong hash.
func (ix *Index) findCopy(size int64, strong [32]byte) (cid uint32, found bool, err error) {
	return ix.findByHash(strong, func(_ uint32, have *FileRecord) (bool, error) {
		return have.Summary.Size == size && have.Strong == strong, nil
	})
}
