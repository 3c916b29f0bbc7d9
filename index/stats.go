package index

import (
	"fmt"
	"maps"

	"github.com/cockroachdb/pebble/v2"
)

// counts are the totals Stats reports, computed by scanning at Open and
// kept current by every write.
type counts struct {
	Files    uint64
	Features uint64 // sum of the records' Features
	Bytes    uint64 // sum of the records' sizes
	Contents uint64 // content records
	Postings uint64 // sum of the contents' Features: the postings stored
}

// fileBytes is what a file adds to counts.Bytes.
func fileBytes(m FileMeta) uint64 { return uint64(max(m.Size, 0)) }

// scanCounts computes counts from the file and content records in r.
func scanCounts(r pebble.Reader) (counts, error) {
	var c counts
	features := make(map[uint32]uint32) // content id → its number of features
	lo, hi := keyspace(prefixContent)
	err := scan(r, lo, hi, func(k, v []byte) error {
		cid, err := parseIDKey(k, prefixContent)
		if err != nil {
			return err
		}
		var rec FileRecord
		if _, err := decodeContent(v, &rec); err != nil {
			return fmt.Errorf("content %d: %w", cid, err)
		}
		features[cid] = rec.Features
		c.Contents++
		c.Postings += uint64(rec.Features)
		return nil
	})
	if err != nil {
		return c, err
	}
	lo, hi = keyspace(prefixRecord)
	err = scan(r, lo, hi, func(k, v []byte) error {
		_, meta, cid, err := parseRecord(k, v)
		if err != nil {
			return err
		}
		c.Files++
		c.Features += uint64(features[cid])
		c.Bytes += fileBytes(meta)
		return nil
	})
	return c, err
}

// scan calls fn for every key in [lo, hi) of r, in order. fn must not retain
// k or v. It stops at fn's first error and returns it.
func scan(r pebble.Reader, lo, hi []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// scanCopies counts the files of every content held by two or more, from
// the copy keys in r.
func scanCopies(r pebble.Reader) (map[uint32]uint32, error) {
	n := make(map[uint32]uint32)
	lo, hi := keyspace(prefixCopy)
	err := scan(r, lo, hi, func(k, _ []byte) error {
		cid, _, err := parseCopyKey(k)
		if err != nil {
			return err
		}
		n[cid]++
		return nil
	})
	maps.DeleteFunc(n, func(_, c uint32) bool { return c < 2 })
	return n, err
}

// filesOf returns the number of files holding content cid, as far as the
// writes committed so far say: at least 1. The caller holds copiesMu.
func (ix *Index) filesOf(cid uint32) int {
	if n, ok := ix.copies[cid]; ok {
		return int(n)
	}
	return 1
}

// scanUntil calls fn for every key in [lo, hi) of r, in order, until fn
// returns false or an error. fn must not retain k or v.
func scanUntil(r pebble.Reader, lo, hi []byte, fn func(k, v []byte) (bool, error)) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			var more bool
			if more, err = fn(it.Key(), v); err == nil && !more {
				break
			}
		}
		if err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// Stats returns what the index holds. Files, Features, Bytes, Contents and
// Postings are exact
// and cost nothing (they are kept in memory); Fingerprints is always 0 (see
// the Stats type); DiskBytes is Pebble's current disk usage (tables and
// write-ahead log).
func (ix *Index) Stats() (Stats, error) {
	if err := ix.acquire(); err != nil {
		return Stats{}, fmt.Errorf("index.Stats: %w", err)
	}
	defer ix.release()
	ix.countsMu.Lock()
	c := ix.counts
	ix.countsMu.Unlock()
	return Stats{
		Params:    ix.params,
		Files:     c.Files,
		Features:  c.Features,
		Bytes:     c.Bytes,
		Contents:  c.Contents,
		Postings:  c.Postings,
		DiskBytes: ix.db.Metrics().DiskSpaceUsage(),
	}, nil
}
