package index

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Lookup returns the record of the file at path, or an error wrapping
// ErrNotFound.
func (ix *Index) Lookup(path string) (FileRecord, error) {
	if err := ix.acquire(); err != nil {
		return FileRecord{}, fmt.Errorf("index.Lookup %q: %w", path, err)
	}
	defer ix.release()
	rec, found, err := ix.lookup(ix.db, path)
	if err == nil && !found {
		err = ErrNotFound
	}
	if err != nil {
		return FileRecord{}, fmt.Errorf("index.Lookup %q: %w", path, err)
	}
	return rec, nil
}

// lookup reads the record of the file at path from r.
func (ix *Index) lookup(r pebble.Reader, path string) (FileRecord, bool, error) {
	v, found, err := getValue(r, pathKey(path))
	if err != nil || !found {
		return FileRecord{}, false, err
	}
	id, err := decodeID(v)
	if err != nil {
		return FileRecord{}, false, err
	}
	rec, found, err := readRecord(r, id)
	if err == nil && !found {
		err = fmt.Errorf("%w: path %q names file id %d, which has no record", ErrCorrupt, path, id)
	}
	return rec, found, err
}

// readRecord reads and decodes the record of file id from r.
func readRecord(r pebble.Reader, id uint32) (FileRecord, bool, error) {
	v, closer, err := r.Get(recordKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return FileRecord{}, false, nil
	}
	if err != nil {
		return FileRecord{}, false, err
	}
	defer closer.Close()
	rec, err := decodeRecord(id, v)
	if err != nil {
		return FileRecord{}, false, fmt.Errorf("file id %d: %w", id, err)
	}
	return rec, true, nil
}

// Files calls fn for every indexed file whose path starts with prefix, in
// path order (bytewise), on the caller's goroutine, and returns fn's first
// error unwrapped. It sees the index as it was when it started, whatever is written
// meanwhile. fn may call the index's other methods, except Close.
func (ix *Index) Files(prefix string, fn func(FileRecord) error) error {
	if err := ix.acquire(); err != nil {
		return fmt.Errorf("index.Files: %w", err)
	}
	defer ix.release()
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	lo := pathKey(prefix)
	var fnErr error
	err := scan(snap, lo, prefixEnd(lo), func(k, v []byte) error {
		id, err := decodeID(v)
		if err != nil {
			return fmt.Errorf("path %q: %w", k[1:], err)
		}
		rec, found, err := readRecord(snap, id)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: path %q names file id %d, which has no record", ErrCorrupt, k[1:], id)
		}
		fnErr = fn(rec)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("index.Files %q: %w", prefix, err)
	}
	return nil
}
