package index

import (
	"encoding/binary"
	"runtime"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

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
	ix.lockWrites()
	return nil
}

// writeSpin is how long a writer that finds the write lock taken stays
// runnable, yielding its processor, before it blocks on the lock.
var writeSpin = 200 * time.Microsecond

// lockWrites takes the write lock. The workers of a first scan take it
// once a file each, for a few microseconds. A worker that found it taken
// used to block at once: its processor, with nothing else to run, went to
// sleep, and the holder woke it on unlocking, which on a virtual machine
// takes tens of microseconds. With 2 workers on the module tree, the cores
// were idle a fifth of the scan. A writer now yields its processor to
// other goroutines and tries again, for up to writeSpin, and only then
// blocks: time to ready 0.86× and CPU 0.92× with 2 workers (medians of 9,
// run for run), 1 worker unchanged. A lock held longer (a Flush, a
// stalled commit) costs a waiter writeSpin of yielding.
func (ix *Index) lockWrites() {
	if ix.wmu.TryLock() {
		return
	}
	deadline := time.Now().Add(writeSpin)
	for !ix.wmu.TryLock() {
		if time.Now().After(deadline) {
			ix.wmu.Lock()
			return
		}
		runtime.Gosched()
	}
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
	delta struct{ Files, Features, Bytes, Contents, Postings int64 }
	// moves are the changes to the number of files of existing contents:
	// +1 when a file joins one, -1 when one leaves (a new content holds one
	// file, which needs no entry).
	moves []copyMove
	// postings counts the postings the batch sets or removes.
	postings int
	key      []byte
	val      []byte
	pend     []postingEntry
	gaps     []uint32
	err      error // first error of a batch operation
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

// diffPostings turns the postings of content cid from those of old into
// those of new (both canonical): it removes the postings of keys only old
// holds, and writes those of keys only new holds or whose weight changed,
// as one merge operand per bucket. Nothing is read: how many contents hold
// a fingerprint is not stored anywhere but in its postings.
func (w *batch) diffPostings(cid uint32, old, new []entry) {
	pend := w.pend[:0]
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case j == len(new) || i < len(old) && old[i].key < new[j].key:
			pend = append(pend, postingEntry{old[i].key, cid, tombstone})
			i++
		case i == len(old) || new[j].key < old[i].key:
			pend = append(pend, postingEntry{new[j].key, cid, new[j].weight})
			j++
		default:
			if old[i].weight != new[j].weight {
				pend = append(pend, postingEntry{new[j].key, cid, new[j].weight})
			}
			i++
			j++
		}
	}
	w.pend = pend
	w.mergePostings(pend)
}

// mergePostings merges es, sorted by key and content id, into their
// buckets: one operand per bucket.
func (w *batch) mergePostings(es []postingEntry) {
	for len(es) > 0 {
		b := bucketOf(es[0].key)
		n := 1
		for n < len(es) && bucketOf(es[n].key) == b {
			n++
		}
		w.key = appendBucketKey(w.key[:0], b)
		w.val, w.gaps = encodePostingList(w.val[:0], es[:n], w.gaps)
		if err := w.b.Merge(w.key, w.val, nil); err != nil && w.err == nil {
			w.err = err
		}
		w.postings += n
		es = es[n:]
	}
}

// setContent writes content cid as rec's content, with entries new, over
// a content with summary was and entries old (for a new content, nil and
// nil).
func (w *batch) setContent(cid uint32, rec *FileRecord, was *fingerprint.Summary, old, new []entry) {
	w.diffPostings(cid, old, new)
	w.putContent(cid, rec, was, old, new)
}

// setContentDeferred writes new content cid as rec's, with entries es,
// but not its postings, which the caller keeps pending (pending.go); the
// batch of the first content pending sets the pending key.
func (w *batch) setContentDeferred(cid uint32, rec *FileRecord, es []entry) {
	if w.ix.pend.from == 0 {
		w.set(metaPendingKey, binary.BigEndian.AppendUint32(nil, cid))
	}
	w.putContent(cid, rec, nil, nil, es)
}

// putContent writes everything of content cid but its postings, as
// setContent says.
func (w *batch) putContent(cid uint32, rec *FileRecord, was *fingerprint.Summary, old, new []entry) {
	if old == nil {
		w.delta.Contents++
	}
	w.delta.Postings += int64(len(new)) - int64(len(old))
	w.set(contentKey(cid), encodeContent(nil, rec))
	w.set(forwardKey(cid), encodeForward(nil, new))
	var oldStrong [32]byte
	if was != nil {
		oldStrong = was.Strong
	}
	w.moveHash(cid, oldStrong, rec.Strong)
	w.moveSimi(cid, was, &rec.Summary)
}

// removeContent deletes content cid, whose summary is sum and entries es,
// and its postings.
func (w *batch) removeContent(cid uint32, sum *fingerprint.Summary, es []entry) {
	w.diffPostings(cid, es, nil)
	w.dropContent(cid, sum, len(es))
}

// dropContent deletes everything of content cid, whose summary is sum and
// which has n postings, but its postings.
func (w *batch) dropContent(cid uint32, sum *fingerprint.Summary, n int) {
	w.delta.Contents--
	w.delta.Postings -= int64(n)
	w.delete(contentKey(cid))
	w.delete(forwardKey(cid))
	w.moveHash(cid, sum.Strong, [32]byte{})
	w.moveSimi(cid, sum, nil)
}

// moveSimi moves the SimiHash key of content cid from the skew key of
// summary old to that of new, in an index that keeps them; a nil summary
// is a content that does not exist (before it is made, after it is
// removed).
func (w *batch) moveSimi(cid uint32, old, new *fingerprint.Summary) {
	if !w.ix.simihash || old != nil && new != nil && old.Key == new.Key {
		return
	}
	if old != nil {
		w.delete(simiKey(old.Key, cid))
	}
	if new != nil {
		w.set(simiKey(new.Key, cid), nil)
	}
}

// moveHash moves the hash key of content cid from strong hash old to new.
// A content whose strong hash is unknown (all zero) has none.
func (w *batch) moveHash(cid uint32, old, new [32]byte) {
	if old == new {
		return
	}
	if old != ([32]byte{}) {
		w.delete(hashKey(old, cid))
	}
	if new != ([32]byte{}) {
		w.set(hashKey(new, cid), nil) // after the delete: it wins when the keys are equal
	}
}

// copyMove is a change to the number of files holding content cid.
type copyMove struct {
	cid   uint32
	delta int
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
	ix.postingWrites.Add(uint64(w.postings))
	ix.countsMu.Lock()
	ix.counts.Files = addDelta(ix.counts.Files, w.delta.Files)
	ix.counts.Features = addDelta(ix.counts.Features, w.delta.Features)
	ix.counts.Bytes = addDelta(ix.counts.Bytes, w.delta.Bytes)
	ix.counts.Contents = addDelta(ix.counts.Contents, w.delta.Contents)
	ix.counts.Postings = addDelta(ix.counts.Postings, w.delta.Postings)
	ix.countsMu.Unlock()
	if len(w.moves) > 0 {
		ix.copiesMu.Lock()
		for _, m := range w.moves {
			if n := ix.filesOf(m.cid) + m.delta; n >= 2 {
				ix.copies[m.cid] = uint32(n)
			} else {
				delete(ix.copies, m.cid)
			}
		}
		ix.copiesMu.Unlock()
	}
	return nil
}

func addDelta(v uint64, d int64) uint64 {
	if d < 0 && uint64(-d) > v {
		return 0
	}
	return v + uint64(d)
}
