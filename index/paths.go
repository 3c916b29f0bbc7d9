package index

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Reading the path keyspace in order, for a caller that merges the index
// with a sorted walk of a directory tree: a merge reads each record once,
// through two iterators, where a point lookup per path (Lookup) costs
// three Gets, each of which sets up iterators over every level.

// Paths calls fn with the path of every indexed file p with lo <= p < hi, in
// path order (bytewise), on the caller's goroutine; hi == "" means no upper
// bound. It reads keys only, no record, and returns fn's first error
// unwrapped. It sees the index as it was when it started. fn must not call
// Close.
func (ix *Index) Paths(lo, hi string, fn func(path string) error) error {
	if err := ix.acquire(); err != nil {
		return fmt.Errorf("index.Paths: %w", err)
	}
	defer ix.release()
	lower := pathKey(lo)
	_, upper := keyspace(prefixPath)
	if hi != "" {
		upper = pathKey(hi)
	}
	if bytes.Compare(lower, upper) >= 0 {
		return nil
	}
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("index.Paths: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		if err := fn(string(it.Key()[1:])); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("index.Paths: %w", err)
	}
	return nil
}

// MetasAfter appends to dst, and returns, the metadata of up to n indexed
// files whose paths start with prefix and sort after after (bytewise), in
// path order: the records without their contents' fields. after == ""
// starts at the first path with the prefix. A caller reads a whole prefix
// in batches, passing the last path of one batch as after of the next;
// each batch is one consistent view of the index, and the index is not
// held between batches. Records are read through an iterator positioned
// once per batch, so reading a prefix this way costs much less than a
// Lookup per path.
func (ix *Index) MetasAfter(prefix, after string, n int, dst []FileMeta) ([]FileMeta, error) {
	out, err := ix.metasAfter(prefix, after, n, dst)
	if err != nil {
		return dst, fmt.Errorf("index.MetasAfter %q: %w", prefix, err)
	}
	return out, nil
}

func (ix *Index) metasAfter(prefix, after string, n int, dst []FileMeta) ([]FileMeta, error) {
	if err := ix.acquire(); err != nil {
		return dst, err
	}
	defer ix.release()
	lower := pathKey(prefix)
	upper := prefixEnd(lower)
	start := lower
	if after != "" {
		// The least key after pathKey(after).
		start = append(pathKey(after), 0)
		if bytes.Compare(start, lower) < 0 {
			start = lower
		}
	}
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	paths, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return dst, err
	}
	defer paths.Close()
	rlo, rhi := keyspace(prefixRecord)
	recs, err := snap.NewIter(&pebble.IterOptions{LowerBound: rlo, UpperBound: rhi})
	if err != nil {
		return dst, err
	}
	defer recs.Close()
	key := make([]byte, 0, idKeyLen)
	got := 0
	for ok := paths.SeekGE(start); ok && got < n; ok = paths.Next() {
		v, err := paths.ValueAndErr()
		if err != nil {
			return dst, err
		}
		id, err := decodeID(v)
		if err != nil {
			return dst, fmt.Errorf("path %q: %w", paths.Key()[1:], err)
		}
		// File ids are given out as files are first indexed, so records
		// read in path order are mostly in id order too, and most seeks
		// move the iterator forward a little.
		key = appendIDKey(key[:0], prefixRecord, id)
		if !recs.SeekGE(key) || !bytes.Equal(recs.Key(), key) {
			if err := recs.Error(); err != nil {
				return dst, err
			}
			return dst, fmt.Errorf("%w: path %q names file id %d, which has no record", ErrCorrupt, paths.Key()[1:], id)
		}
		rv, err := recs.ValueAndErr()
		if err != nil {
			return dst, err
		}
		meta, _, err := decodeRecord(rv)
		if err != nil {
			return dst, fmt.Errorf("file id %d: %w", id, err)
		}
		dst = append(dst, meta)
		got++
	}
	if err := paths.Error(); err != nil {
		return dst, err
	}
	return dst, nil
}
