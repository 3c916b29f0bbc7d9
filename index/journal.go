package index

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// The change journal. A copy of the index elsewhere (the fleet index of
// package daemon/fleet) is kept equal to it by reading what changed: with
// the journal on, every batch that sets or deletes a file record also sets
// that file's journal key, 'j' id → a sequence number, in the same batch,
// so that no change is committed without its note. A reader takes the
// notes (Journal), reads the files they name as they are now (a View),
// sends them on, and then removes the notes it sent (JournalDone): only
// those whose sequence number is still the one it read, so a change made
// while it was sending keeps its note and is sent again. Many changes to
// one file leave one note, and a note says only "look again at this file",
// so a note read twice sends the same thing twice.
//
// The journal mark ('m' "journal") is the reader's own record of where its
// copy stands, written with the removal of the notes it sent. With the
// journal off, nothing notes a change, so Open without Options.Journal and
// SetJournal(false) delete the notes and the mark: a reader that finds no
// mark must compare its copy with the whole index before it trusts notes
// again.

const prefixJournal = 'j' // 'j' id(4) → sequence number (uvarint)

var metaJournalKey = []byte{prefixMeta, 'j', 'o', 'u', 'r', 'n', 'a', 'l'}

func journalKey(id uint32) []byte { return appendIDKey(make([]byte, 0, idKeyLen), prefixJournal, id) }

// A JournalEntry notes that file ID changed since a reader last took it.
type JournalEntry struct {
	ID  uint32
	Seq uint64
}

// noteChange adds file id's journal key to w when the journal is on.
func (w *batch) noteChange(id uint32) {
	if !w.ix.journal.Load() {
		return
	}
	seq := w.ix.journalSeq.Add(1)
	w.set(journalKey(id), binary.AppendUvarint(nil, seq))
}

// SetJournal turns the change journal on or off. Turning it off deletes
// the notes and the journal mark.
func (ix *Index) SetJournal(on bool) error {
	if err := ix.beginWrite(); err != nil {
		return fmt.Errorf("index.SetJournal: %w", err)
	}
	defer ix.endWrite()
	ix.journal.Store(on)
	if on {
		return nil
	}
	if err := ix.dropJournal(); err != nil {
		return fmt.Errorf("index.SetJournal: %w", err)
	}
	return nil
}

// dropJournal deletes the journal's notes and mark, if there are any.
func (ix *Index) dropJournal() error {
	lo, hi := keyspace(prefixJournal)
	empty, err := isEmptyRange(ix.db, lo, hi)
	if err != nil {
		return err
	}
	_, marked, err := getValue(ix.db, metaJournalKey)
	if err != nil || (empty && !marked) {
		return err
	}
	b := ix.db.NewBatch()
	defer b.Close()
	_ = b.DeleteRange(lo, hi, nil)
	_ = b.Delete(metaJournalKey, nil)
	return b.Commit(pebble.Sync)
}

func isEmptyRange(r pebble.Reader, lo, hi []byte) (bool, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return false, err
	}
	defer it.Close()
	return !it.First(), it.Error()
}

// Journal appends to dst up to n notes of files whose id is above after, in
// id order, and returns it.
func (ix *Index) Journal(after uint32, n int, dst []JournalEntry) ([]JournalEntry, error) {
	if err := ix.acquire(); err != nil {
		return dst, fmt.Errorf("index.Journal: %w", err)
	}
	defer ix.release()
	lo := journalKey(after + 1)
	if after == ^uint32(0) {
		return dst, nil
	}
	_, hi := keyspace(prefixJournal)
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return dst, fmt.Errorf("index.Journal: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok && n > 0; ok = it.Next() {
		id, err := parseIDKey(it.Key(), prefixJournal)
		if err != nil {
			return dst, fmt.Errorf("index.Journal: %w", err)
		}
		seq, k := binary.Uvarint(it.Value())
		if k <= 0 {
			return dst, fmt.Errorf("index.Journal: %w: journal key of file id %d: bad sequence number %x", ErrCorrupt, id, it.Value())
		}
		dst = append(dst, JournalEntry{ID: id, Seq: seq})
		n--
	}
	if err := it.Error(); err != nil {
		return dst, fmt.Errorf("index.Journal: %w", err)
	}
	return dst, nil
}

// JournalDone removes the notes of done whose sequence numbers are still
// the ones given, and sets the journal mark to mark (unless mark is nil),
// in one synced batch. It fails when the journal is off: the mark would
// then claim a copy that no later change keeps up to date.
func (ix *Index) JournalDone(done []JournalEntry, mark []byte) error {
	if err := ix.beginWrite(); err != nil {
		return fmt.Errorf("index.JournalDone: %w", err)
	}
	defer ix.endWrite()
	if !ix.journal.Load() {
		return fmt.Errorf("index.JournalDone: the journal is off")
	}
	b := ix.db.NewBatch()
	defer b.Close()
	for _, e := range done {
		k := journalKey(e.ID)
		v, found, err := getValue(ix.db, k)
		if err != nil {
			return fmt.Errorf("index.JournalDone: %w", err)
		}
		if seq, n := binary.Uvarint(v); found && n > 0 && seq == e.Seq {
			_ = b.Delete(k, nil)
		}
	}
	if mark != nil {
		_ = b.Set(metaJournalKey, mark, nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("index.JournalDone: %w", err)
	}
	return nil
}

// JournalMark returns the journal mark, or nil when there is none.
func (ix *Index) JournalMark() ([]byte, error) {
	if err := ix.acquire(); err != nil {
		return nil, fmt.Errorf("index.JournalMark: %w", err)
	}
	defer ix.release()
	v, _, err := getValue(ix.db, metaJournalKey)
	if err != nil {
		return nil, fmt.Errorf("index.JournalMark: %w", err)
	}
	return v, nil
}

// JournalLen returns the number of notes, counting up to max (a cap on the
// work of a status report), and whether there were more.
func (ix *Index) JournalLen(max int) (int, bool, error) {
	if err := ix.acquire(); err != nil {
		return 0, false, fmt.Errorf("index.JournalLen: %w", err)
	}
	defer ix.release()
	lo, hi := keyspace(prefixJournal)
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, false, err
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n == max {
			return n, true, it.Error()
		}
		n++
	}
	return n, false, it.Error()
}

// A View reads files and signatures from one consistent state of the
// index. Close it when done.
type View struct {
	ix   *Index
	snap *pebble.Snapshot
}

// View returns a view of the index as it is now.
func (ix *Index) View() (*View, error) {
	if err := ix.acquire(); err != nil {
		return nil, fmt.Errorf("index.View: %w", err)
	}
	return &View{ix: ix, snap: ix.db.NewSnapshot()}, nil
}

// SimiHash reports whether the view's index keeps SimiHash keys, so that
// its records' sum tables and skew keys are filled in.
func (v *View) SimiHash() bool { return v.ix.simihash }

// Close releases the view.
func (v *View) Close() {
	if v.snap != nil {
		_ = v.snap.Close()
		v.snap = nil
		v.ix.release()
	}
}

// File returns the record of file id and whether there is one.
func (v *View) File(id uint32) (FileRecord, bool, error) {
	rec, cid, found, err := readRecord(v.snap, id)
	if err != nil {
		return FileRecord{}, false, fmt.Errorf("index.View.File %d: %w", id, err)
	}
	rec.Content = cid
	return rec, found, nil
}

// FilesAfter calls fn with the records of up to n files whose id is above
// after, in id order, and returns the id of the last one (after when there
// were none) and whether more may follow.
func (v *View) FilesAfter(after uint32, n int, fn func(FileRecord) error) (last uint32, more bool, err error) {
	last = after
	if after == ^uint32(0) {
		return last, false, nil
	}
	_, hi := keyspace(prefixRecord)
	it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: recordKey(after + 1), UpperBound: hi})
	if err != nil {
		return last, false, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if n == 0 {
			return last, true, it.Error()
		}
		id, err := parseIDKey(it.Key(), prefixRecord)
		if err != nil {
			return last, false, err
		}
		rec, found, err := v.File(id)
		if err != nil {
			return last, false, err
		}
		if found {
			if err := fn(rec); err != nil {
				return last, false, err
			}
		}
		last = id
		n--
	}
	return last, false, it.Error()
}

// Signature returns content cid's entries as the index stores them (its
// forward list, encoded; DecodeSignature reads it).
func (v *View) Signature(cid uint32) ([]byte, error) {
	raw, found, err := getValue(v.snap, forwardKey(cid))
	if err == nil && !found {
		err = fmt.Errorf("%w: content %d has no forward list", ErrCorrupt, cid)
	}
	if err != nil {
		return nil, fmt.Errorf("index.View.Signature: %w", err)
	}
	return raw, nil
}

// An Entry is one fingerprint key of a content and its weight (doc.go).
type Entry struct {
	Key    uint32
	Weight uint64
}

// DecodeSignature decodes what View.Signature returns, appending the
// entries to dst, sorted by key.
func DecodeSignature(raw []byte, dst []Entry) ([]Entry, error) {
	r := newForwardReader(raw)
	for {
		e, ok := r.next()
		if !ok {
			break
		}
		dst = append(dst, Entry{Key: e.key, Weight: e.weight})
	}
	return dst, r.err()
}

// A QueryEntry is one entry of a query's sketch as the index sees it: a
// fingerprint key, its weight, and the least level of the hashes that map
// to it (fingerprint.Params.HashLevel).
type QueryEntry struct {
	Key    uint32
	Weight uint64
	Level  uint8
}

// QueryEntries returns the entries of sk under params p as a query of the
// index would take them (sorted by key, one per key), for a copy of the
// index that answers queries elsewhere. sk must have been made with p
// (zero Params are taken to be p).
func QueryEntries(p fingerprint.Params, sk *fingerprint.Sketch) ([]QueryEntry, error) {
	if sk == nil {
		return nil, fmt.Errorf("%w: no sketch", ErrBadQuery)
	}
	if sk.Params != (fingerprint.Params{}) {
		if n, err := sk.Params.Normalize(); err != nil || n != p {
			return nil, fmt.Errorf("%w: the sketch was made with %s, the index uses %s", ErrParamsMismatch, sk.Params, p)
		}
	}
	es := entriesOf(p, sk.Features, p.Level(sk.Size))
	out := make([]QueryEntry, len(es))
	for i, e := range es {
		out[i] = QueryEntry{Key: e.key, Weight: e.weight, Level: e.level}
	}
	return out, nil
}
