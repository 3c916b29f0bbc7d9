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

// LookupInode returns the records of the files with device dev and inode
// ino, in file id order: one per indexed path of the file, so several for
// hard links, and none (an empty slice and a nil error) when no indexed
// file has that inode. It finds a renamed or moved file by its inode
// without reading it again; the caller compares sizes and modification
// times to tell whether the content is still the one indexed. All records
// come from one consistent view of the index. The caller owns the result.
func (ix *Index) LookupInode(dev, ino uint64) ([]FileRecord, error) {
	recs, err := ix.lookupInode(dev, ino)
	if err != nil {
		return nil, fmt.Errorf("index.LookupInode %d:%d: %w", dev, ino, err)
	}
	return recs, nil
}

func (ix *Index) lookupInode(dev, ino uint64) ([]FileRecord, error) {
	if err := ix.acquire(); err != nil {
		return nil, err
	}
	defer ix.release()
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	lo := inodePrefix(nil, dev, ino)
	recs := []FileRecord{}
	err := scan(snap, lo, prefixEnd(lo), func(k, _ []byte) error {
		_, _, id, err := parseInodeKey(k)
		if err != nil {
			return err
		}
		rec, found, err := readRecord(snap, id)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: inode key names file id %d, which has no record", ErrCorrupt, id)
		}
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
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

// scanFiles calls fn for every file in r whose path starts with prefix, in
// path order, with its id and record.
func scanFiles(r pebble.Reader, prefix string, fn func(id uint32, rec FileRecord) error) error {
	lo := pathKey(prefix)
	return scan(r, lo, prefixEnd(lo), func(k, v []byte) error {
		id, err := decodeID(v)
		if err != nil {
			return fmt.Errorf("path %q: %w", k[1:], err)
		}
		rec, found, err := readRecord(r, id)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: path %q names file id %d, which has no record", ErrCorrupt, k[1:], id)
		}
		return fn(id, rec)
	})
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
	var fnErr error
	err := scanFiles(snap, prefix, func(_ uint32, rec FileRecord) error {
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
