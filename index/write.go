package index

import (
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Put adds the file at meta.Path with sketch sk, or replaces it when the
// path is indexed already (keeping its file id). The old postings are
// removed through the file's forward list; the new record, forward list,
// postings, identical-content key and inode key are written (the old
// identical-content and inode keys deleted when they change), all in one
// atomic batch.
// Put reads nothing but the file's old path key, record and forward list:
// its writes are blind. sk's features need not be sorted (they are mapped to
// fingerprint keys, sorted and merged); sk.Params must be zero or equal the
// index's, else the error wraps ErrParamsMismatch. Put does not retain sk.
func (ix *Index) Put(meta FileMeta, sk *fingerprint.Sketch) (FileRecord, error) {
	rec, err := ix.put(meta, sk)
	if err != nil {
		return FileRecord{}, fmt.Errorf("index.Put %q: %w", meta.Path, err)
	}
	return rec, nil
}

func (ix *Index) put(meta FileMeta, sk *fingerprint.Sketch) (FileRecord, error) {
	if err := ix.beginWrite(); err != nil {
		return FileRecord{}, err
	}
	defer ix.endWrite()
	if meta.Path == "" {
		return FileRecord{}, errors.New("empty path")
	}
	entries, err := ix.sketchEntries(sk)
	if err != nil {
		return FileRecord{}, err
	}
	if len(entries) > math.MaxUint32 {
		return FileRecord{}, errors.New("too many features")
	}

	old, oldEntries, found, err := ix.loadFile(ix.db, meta.Path)
	if err != nil {
		return FileRecord{}, err
	}
	id := old.ID
	if !found {
		if ix.nextID > math.MaxUint32 {
			return FileRecord{}, errors.New("file ids exhausted: rebuild the index")
		}
		id = uint32(ix.nextID)
	}
	rec := FileRecord{
		ID:       id,
		FileMeta: meta,
		Summary:  sk.Summary,
		Weight:   totalWeight(entries),
		Features: uint32(len(entries)),
	}
	if lvl := ix.params.Level(sk.Size); lvl > 0 {
		rec.Level = uint8(lvl)
		rec.LevelWeights = levelWeights(entries, lvl, ix.params.Bits)
	}

	w := ix.newBatch()
	defer w.close()
	w.diffPostings(id, oldEntries, entries)
	if found && old.Strong != rec.Strong {
		w.delete(strongKey(old.Strong, id))
	}
	w.set(strongKey(rec.Strong, id), nil)
	if found && (old.Dev != rec.Dev || old.Ino != rec.Ino) {
		w.delete(inodeKey(old.Dev, old.Ino, id))
	}
	w.set(inodeKey(rec.Dev, rec.Ino, id), nil)
	w.set(recordKey(id), encodeRecord(nil, &rec))
	w.set(forwardKey(id), encodeForward(nil, entries))
	if !found {
		w.set(pathKey(meta.Path), encodeID(id))
		w.delta.Files++
	}
	w.delta.Bytes += int64(fileBytes(rec.FileMeta)) - int64(fileBytes(old.FileMeta))
	w.delta.Features += int64(rec.Features) - int64(old.Features)
	if err := w.commit(); err != nil {
		return FileRecord{}, err
	}
	if !found {
		ix.nextID++
	}
	return rec, nil
}

// Remove removes the file at path, in one atomic batch. It returns an
// error wrapping ErrNotFound when path is not indexed.
func (ix *Index) Remove(path string) error {
	if err := ix.remove(path); err != nil {
		return fmt.Errorf("index.Remove %q: %w", path, err)
	}
	return nil
}

func (ix *Index) remove(path string) error {
	if err := ix.beginWrite(); err != nil {
		return err
	}
	defer ix.endWrite()
	old, oldEntries, found, err := ix.loadFile(ix.db, path)
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	w := ix.newBatch()
	defer w.close()
	w.removeFile(old, oldEntries)
	w.delete(pathKey(path))
	return w.commit()
}

// Rename moves the file at oldPath to meta.Path, with meta as its new
// metadata, in one atomic batch. The content is taken to be unchanged: the
// file keeps its id, summary and postings. A rename within a filesystem
// keeps the file's device and inode, and so its inode key; when meta names
// another device or inode (a move across filesystems, which copies the
// file), the inode key follows it. A file indexed at meta.Path already is
// removed in the same batch, with all its keys. oldPath may equal
// meta.Path, to update the metadata only. It returns an error wrapping
// ErrNotFound when oldPath is not indexed.
func (ix *Index) Rename(oldPath string, meta FileMeta) error {
	if err := ix.rename(oldPath, meta); err != nil {
		return fmt.Errorf("index.Rename %q to %q: %w", oldPath, meta.Path, err)
	}
	return nil
}

func (ix *Index) rename(oldPath string, meta FileMeta) error {
	if err := ix.beginWrite(); err != nil {
		return err
	}
	defer ix.endWrite()
	if meta.Path == "" {
		return errors.New("empty path")
	}
	rec, found, err := ix.lookup(ix.db, oldPath)
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	w := ix.newBatch()
	defer w.close()
	if meta.Path != oldPath {
		target, targetEntries, found, err := ix.loadFile(ix.db, meta.Path)
		if err != nil {
			return err
		}
		if found {
			w.removeFile(target, targetEntries)
		}
		w.delete(pathKey(oldPath))
		w.set(pathKey(meta.Path), encodeID(rec.ID))
	}
	if meta.Dev != rec.Dev || meta.Ino != rec.Ino {
		w.delete(inodeKey(rec.Dev, rec.Ino, rec.ID))
		w.set(inodeKey(meta.Dev, meta.Ino, rec.ID), nil)
	}
	w.delta.Bytes += int64(fileBytes(meta)) - int64(fileBytes(rec.FileMeta))
	rec.FileMeta = meta
	w.set(recordKey(rec.ID), encodeRecord(nil, &rec))
	return w.commit()
}

// beginWrite counts a write in and takes the write lock; endWrite undoes
// both.
func (ix *Index) beginWrite() error {
	if err := ix.acquire(); err != nil {
		return err
	}
	if ix.readOnly {
		ix.release()
		return ErrReadOnly
	}
	ix.wmu.Lock()
	return nil
}

func (ix *Index) endWrite() {
	ix.wmu.Unlock()
	ix.release()
}

// batch is one write under construction: a Pebble batch and the change it
// makes to the counts. Its methods must be called with ix.wmu held.
type batch struct {
	ix    *Index
	b     *pebble.Batch
	delta struct{ Files, Features, Bytes int64 }
	key   []byte
	val   []byte
	err   error // first error of a batch operation
}

func (ix *Index) newBatch() *batch { return &batch{ix: ix, b: ix.db.NewBatch()} }

func (w *batch) close() { _ = w.b.Close() }

// set and delete record the first error; commit reports it. Pebble copies
// keys and values into the batch, so callers may reuse their buffers.
func (w *batch) set(k, v []byte) {
	if err := w.b.Set(k, v, nil); err != nil && w.err == nil {
		w.err = err
	}
}

func (w *batch) delete(k []byte) {
	if err := w.b.Delete(k, nil); err != nil && w.err == nil {
		w.err = err
	}
}

// setPosting writes the posting of entry e in file id.
func (w *batch) setPosting(id uint32, e entry) {
	w.key = appendPostingKey(w.key[:0], e.key, id)
	w.val = encodePosting(w.val[:0], e.weight)
	w.set(w.key, w.val)
}

// deletePosting deletes the posting of fingerprint key in file id.
func (w *batch) deletePosting(id, key uint32) {
	w.key = appendPostingKey(w.key[:0], key, id)
	w.delete(w.key)
}

// diffPostings turns the postings of file id from those of old into those
// of new (both canonical): it deletes the postings of keys only old holds,
// and writes those of keys only new holds or whose weight changed. Nothing
// is read: how many files hold a fingerprint is not stored anywhere but in
// its postings.
func (w *batch) diffPostings(id uint32, old, new []entry) {
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case j == len(new) || i < len(old) && old[i].key < new[j].key:
			w.deletePosting(id, old[i].key)
			i++
		case i == len(old) || new[j].key < old[i].key:
			w.setPosting(id, new[j])
			j++
		default:
			if old[i].weight != new[j].weight {
				w.setPosting(id, new[j])
			}
			i++
			j++
		}
	}
}

// removeFile deletes everything of file rec but its path key.
func (w *batch) removeFile(rec FileRecord, es []entry) {
	w.diffPostings(rec.ID, es, nil)
	w.delete(strongKey(rec.Strong, rec.ID))
	w.delete(inodeKey(rec.Dev, rec.Ino, rec.ID))
	w.delete(recordKey(rec.ID))
	w.delete(forwardKey(rec.ID))
	w.delta.Files--
	w.delta.Features -= int64(rec.Features)
	w.delta.Bytes -= int64(fileBytes(rec.FileMeta))
}

// commit applies the batch without syncing and updates the counts.
func (w *batch) commit() error {
	if w.err != nil {
		return w.err
	}
	if err := w.b.Commit(pebble.NoSync); err != nil {
		return err
	}
	ix := w.ix
	ix.countsMu.Lock()
	ix.counts.Files = addDelta(ix.counts.Files, w.delta.Files)
	ix.counts.Features = addDelta(ix.counts.Features, w.delta.Features)
	ix.counts.Bytes = addDelta(ix.counts.Bytes, w.delta.Bytes)
	ix.countsMu.Unlock()
	return nil
}

func addDelta(v uint64, d int64) uint64 {
	if d < 0 && uint64(-d) > v {
		return 0
	}
	return v + uint64(d)
}

// loadFile reads the record and forward list of the file at path.
func (ix *Index) loadFile(r pebble.Reader, path string) (FileRecord, []entry, bool, error) {
	rec, found, err := ix.lookup(r, path)
	if err != nil || !found {
		return rec, nil, found, err
	}
	v, found, err := getValue(r, forwardKey(rec.ID))
	if err != nil {
		return rec, nil, false, err
	}
	if !found {
		return rec, nil, false, fmt.Errorf("%w: file id %d (%q) has no forward list", ErrCorrupt, rec.ID, path)
	}
	es, err := decodeForward(v)
	if err != nil {
		return rec, nil, false, fmt.Errorf("forward list of file id %d: %w", rec.ID, err)
	}
	return rec, es, true, nil
}
