package index

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Deferred postings (PutFile with FileWrite.Deferred).
//
// A bulk load, such as the first scan of a root, adds thousands of new
// contents, each of whose postings would be one merge operand in its own
// bucket: most of the cost of a write is then inserting those operands
// into Pebble's memtable, and compacting them later. A deferred put
// writes a new content's records and forward list at once, but keeps its
// postings in memory; Flush writes those of many contents together,
// sorted, one operand per bucket.
//
// The pending postings are recoverable from the forward lists, which are
// written with their contents: the batch of the first deferred content
// also sets the pending key, naming its content id, and the batch that
// writes the postings deletes it. Every content from that id on is either
// deferred or was written directly (its postings written again are the
// same postings: a merge sets a posting, it does not add to it). An index
// opened read-write with the pending key set (a crash, or a Close that
// could not write) writes the postings of those contents before Open
// returns.
//
// Until they are written, a query finds the files of a deferred content
// as identical files (by strong hash), not as similar ones, and Groups
// does not see them. Writes that would change or remove the postings of a
// deferred content (a change to the file that alone held it, its removal)
// write the pending postings first, so that no tombstone comes before the
// posting it removes.

// maxPending bounds the postings kept pending: about 4 MiB of them. A
// deferred write that would go past it writes the pending ones first.
var maxPending = 1 << 18 // a variable so that tests can make it small

// metaPendingKey holds the first content id whose postings may not be
// written yet (4 bytes, big-endian), while there are any.
var metaPendingKey = []byte{prefixMeta, 'p', 'e', 'n', 'd', 'i', 'n', 'g'}

// pending is the state of the deferred postings, guarded by Index.wmu.
type pending struct {
	// from is the content id the pending key names, 0 when it is not set.
	from uint32
	// postings are the postings not yet written, in the order their
	// contents were written.
	postings []postingEntry
	// scratch is the radix sort's second buffer, kept from one write of
	// the postings to the next while a bulk load goes on.
	scratch []postingEntry
}

// Flush writes the postings deferred puts left pending, in one batch, and
// returns once they are committed: every query then sees them. It does
// nothing when none are pending. The memory that held them is let go: a
// Flush ends a bulk load, or a part of one.
func (ix *Index) Flush() error {
	if err := ix.beginWrite(); err != nil {
		if errors.Is(err, ErrReadOnly) {
			return nil
		}
		return fmt.Errorf("index.Flush: %w", err)
	}
	defer ix.endWrite()
	if err := ix.flushPending(); err != nil {
		return fmt.Errorf("index.Flush %s: %w", ix.dir, err)
	}
	ix.pend.postings, ix.pend.scratch = nil, nil
	return nil
}

// PendingPostings returns the number of postings deferred puts left
// pending. It does not wait for writes in progress.
func (ix *Index) PendingPostings() int { return int(ix.pendingN.Load()) }

// flushPending writes the pending postings and deletes the pending key.
// ix.wmu is held. On failure everything stays pending.
func (ix *Index) flushPending() error {
	if ix.pend.from == 0 {
		return nil
	}
	ps := ix.pend.postings
	ix.pend.scratch = sortPostings(ps, ix.pend.scratch)
	w := ix.newBatch()
	defer w.close()
	w.mergePostings(ps)
	w.delete(metaPendingKey)
	if err := w.commit(); err != nil {
		return err
	}
	ix.pend.from = 0
	if cap(ps) > maxPending {
		ps = nil // a recovery's may be larger than a bulk load keeps
		ix.pend.scratch = nil
	}
	ix.pend.postings = ps[:0] // kept for the bulk load going on
	ix.pendingN.Store(0)
	return nil
}

// writePending takes the write lock and writes the pending postings, for
// the operations that need them written first (Compact, Check, Close).
func (ix *Index) writePending() error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	return ix.flushPending()
}

// flushPendingOf writes the pending postings when content cid may be
// among them. ix.wmu is held.
func (ix *Index) flushPendingOf(cid uint32) error {
	if ix.pend.from == 0 || cid < ix.pend.from {
		return nil
	}
	return ix.flushPending()
}

// keepPending records, once the batch that wrote new content cid without
// its postings has committed, that they are pending: those of entries es.
// ix.wmu is held.
func (ix *Index) keepPending(cid uint32, es []entry) {
	if ix.pend.from == 0 {
		ix.pend.from = cid
	}
	if ix.pend.postings == nil {
		// Room for the bound at once: a bulk load fills it, and growing
		// it by doubling copies it over and over.
		ix.pend.postings = make([]postingEntry, 0, max(maxPending, len(es)))
	}
	for _, e := range es {
		ix.pend.postings = append(ix.pend.postings, postingEntry{e.key, cid, e.weight})
	}
	ix.pendingN.Store(int64(len(ix.pend.postings)))
}

// readPendingKey returns the content id the pending key names, or 0.
func readPendingKey(r pebble.Reader) (uint32, error) {
	v, found, err := getValue(r, metaPendingKey)
	if err != nil || !found {
		return 0, err
	}
	if len(v) != 4 || binary.BigEndian.Uint32(v) == 0 {
		return 0, fmt.Errorf("%w: pending key %x: want a content id of 4 bytes", ErrCorrupt, v)
	}
	return binary.BigEndian.Uint32(v), nil
}

// recoverPending writes the postings of every content from the one the
// pending key names on, from their forward lists, when it is set (a
// deferred write was not flushed before the index was last closed). It
// runs in Open, before anything else can write; a read-only index only
// notes the key (Check does not count the missing postings as problems).
func (ix *Index) recoverPending() error {
	from, err := readPendingKey(ix.db)
	if err != nil || from == 0 {
		return err
	}
	if ix.readOnly {
		ix.pend.from = from
		return nil
	}
	lo := appendIDKey(nil, prefixForward, from)
	_, hi := keyspace(prefixForward)
	ix.pend.from = from
	contents := 0
	err = scan(ix.db, lo, hi, func(k, v []byte) error {
		cid, err := parseIDKey(k, prefixForward)
		if err != nil {
			return err
		}
		es, err := decodeForward(v)
		if err != nil {
			return fmt.Errorf("forward list of content %d: %w", cid, err)
		}
		ix.keepPending(cid, es)
		contents++
		return nil
	})
	postings := len(ix.pend.postings)
	if err == nil {
		err = ix.flushPending()
	}
	if err != nil {
		return fmt.Errorf("writing the postings left pending: %w", err)
	}
	ix.log.Info("wrote the postings a bulk load left pending", "dir", ix.dir, "from_content", from,
		"contents", contents, "postings", postings)
	return nil
}

// sortPostings sorts ps by key, then by content id. Pending postings come
// in the order their contents were written, which is the order of their
// ids, so a stable sort by key alone orders them: an LSD radix sort, in
// three passes of 11 bits of the key, through a second buffer: scratch if
// it is large enough, which sortPostings returns for the next sort. A
// first scan's Flush sorts all its postings at its end, while nothing
// else runs: on 262,144 postings the radix sort takes about a tenth of the
// time of a comparison sort (BenchmarkSortPostings). Postings whose ids
// are out of order, which no write leaves, are sorted by comparison.
func sortPostings(ps, scratch []postingEntry) []postingEntry {
	if len(ps) < 1024 || !slices.IsSortedFunc(ps, func(a, b postingEntry) int { return cmp.Compare(a.cid, b.cid) }) {
		slices.SortFunc(ps, comparePostings)
		return scratch
	}
	if cap(scratch) < len(ps) {
		scratch = make([]postingEntry, len(ps))
	}
	const bits = 11
	const mask = 1<<bits - 1
	src, dst := ps, scratch[:len(ps)]
	for shift := 0; shift < 32; shift += bits {
		var at [1 << bits]int
		for _, p := range src {
			at[p.key>>shift&mask]++
		}
		n := 0
		for d, c := range at {
			at[d] = n
			n += c
		}
		for _, p := range src {
			d := p.key >> shift & mask
			dst[at[d]] = p
			at[d]++
		}
		src, dst = dst, src
	}
	copy(ps, src) // an odd number of passes leaves them in the other slice
	return scratch
}
