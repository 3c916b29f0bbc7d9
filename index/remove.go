package index

import (
	"errors"
	"fmt"
	"slices"
)

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
	w.noteChange(rec.ID)
	return w.commit()
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
		w.removeContent(cid, &rec.Summary, es)
	}
	w.removeRecord(rec, cid)
	return nil
}

// removeRecord adds to w the deletion of the keys of file rec, which holds
// content cid, but its path key and its content's.
func (w *batch) removeRecord(rec FileRecord, cid uint32) {
	w.delete(copyKey(cid, rec.ID))
	w.moves = append(w.moves, copyMove{cid, -1})
	w.delete(inodeKey(rec.Dev, rec.Ino, rec.ID))
	w.delete(recordKey(rec.ID))
	w.noteChange(rec.ID)
	w.delta.Files--
	w.delta.Features -= int64(rec.Features)
	w.delta.Bytes -= int64(fileBytes(rec.FileMeta))
}

// MaxRemoveBatch bounds the paths of one RemovePaths call: its batch holds
// the write lock while it reads their records, so a larger one would keep
// other writers waiting longer.
const MaxRemoveBatch = 1024

// RemovePaths removes the files at paths, those that are indexed, in one
// atomic batch, with the contents no file left holds, and returns how many
// it removed and their bytes (as Stats counts them). It is Remove for many
// files at once: the postings of the contents it deletes go as one merge
// operand per bucket for the whole batch rather than one per bucket per
// file, so forgetting a tree writes a fraction of the keys Remove would,
// and Pebble's memtables and level 0 fill that much slower. At most
// MaxRemoveBatch paths; a path given twice counts once.
func (ix *Index) RemovePaths(paths []string) (files int, bytes uint64, err error) {
	if len(paths) > MaxRemoveBatch {
		return 0, 0, fmt.Errorf("index.RemovePaths: %d paths, more than %d", len(paths), MaxRemoveBatch)
	}
	files, bytes, err = ix.removePaths(paths)
	if err != nil {
		return 0, 0, fmt.Errorf("index.RemovePaths (%d paths, from %q): %w", len(paths), paths[0], err)
	}
	return files, bytes, nil
}

func (ix *Index) removePaths(paths []string) (int, uint64, error) {
	if err := ix.beginWrite(); err != nil {
		return 0, 0, err
	}
	defer ix.endWrite()
	type gone struct {
		rec FileRecord
		cid uint32
	}
	var files []gone
	leaving := make(map[uint32]map[uint32]bool) // content id → ids of its files removed here
	var bytes uint64
	for _, p := range paths {
		rec, cid, found, err := ix.lookup(ix.db, p)
		if err != nil {
			return 0, 0, err
		}
		if !found || leaving[cid][rec.ID] {
			continue
		}
		if leaving[cid] == nil {
			leaving[cid] = make(map[uint32]bool)
		}
		leaving[cid][rec.ID] = true
		files = append(files, gone{rec, cid})
		bytes += fileBytes(rec.FileMeta)
	}
	if len(files) == 0 {
		return 0, 0, nil
	}
	w := ix.newBatch()
	defer w.close()
	var tombs []postingEntry
	for _, f := range files {
		ids := leaving[f.cid]
		if ids == nil {
			continue // its content is dealt with
		}
		delete(leaving, f.cid)
		last, err := ix.onlyCopies(f.cid, ids)
		if err != nil {
			return 0, 0, err
		}
		if !last {
			continue
		}
		if err := ix.flushPendingOf(f.cid); err != nil {
			return 0, 0, err
		}
		es, err := ix.readForward(f.cid)
		if err != nil {
			return 0, 0, err
		}
		for _, e := range es {
			tombs = append(tombs, postingEntry{e.key, f.cid, tombstone})
		}
		w.dropContent(f.cid, &f.rec.Summary, len(es))
	}
	slices.SortFunc(tombs, comparePostings)
	w.mergePostings(tombs)
	for _, f := range files {
		w.removeRecord(f.rec, f.cid)
		w.delete(pathKey(f.rec.Path))
	}
	if err := w.commit(); err != nil {
		return 0, 0, err
	}
	return len(files), bytes, nil
}

// onlyCopies reports whether the files ids are all that hold content cid.
func (ix *Index) onlyCopies(cid uint32, ids map[uint32]bool) (bool, error) {
	prefix := copyPrefix(nil, cid)
	only := true
	err := scanUntil(ix.db, prefix, prefixEnd(prefix), func(k, _ []byte) (bool, error) {
		_, id, err := parseCopyKey(k)
		if err != nil {
			return false, err
		}
		only = ids[id]
		return only, nil
	})
	return only, err
}
