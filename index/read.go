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
	rec, _, found, err := ix.lookup(ix.db, path)
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
		rec, _, found, err := readRecord(snap, id)
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

// lookup reads the record of the file at path from r, with its content's,
// and returns it and its content id.
func (ix *Index) lookup(r pebble.Reader, path string) (FileRecord, uint32, bool, error) {
	v, found, err := getValue(r, pathKey(path))
	if err != nil || !found {
		return FileRecord{}, 0, false, err
	}
	id, err := decodeID(v)
	if err != nil {
		return FileRecord{}, 0, false, err
	}
	rec, cid, found, err := readRecord(r, id)
	if err == nil && !found {
		err = fmt.Errorf("%w: path %q names file id %d, which has no record", ErrCorrupt, path, id)
	}
	return rec, cid, found, err
}

// readRecord reads and decodes the record of file id from r, and its
// content's record, and returns them as one FileRecord and the content id.
// A file record whose content has no record is corrupt.
func readRecord(r pebble.Reader, id uint32) (FileRecord, uint32, bool, error) {
	meta, cid, found, err := readMeta(r, id)
	if err != nil || !found {
		return FileRecord{}, 0, found, err
	}
	rec := FileRecord{ID: id, FileMeta: meta}
	found, err = readContent(r, cid, &rec)
	if err == nil && !found {
		err = fmt.Errorf("%w: file id %d (%q) names content %d, which has no record", ErrCorrupt, id, meta.Path, cid)
	}
	if err != nil {
		return FileRecord{}, 0, false, err
	}
	return rec, cid, true, nil
}

// readMeta reads and decodes the record of file id from r, without its
// content's record.
func readMeta(r pebble.Reader, id uint32) (FileMeta, uint32, bool, error) {
	v, closer, err := r.Get(recordKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return FileMeta{}, 0, false, nil
	}
	if err != nil {
		return FileMeta{}, 0, false, err
	}
	defer closer.Close()
	meta, cid, err := decodeRecord(v)
	if err != nil {
		return FileMeta{}, 0, false, fmt.Errorf("file id %d: %w", id, err)
	}
	return meta, cid, true, nil
}

// readContent reads the record of content cid from r into rec's content
// fields (decodeContent).
func readContent(r pebble.Reader, cid uint32, rec *FileRecord) (bool, error) {
	v, closer, err := r.Get(contentKey(cid))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	if _, err := decodeContent(v, rec); err != nil {
		return false, fmt.Errorf("content %d: %w", cid, err)
	}
	rec.Content = cid
	return true, nil
}

// readForward reads and decodes the forward list of content cid from r.
func readForward(r pebble.Reader, cid uint32) ([]entry, bool, error) {
	v, closer, err := r.Get(forwardKey(cid))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	es, err := decodeForward(v)
	if err != nil {
		return nil, false, fmt.Errorf("forward list of content %d: %w", cid, err)
	}
	return es, true, nil
}

// scanFiles calls fn for every file in r whose path starts with prefix, in
// path order, with its record and content id.
func scanFiles(r pebble.Reader, prefix string, fn func(rec FileRecord, cid uint32) error) error {
	lo := pathKey(prefix)
	return scan(r, lo, prefixEnd(lo), func(k, v []byte) error {
		id, err := decodeID(v)
		if err != nil {
			return fmt.Errorf("path %q: %w", k[1:], err)
		}
		rec, cid, found, err := readRecord(r, id)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: path %q names file id %d, which has no record", ErrCorrupt, k[1:], id)
		}
		return fn(rec, cid)
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
	err := scanFiles(snap, prefix, func(rec FileRecord, _ uint32) error {
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
