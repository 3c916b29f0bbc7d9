package index

import (
	"errors"
	"fmt"
	"math"
	"slices"

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
			w.removeContent(p.oldCID, &p.old.Summary, p.oldEntries)
		}
		w.moves = append(w.moves, copyMove{cid, +1})
	case p.last:
		// The file changed and nothing else held its content: keep the
		// content id (and the copy key) and rewrite only the postings
		// that differ.
		cid = p.oldCID
		w.setContent(cid, rec, &p.old.Summary, p.oldEntries, entries)
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
			w.setContent(cid, rec, nil, nil, entries)
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
	w.noteChange(rec.ID)
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
	return ix.findByHash(rec.Strong, func(c uint32, have *FileRecord) (bool, error) {
		if !sameContent(have, rec) {
			return false, nil
		}
		hes, err := ix.readForward(c)
		if err != nil {
			return false, err
		}
		return slices.EqualFunc(hes, es, func(a, b entry) bool { return a.key == b.key && a.weight == b.weight }), nil
	})
}

// findByHash returns the first content, in id order, whose hash key names
// strong hash strong and that match accepts (given its id and record), if
// any. A hash key whose content has no record is passed over. It reads the
// hash keys of strong, and the record of each content they name until
// match accepts one; an error of match ends the search with it.
func (ix *Index) findByHash(strong [32]byte, match func(cid uint32, have *FileRecord) (bool, error)) (cid uint32, found bool, err error) {
	prefix := hashPrefix(nil, strong)
	err = scanUntil(ix.db, prefix, prefixEnd(prefix), func(k, _ []byte) (bool, error) {
		_, c, err := parseHashKey(k)
		if err != nil {
			return false, err
		}
		var have FileRecord
		ok, err := readContent(ix.db, c, &have)
		if err != nil || !ok {
			return err == nil, err
		}
		ok, err = match(c, &have)
		if ok && err == nil {
			cid, found = c, true
		}
		return !ok && err == nil, err
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
