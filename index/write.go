package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Put adds the file at meta.Path with sketch sk, or replaces it when the
// path is indexed already (keeping its file id). The old postings are
// removed through the file's forward list; the new record, forward list,
// postings, identical-content key and fingerprint file-counts are written,
// all in one atomic batch. sk's features need not be sorted (they are
// sorted and merged by hash if not); sk.Params must be zero or equal the
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
	features, err := ix.sketchFeatures(sk)
	if err != nil {
		return FileRecord{}, err
	}
	if len(features) > math.MaxUint32 {
		return FileRecord{}, errors.New("too many features")
	}

	old, oldFeatures, found, err := ix.loadFile(ix.db, meta.Path)
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
		Weight:   totalWeight(ix.params, features),
		Features: uint32(len(features)),
	}

	w := ix.newBatch()
	defer w.close()
	if err := w.diffPostings(id, oldFeatures, features); err != nil {
		return FileRecord{}, err
	}
	if found && old.Strong != rec.Strong {
		w.delete(strongKey(old.Strong, id))
	}
	w.set(strongKey(rec.Strong, id), nil)
	w.set(recordKey(id), encodeRecord(nil, &rec))
	w.set(forwardKey(id), encodeForward(nil, features, ix.knowsLengths))
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
	old, oldFeatures, found, err := ix.loadFile(ix.db, path)
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	w := ix.newBatch()
	defer w.close()
	if err := w.removeFile(old, oldFeatures); err != nil {
		return err
	}
	w.delete(pathKey(path))
	return w.commit()
}

// Rename moves the file at oldPath to meta.Path, with meta as its new
// metadata, in one atomic batch. The content is taken to be unchanged: the
// file keeps its id, summary and postings. A file indexed at meta.Path
// already is removed in the same batch. oldPath may equal meta.Path, to
// update the metadata only. It returns an error wrapping ErrNotFound when
// oldPath is not indexed.
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
		target, targetFeatures, found, err := ix.loadFile(ix.db, meta.Path)
		if err != nil {
			return err
		}
		if found {
			if err := w.removeFile(target, targetFeatures); err != nil {
				return err
			}
		}
		w.delete(pathKey(oldPath))
		w.set(pathKey(meta.Path), encodeID(rec.ID))
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
	ix     *Index
	b      *pebble.Batch
	it     *pebble.Iterator // over the committed postings, opened on first use
	prefix []byte
	delta  struct{ Files, Features, Fingerprints, Bytes int64 }
	key    []byte
	val    []byte
	err    error // first error of a batch operation
}

func (ix *Index) newBatch() *batch { return &batch{ix: ix, b: ix.db.NewBatch()} }

func (w *batch) close() {
	if w.it != nil {
		_ = w.it.Close()
	}
	_ = w.b.Close()
}

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

// addPosting writes the posting of f in file id (which does not hold f
// yet), and counts the file in f's file-count.
func (w *batch) addPosting(id uint32, f fingerprint.Feature) error {
	w.setPosting(id, f)
	return w.changeCount(id, f.Hash, +1)
}

func (w *batch) setPosting(id uint32, f fingerprint.Feature) {
	w.key = appendPostingKey(w.key[:0], f.Hash, id)
	w.val = encodePosting(w.val[:0], f, w.ix.knowsLengths)
	w.set(w.key, w.val)
}

// removePosting deletes the posting of hash in file id and uncounts the file
// from the hash's file-count.
func (w *batch) removePosting(id uint32, hash uint64) error {
	w.key = appendPostingKey(w.key[:0], hash, id)
	w.delete(w.key)
	return w.changeCount(id, hash, -1)
}

// changeCount adds delta (±1) to the file-count of hash as file id gains or
// loses it. A count is a merge operand in the common case, but it is Set to
// 1 when the first file gains the hash and deleted when the last loses it
// (whether others hold it is read from their postings, committed before
// this batch), so a merged count never reaches 0 (see countMerger) and a
// count cannot drift for longer than its fingerprint lives. A batch must
// change the count of a hash at most once.
func (w *batch) changeCount(id uint32, hash uint64, delta int64) error {
	others, err := w.othersHold(hash, id)
	if err != nil {
		return err
	}
	w.key = appendDFKey(w.key[:0], hash)
	switch {
	case others:
		w.val = encodeCount(w.val[:0], delta)
		if err := w.b.Merge(w.key, w.val, nil); err != nil && w.err == nil {
			w.err = err
		}
	case delta > 0:
		w.set(w.key, encodeCount(w.val[:0], 1))
		w.delta.Fingerprints++
	default:
		w.delete(w.key)
		w.delta.Fingerprints--
	}
	return nil
}

// othersHold reports whether a file other than id holds hash, in the
// committed state. It reads through one iterator per batch, with prefix
// seeks, so the tables that do not hold the hash are skipped on their bloom
// filters.
func (w *batch) othersHold(hash uint64, id uint32) (bool, error) {
	if w.it == nil {
		lo, hi := keyspace(prefixPosting)
		it, err := w.ix.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi, UseL6Filters: true})
		if err != nil {
			return false, err
		}
		w.it = it
	}
	w.prefix = appendPostingPrefix(w.prefix[:0], hash)
	for ok := w.it.SeekPrefixGE(w.prefix); ok && bytes.HasPrefix(w.it.Key(), w.prefix); ok = w.it.Next() {
		if k := w.it.Key(); len(k) != postingKeyLen || binary.BigEndian.Uint32(k[9:]) != id {
			return true, nil
		}
	}
	return false, w.it.Error()
}

// diffPostings turns the postings of file id from those of old into those
// of new (both canonical). A hash present in both is rewritten only when its
// count or length changed, and its file-count is untouched.
func (w *batch) diffPostings(id uint32, old, new []fingerprint.Feature) error {
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		var err error
		switch {
		case j == len(new) || i < len(old) && old[i].Hash < new[j].Hash:
			err = w.removePosting(id, old[i].Hash)
			i++
		case i == len(old) || new[j].Hash < old[i].Hash:
			err = w.addPosting(id, new[j])
			j++
		default:
			if old[i].Count != new[j].Count || w.ix.knowsLengths && old[i].Len != new[j].Len {
				w.setPosting(id, new[j])
			}
			i++
			j++
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// removeFile deletes everything of file rec but its path key.
func (w *batch) removeFile(rec FileRecord, features []fingerprint.Feature) error {
	if err := w.diffPostings(rec.ID, features, nil); err != nil {
		return err
	}
	w.delete(strongKey(rec.Strong, rec.ID))
	w.delete(recordKey(rec.ID))
	w.delete(forwardKey(rec.ID))
	w.delta.Files--
	w.delta.Features -= int64(rec.Features)
	w.delta.Bytes -= int64(fileBytes(rec.FileMeta))
	return nil
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
	ix.counts.Fingerprints = addDelta(ix.counts.Fingerprints, w.delta.Fingerprints)
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
func (ix *Index) loadFile(r pebble.Reader, path string) (FileRecord, []fingerprint.Feature, bool, error) {
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
	features, err := decodeForward(v, ix.knowsLengths)
	if err != nil {
		return rec, nil, false, fmt.Errorf("forward list of file id %d: %w", rec.ID, err)
	}
	return rec, features, true, nil
}
