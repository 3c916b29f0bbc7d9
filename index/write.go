package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Put adds the file at meta.Path with sketch sk, or replaces it when the
// path is indexed already (keeping its file id), all in one atomic batch.
//
// Identical files share one content (doc.go): when the index holds a
// content equal to sk's (same strong hash, summary and entries), the file
// joins it and Put writes no posting. Otherwise the file gets a content of
// its own, with its forward list and postings. The content the file held
// before loses it; a content no file holds any more is deleted, postings
// and all, except that a file that held its content alone and changed
// keeps it and only the postings that differ are rewritten.
//
// Put reads the file's old path key and records, the hash keys of sk's
// strong hash, the copy keys of the old content, and the records and
// forward lists of the contents it compares or replaces; the postings are written blind. sk's
// features need not be sorted (they are mapped to fingerprint keys, sorted
// and merged); sk.Params must be zero or equal the index's, else the error
// wraps ErrParamsMismatch. Put does not retain sk. A writer that has a
// file's strong hash, and may spare the sketch of a copy, calls PutFile.
func (ix *Index) Put(meta FileMeta, sk *fingerprint.Sketch) (FileRecord, error) {
	rec, err := ix.put(meta, sk, false, nil)
	if err != nil {
		return FileRecord{}, fmt.Errorf("index.Put %q: %w", meta.Path, err)
	}
	return rec, nil
}

// put is Put, leaving the postings of a new content pending when deferred
// (see pending.go), with b, the Bulk of a load (or nil), sparing the
// search for an equal content and the lookup of the path while it can.
func (ix *Index) put(meta FileMeta, sk *fingerprint.Sketch, deferred bool, b *Bulk) (FileRecord, error) {
	if meta.Path == "" {
		return FileRecord{}, errors.New("empty path")
	}
	// The entries and weights depend on the parameters only, fixed at
	// Open: they are worked out before the write lock is taken, so that
	// writers overlap there.
	entries, err := ix.sketchEntries(sk)
	if err != nil {
		return FileRecord{}, err
	}
	if uint64(len(entries)) > math.MaxUint32 {
		return FileRecord{}, errors.New("too many features")
	}
	rec := FileRecord{
		FileMeta: meta,
		Summary:  sk.Summary,
		Weight:   totalWeight(entries),
		Features: uint32(len(entries)),
	}
	if lvl := ix.params.Level(sk.Size); lvl > 0 {
		rec.Level = uint8(lvl)
		rec.LevelWeights = levelWeights(entries, lvl, ix.params.Bits)
	}
	if err := ix.beginWrite(); err != nil {
		return FileRecord{}, err
	}
	defer ix.endWrite()
	var cid uint32
	var shared bool
	if !b.unheld(ix, rec.Strong) {
		if cid, shared, err = ix.findContent(&rec, entries); err != nil {
			return FileRecord{}, err
		}
	}
	return ix.store(rec, cid, shared, entries, deferred, b)
}

// store writes the file rec.FileMeta.Path, whose content is rec's, in one
// batch: as a copy of content cid when shared, else with entries as its
// content's, whose postings are left pending when deferred and the
// content is new. The file's content is recorded in b, if not nil, and
// the file's old record is not looked up when b tells there is none. It
// must be called with the write lock held; rec.ID and rec.Content are set
// here.
//
// It plans the write (planStore), adds the content's keys (storeContent)
// and the file's (storeFile) to one batch, commits it, and then moves the
// index's counters on (stored).
func (ix *Index) store(rec FileRecord, cid uint32, shared bool, entries []entry, deferred bool, b *Bulk) (FileRecord, error) {
	p, err := ix.planStore(rec.FileMeta.Path, cid, shared, b)
	if err != nil {
		return FileRecord{}, err
	}
	rec.ID = p.id
	p.deferred = deferred && p.newContent
	if p.deferred && len(ix.pend.postings)+len(entries) > maxPending {
		if err := ix.flushPending(); err != nil {
			return FileRecord{}, err
		}
	}
	w := ix.newBatch()
	defer w.close()
	if p.changes {
		if cid, err = w.storeContent(&p, &rec, cid, entries); err != nil {
			return FileRecord{}, err
		}
	}
	rec.Content = cid
	w.storeFile(&p, &rec)
	if err := w.commit(); err != nil {
		return FileRecord{}, err
	}
	ix.stored(&p, &rec, entries, b)
	return rec, nil
}

// A storePlan is what store learns before it writes: the file's old
// record, if any, and what becomes of the content it held.
type storePlan struct {
	ph         pathKeyHash // the path's hash, while a Bulk takes paths
	id         uint32      // the file's id: its old one, else the next
	old        FileRecord  // the file's old record, if found
	oldCID     uint32      // the content it held
	found      bool        // the path had a record
	shared     bool        // the file joins an existing content
	changes    bool        // the file's content changes
	last       bool        // the file held its old content alone
	oldEntries []entry     // that content's entries, when last
	newContent bool        // a content id is handed out
	deferred   bool        // the new content's postings are left pending
}

// planStore looks up the old record of the file at path (unless b tells
// there is none) and gives the file its id, and, when its content
// changes, finds whether it held its old content alone: then that
// content's pending postings are written first, and its entries read, to
// be rewritten or removed.
func (ix *Index) planStore(path string, cid uint32, shared bool, b *Bulk) (storePlan, error) {
	p := storePlan{shared: shared}
	if ix.bulk != nil {
		p.ph = pathHash(path)
	}
	if !b.pathUnheld(ix, p.ph) {
		ix.pathLookups.Add(1)
		var err error
		if p.old, p.oldCID, p.found, err = ix.lookup(ix.db, path); err != nil {
			return p, err
		}
	}
	p.id = p.old.ID
	if !p.found {
		if ix.nextID > math.MaxUint32 {
			return p, errors.New("file ids exhausted: rebuild the index")
		}
		p.id = uint32(ix.nextID)
	}
	p.changes = !p.found || !shared || cid != p.oldCID
	if p.changes && p.found {
		var err error
		if p.last, err = ix.lastCopy(p.oldCID, p.id); err != nil {
			return p, err
		}
		if p.last {
			// Its postings are about to be rewritten or removed: those
			// still pending go first.
			if err := ix.flushPendingOf(p.oldCID); err != nil {
				return p, err
			}
			if p.oldEntries, err = ix.readForward(p.oldCID); err != nil {
				return p, err
			}
		}
	}
	p.newContent = p.changes && !shared && !p.last
	return p, nil
}

// storeContent adds to w the change of the file's content that p plans:
// joining content cid when shared (and deleting the old content it held
// alone), rewriting its old content in place when it held it alone, or
// writing a new one with entries. It moves the file's copy key and
// returns the content the file holds now.
func (w *batch) storeContent(p *storePlan, rec *FileRecord, cid uint32, entries []entry) (uint32, error) {
	ix := w.ix
	switch {
	case p.shared:
		if p.found {
			w.moves = append(w.moves, copyMove{p.oldCID, -1})
		}
		if p.last {
			w.removeContent(p.oldCID, p.old.Strong, p.oldEntries)
		}
		w.moves = append(w.moves, copyMove{cid, +1})
	case p.last:
		// The file changed and nothing else held its content: keep the
		// content id (and the copy key) and rewrite only the postings
		// that differ.
		cid = p.oldCID
		w.setContent(cid, rec, p.old.Strong, p.oldEntries, entries)
	default:
		if ix.nextCID > math.MaxUint32 {
			return 0, errors.New("content ids exhausted: rebuild the index")
		}
		if p.found {
			w.moves = append(w.moves, copyMove{p.oldCID, -1})
		}
		cid = uint32(ix.nextCID)
		if p.deferred {
			w.setContentDeferred(cid, rec, entries)
		} else {
			w.setContent(cid, rec, [32]byte{}, nil, entries)
		}
	}
	if p.found && cid != p.oldCID {
		w.delete(copyKey(p.oldCID, p.id))
	}
	if !p.found || cid != p.oldCID {
		w.set(copyKey(cid, p.id), nil)
	}
	return cid, nil
}

// storeFile adds to w the file's own keys: its inode key, its record,
// and, for a path new to the index, its path key (noted in the Bulk's
// filter first); and the change to the counts.
func (w *batch) storeFile(p *storePlan, rec *FileRecord) {
	old := &p.old
	if p.found && (old.Dev != rec.Dev || old.Ino != rec.Ino) {
		w.delete(inodeKey(old.Dev, old.Ino, rec.ID))
	}
	w.set(inodeKey(rec.Dev, rec.Ino, rec.ID), nil)
	w.set(recordKey(rec.ID), encodeRecord(nil, &rec.FileMeta, rec.Content))
	if !p.found {
		w.ix.notePath(p.ph)
		w.set(pathKey(rec.Path), encodeID(rec.ID))
		w.delta.Files++
	}
	w.delta.Bytes += int64(fileBytes(rec.FileMeta)) - int64(fileBytes(old.FileMeta))
	w.delta.Features += int64(rec.Features) - int64(old.Features)
}

// stored moves the index on once the batch of p has committed: the next
// file and content ids, the pending postings of a deferred content, the
// count of contents made (which a Bulk compares with its own), and b's
// record of the file's content.
func (ix *Index) stored(p *storePlan, rec *FileRecord, entries []entry, b *Bulk) {
	if !p.found {
		ix.nextID++
	}
	if p.newContent {
		ix.nextCID++
	}
	if p.deferred {
		ix.keepPending(rec.Content, entries)
	}
	mine := b != nil && b.ix == ix
	if p.changes && !p.shared { // a content made, or rewritten in place
		ix.contentGen++
		if mine {
			b.own++
		}
	}
	if mine && rec.Strong != ([32]byte{}) {
		b.setContent(rec.Strong, rec.Content)
	}
}

// findContent returns the content the index holds that equals rec's (same
// strong hash, summary, weights and entries), if any. A file whose strong
// hash is unknown (all zero) shares no content. It reads the hash keys of
// rec's strong hash, and the records and forward lists of the contents it
// compares.
func (ix *Index) findContent(rec *FileRecord, es []entry) (cid uint32, found bool, err error) {
	if rec.Strong == ([32]byte{}) {
		return 0, false, nil
	}
	ix.contentSearches.Add(1)
	prefix := hashPrefix(nil, rec.Strong)
	err = scanUntil(ix.db, prefix, prefixEnd(prefix), func(k, _ []byte) (bool, error) {
		_, c, err := parseHashKey(k)
		if err != nil {
			return false, err
		}
		var have FileRecord
		ok, err := readContent(ix.db, c, &have)
		if err != nil || !ok || !sameContent(&have, rec) {
			return err == nil, err
		}
		hes, err := ix.readForward(c)
		if err != nil {
			return false, err
		}
		if slices.EqualFunc(hes, es, func(a, b entry) bool { return a.key == b.key && a.weight == b.weight }) {
			cid, found = c, true
			return false, nil
		}
		return true, nil
	})
	return cid, found, err
}

// lastCopy reports whether file id is the only file holding content cid:
// whether no copy key of cid names another file.
func (ix *Index) lastCopy(cid, id uint32) (bool, error) {
	prefix := copyPrefix(nil, cid)
	last := true
	err := scanUntil(ix.db, prefix, prefixEnd(prefix), func(k, _ []byte) (bool, error) {
		_, other, err := parseCopyKey(k)
		if err != nil {
			return false, err
		}
		if other != id {
			last = false
			return false, nil
		}
		return true, nil
	})
	return last, err
}

// readForward reads the forward list of content cid from the database. A
// missing list is corrupt.
func (ix *Index) readForward(cid uint32) ([]entry, error) {
	es, found, err := readForward(ix.db, cid)
	if err == nil && !found {
		err = fmt.Errorf("%w: content %d has no forward list", ErrCorrupt, cid)
	}
	return es, err
}

// Remove removes the file at path, in one atomic batch, and its content
// when no other file holds it. It returns an error wrapping ErrNotFound
// when path is not indexed.
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
	old, cid, found, err := ix.lookup(ix.db, path)
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	w := ix.newBatch()
	defer w.close()
	if err := ix.removeFile(w, old, cid); err != nil {
		return err
	}
	w.delete(pathKey(path))
	return w.commit()
}

// Rename moves the file at oldPath to meta.Path, with meta as its new
// metadata, in one atomic batch. The content is taken to be unchanged: the
// file keeps its id and its content, and no posting is touched. A rename
// within a filesystem keeps the file's device and inode, and so its inode
// key; when meta names another device or inode (a move across
// filesystems, which copies the file), the inode key follows it. A file
// indexed at meta.Path already is removed in the same batch, with all its
// keys (and its content, when nothing else holds it). oldPath may equal
// meta.Path, to update the metadata only. It returns an error wrapping
// ErrNotFound when oldPath is not indexed.
func (ix *Index) Rename(oldPath string, meta FileMeta) error {
	if err := ix.rename(oldPath, meta, nil); err != nil {
		return fmt.Errorf("index.Rename %q to %q: %w", oldPath, meta.Path, err)
	}
	return nil
}

// RenameIf is Rename from was.Path, provided the record there still
// describes the file was does: the same device, inode, size, mtime and
// ctime. Otherwise it returns an error wrapping ErrNotFound and changes
// nothing. A caller that found a moved file's old record (LookupInode)
// renames with it, so that a write to the old path in between (a new
// file there, whose content replaced the record's) is not moved to the
// new path as the moved file's.
func (ix *Index) RenameIf(was, meta FileMeta) error {
	if err := ix.rename(was.Path, meta, &was); err != nil {
		return fmt.Errorf("index.Rename %q to %q: %w", was.Path, meta.Path, err)
	}
	return nil
}

func (ix *Index) rename(oldPath string, meta FileMeta, was *FileMeta) error {
	if err := ix.beginWrite(); err != nil {
		return err
	}
	defer ix.endWrite()
	if meta.Path == "" {
		return errors.New("empty path")
	}
	rec, cid, found, err := ix.lookup(ix.db, oldPath)
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	if was != nil && (rec.Dev != was.Dev || rec.Ino != was.Ino || rec.FileMeta.Size != was.Size ||
		rec.MtimeNs != was.MtimeNs || rec.CtimeNs != was.CtimeNs) {
		return fmt.Errorf("%w: the record there is of another file now", ErrNotFound)
	}
	w := ix.newBatch()
	defer w.close()
	if meta.Path != oldPath {
		// The renamed file keeps its copy key, so the target's content is
		// deleted only when the renamed file does not hold it too.
		target, tcid, found, err := ix.lookup(ix.db, meta.Path)
		if err != nil {
			return err
		}
		if found {
			if err := ix.removeFile(w, target, tcid); err != nil {
				return err
			}
		}
		if ix.bulk != nil {
			ix.notePath(pathHash(meta.Path))
		}
		w.delete(pathKey(oldPath))
		w.set(pathKey(meta.Path), encodeID(rec.ID))
	}
	if meta.Dev != rec.Dev || meta.Ino != rec.Ino {
		w.delete(inodeKey(rec.Dev, rec.Ino, rec.ID))
		w.set(inodeKey(meta.Dev, meta.Ino, rec.ID), nil)
	}
	w.delta.Bytes += int64(fileBytes(meta)) - int64(fileBytes(rec.FileMeta))
	w.set(recordKey(rec.ID), encodeRecord(nil, &meta, cid))
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
// a content with strong hash oldStrong and entries old (for a new content,
// all zero and nil).
func (w *batch) setContent(cid uint32, rec *FileRecord, oldStrong [32]byte, old, new []entry) {
	w.diffPostings(cid, old, new)
	w.putContent(cid, rec, oldStrong, old, new)
}

// setContentDeferred writes new content cid as rec's, with entries es,
// but not its postings, which the caller keeps pending (pending.go); the
// batch of the first content pending sets the pending key.
func (w *batch) setContentDeferred(cid uint32, rec *FileRecord, es []entry) {
	if w.ix.pend.from == 0 {
		w.set(metaPendingKey, binary.BigEndian.AppendUint32(nil, cid))
	}
	w.putContent(cid, rec, [32]byte{}, nil, es)
}

// putContent writes everything of content cid but its postings, as
// setContent says.
func (w *batch) putContent(cid uint32, rec *FileRecord, oldStrong [32]byte, old, new []entry) {
	if old == nil {
		w.delta.Contents++
	}
	w.delta.Postings += int64(len(new)) - int64(len(old))
	w.set(contentKey(cid), encodeContent(nil, rec))
	w.set(forwardKey(cid), encodeForward(nil, new))
	w.moveHash(cid, oldStrong, rec.Strong)
}

// removeContent deletes content cid, whose strong hash is strong and
// entries es, and its postings.
func (w *batch) removeContent(cid uint32, strong [32]byte, es []entry) {
	w.diffPostings(cid, es, nil)
	w.delta.Contents--
	w.delta.Postings -= int64(len(es))
	w.delete(contentKey(cid))
	w.delete(forwardKey(cid))
	w.moveHash(cid, strong, [32]byte{})
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

// removeFile adds to w the deletion of everything of file rec, which holds
// content cid, but its path key; and of its content when no other file
// holds it.
func (ix *Index) removeFile(w *batch, rec FileRecord, cid uint32) error {
	last, err := ix.lastCopy(cid, rec.ID)
	if err != nil {
		return err
	}
	if last {
		if err := ix.flushPendingOf(cid); err != nil {
			return err
		}
		es, err := ix.readForward(cid)
		if err != nil {
			return err
		}
		w.removeContent(cid, rec.Strong, es)
	}
	w.delete(copyKey(cid, rec.ID))
	w.moves = append(w.moves, copyMove{cid, -1})
	w.delete(inodeKey(rec.Dev, rec.Ino, rec.ID))
	w.delete(recordKey(rec.ID))
	w.delta.Files--
	w.delta.Features -= int64(rec.Features)
	w.delta.Bytes -= int64(fileBytes(rec.FileMeta))
	return nil
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
