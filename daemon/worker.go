package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc/filestat"
)

// worker handles items until ctx is done.
func (d *Daemon) worker(ctx context.Context, r *reader) {
	for {
		it, ok := d.lanes.next(ctx)
		if !ok {
			return
		}
		done := func() {}
		if it.t.scan != nil {
			done = d.first.scan(ctx) // queries first (queryfirst.go)
		}
		d.lanes.busy.Add(1)
		d.handle(ctx, r, it)
		d.lanes.busy.Add(-1)
		done()
	}
}

// handle brings it.path up to date under the path's claim, looking again
// as long as other changes to it arrive meanwhile.
func (d *Daemon) handle(ctx context.Context, r *reader, it item) {
	if !d.claims.take(it.path, it.t) {
		return // the claimant looks again and releases it.t
	}
	info := it.info
	var size int64 // of the file the first attempt found, for the progress
	if info != nil {
		size = info.Size()
	}
	if s := it.t.scan; s != nil && s.full() && it.walked {
		defer func() {
			s.root.filesDone.Add(1)
			s.root.bytesDone.Add(uint64(size))
			if it.info == nil {
				s.root.bytesSeen.Add(uint64(size))
			}
		}()
	}
	unstatted := it.walked && info == nil
	for {
		n := d.syncPath(ctx, r, it.path, info, unstatted, it.t)
		if unstatted {
			size = n
		}
		info, unstatted = nil, false
		again, handed := d.claims.finish(it.path)
		if !again || ctx.Err() != nil {
			it.t.release(d.track)
			for _, t := range handed {
				t.release(d.track)
			}
			if again { // shutting down: let the claim go
				d.claims.finish(it.path)
			}
			return
		}
	}
}

// syncPath makes the index agree with what is at path on disk now. info
// is the path's lstat if the caller has a fresh one. unstatted says
// instead that a fresh scan's walk listed a regular file at path and did
// not stat it: the file is opened and stat'ed at once, and syncPath
// returns the size it read, for the scan's progress.
func (d *Daemon) syncPath(ctx context.Context, r *reader, path string, info fs.FileInfo, unstatted bool, t ticket) (size int64) {
	if isCookie(path) {
		return 0
	}
	root := d.rootOf(path)
	if root == nil {
		d.forget(path) // its root was removed
		return 0
	}
	if d.filter().excluded(root.path, path, false) {
		if d.forget(path) {
			d.count.excluded.Add(1)
		}
		return 0
	}
	if unstatted && t.scan != nil && t.scan.fresh {
		return d.indexFile(ctx, r, root, path, nil, t)
	}
	if info == nil {
		var err error
		info, err = os.Lstat(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				if d.rootMissing(root) {
					return 0 // kept until the root is back
				}
				d.gone(ctx, path, t)
				return 0
			}
			if isPermission(err) && root.denied.above(path) {
				// Below a directory listed as denied: that says it.
				d.count.unreadable.Add(1)
			} else {
				d.skip(root, path, fmt.Errorf("%s: %w: %w", path, errUnreadable, unwrapPathErr(err)))
			}
			d.forget(path)
			return 0
		}
	}
	mode := info.Mode()
	switch {
	case mode.IsDir():
		// A directory's contents reach the index through scans; its own
		// path has a record only if it was a file before. Its permissions
		// may have changed (denied.go).
		d.forget(path)
		d.dirChanged(root, path)
		return 0
	case mode&fs.ModeSymlink != 0:
		d.count.symlinks.Add(1)
		d.forget(path)
		return 0
	case !mode.IsRegular():
		d.count.special.Add(1)
		d.forget(path)
		return 0
	}
	if min := d.filter().minSize; min > 0 && info.Size() < min {
		d.count.tooSmall.Add(1)
		d.forget(path)
		return 0
	}
	return d.indexFile(ctx, r, root, path, info, t)
}

// indexFile brings the regular file at path into the index, unless the
// index already holds it (same size, mtime, device and inode) or holds it
// under another path it was moved from. info is the file's lstat; it may
// be nil in a fresh scan, which looks for neither. It returns the size of
// the file it read, or 0.
func (d *Daemon) indexFile(ctx context.Context, r *reader, root *rootState, path string, info fs.FileInfo, t ticket) int64 {
	if testHookIndexFile != nil {
		testHookIndexFile(path)
	}
	// A file of a first scan into an index that held nothing under its
	// root has no record to compare, or to have been moved from, unless
	// written during the scan: it is read without looking (at worst read
	// twice).
	fresh := t.scan != nil && t.scan.fresh
	if !fresh {
		rec, err := d.ix.Lookup(path)
		// A file now above the maximum size (lowered by a reload) is
		// not unchanged: reading it finds it too large and forgets it.
		if err == nil && sameMeta(rec.FileMeta, info) && !d.racy.covers(info.ModTime().UnixNano()) && !d.filter().tooLarge(info.Size()) {
			d.count.unchanged.Add(1)
			return 0
		}
	}
	if d.faults.held(path) {
		return 0 // not worth reading while the index cannot take it
	}
	if !fresh {
		if dev, ino := fileID(info); d.renamed(path, info, dev, ino, info.ModTime().UnixNano()) {
			return 0
		}
	}
	r.maxSize = d.filter().maxSize
	r.between = nil
	if t.scan != nil {
		r.between = func() { d.first.yield(ctx) }
	}
	// The index chooses how the file is written (index.Index.PutFile): a
	// copy of a content it holds joins it without being fingerprinted, so
	// the sketch of a file read whole is made only when it is new. A first
	// scan passes its Bulk, which tells the copies of bytes the scan has
	// met, and leaves the postings of new contents for the index to write
	// many at a time; the scan writes the last of them before it ends.
	meta, strong, sketch, err := r.load(ctx, path, info)
	if min := d.filter().minSize; err == nil && info == nil && min > 0 && meta.Size < min {
		d.count.tooSmall.Add(1) // not stat'ed before: see syncPath
		d.forget(path)
		return meta.Size
	}
	if err == nil {
		w := index.FileWrite{Meta: meta, Strong: strong, Sketch: sketch, MakeSketch: r.sketch, Deferred: fresh}
		if t.scan != nil {
			w.Bulk = t.scan.contents
		}
		if err := d.ix.PutFile(w); err != nil {
			d.count.errors.Add(1)
			if errors.Is(err, errWritesHeld) || errors.Is(err, index.ErrClosed) {
				return meta.Size // kept, or rescanned into the rebuilt index
			}
			d.errs.add(fmt.Sprintf("%s: indexing: %v", path, err))
			d.log.Error("index write failed", "path", path, "err", err)
			return meta.Size
		}
		d.count.indexed.Add(1)
		root.denied.remove(path)
		root.filesRead.Add(1)
		root.bytesRead.Add(uint64(meta.Size))
		d.retries.clear(path)
		return meta.Size
	}
	if ctx.Err() != nil {
		return 0
	}
	if errors.Is(err, errChanged) {
		d.count.changed.Add(1)
		d.changing.duringRead(path)
		// Put back to be read once it has settled again, unless it has
		// changed during too many reads in a row: it is then left until
		// its next change.
		if d.retries.more(path) {
			d.touch(path, t.waitEpoch(), false)
			return 0
		}
	}
	d.skip(root, path, err)
	// What the index holds for this path no longer describes the disk; a
	// file still changing keeps its old record until it is read whole.
	if !errors.Is(err, errChanged) {
		d.forget(path)
	}
	return 0
}

// renamed recognises a file moved or renamed to path: the index holds a
// file with the same device, inode, size and mtime under a path where that
// file no longer is. Its record is moved to path without reading it.
func (d *Daemon) renamed(path string, info fs.FileInfo, dev, ino uint64, mtime int64) bool {
	if ino == 0 {
		return false // no inode numbers here (Windows)
	}
	recs, err := d.ix.LookupInode(dev, ino)
	if err != nil {
		d.log.Error("index inode lookup failed", "path", path, "err", err)
		return false
	}
	for _, c := range recs {
		if c.Path == path || c.FileMeta.Size != info.Size() || c.MtimeNs != mtime {
			continue
		}
		if st, err := os.Lstat(c.Path); err == nil {
			if sdev, sino := fileID(st); sdev == dev && sino == ino {
				continue // a hard link: both paths are this file
			}
		}
		meta := index.FileMeta{Path: path, Size: info.Size(), MtimeNs: mtime, CtimeNs: filestat.Ctime(info), Dev: dev, Ino: ino, Mode: uint32(info.Mode())}
		if testHookRename != nil {
			testHookRename(d, c.Path, path)
		}
		// Only if the record at c.Path is still c: a worker writing a new
		// file at c.Path meanwhile may have given the record its content.
		if err := d.ix.RenameIf(c.FileMeta, meta); err != nil {
			if !errors.Is(err, index.ErrNotFound) && !errors.Is(err, errWritesHeld) { // else removed or replaced meanwhile: read it
				d.log.Error("index rename failed", "from", c.Path, "to", path, "err", err)
			}
			return false
		}
		d.count.renamed.Add(1)
		d.log.Debug("moved", "from", c.Path, "to", path)
		return true
	}
	return false
}

// Test hooks, when set: testHookIndexFile is called as a worker begins to
// bring a file up to date, testHookRename just before renamed moves the
// record at from to to. Tests order workers with them.
var (
	testHookIndexFile func(path string)
	testHookRename    func(d *Daemon, from, to string)
)

// gone handles a path that no longer exists: its record, and the records
// below it if it was a directory, are removed.
func (d *Daemon) gone(ctx context.Context, path string, t ticket) {
	d.forget(path)
	if !d.ix.hasFilesUnder(path) {
		return
	}
	// A directory moved within the roots shows up as a new directory
	// whose scan renames its files' records from under the old path. Put
	// the removal off while such scans run, so they find the records.
	// At most goneDeferrals times in a row.
	if d.live.active() && d.deferrals.more(path) {
		d.touch(path, t.waitEpoch(), true)
		return
	}
	d.deferrals.clear(path)
	d.removeUnder(ctx, path)
}

// removeUnder removes the records below dir whose files are no longer
// regular files, and makes workers busy below dir look again.
func (d *Daemon) removeUnder(ctx context.Context, dir string) {
	var gone []string
	err := d.ix.Files(dirPrefix(dir), func(rec index.FileRecord) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if st, err := os.Lstat(rec.Path); err != nil || !st.Mode().IsRegular() {
			gone = append(gone, rec.Path)
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		d.log.Error("listing records failed", "dir", dir, "err", err)
	}
	for _, p := range gone {
		d.forget(p)
	}
	d.claims.markUnder(dir)
	if len(gone) > 0 {
		d.log.Debug("removed records under a vanished directory", "dir", dir, "count", len(gone))
	}
}

// forget removes path's record, if any, and reports whether there was one.
func (d *Daemon) forget(path string) bool {
	err := d.ix.Remove(path)
	switch {
	case err == nil:
		d.count.removed.Add(1)
		return true
	case errors.Is(err, index.ErrNotFound), errors.Is(err, errWritesHeld), errors.Is(err, index.ErrClosed):
	default:
		d.count.errors.Add(1)
		d.log.Error("index remove failed", "path", path, "err", err)
	}
	return false
}

// skip counts and logs a file or directory that was not indexed.
func (d *Daemon) skip(root *rootState, path string, err error) {
	switch {
	case errors.Is(err, errVanished):
		d.count.vanished.Add(1)
		return // ordinary churn, not worth a line
	case errors.Is(err, errSymlink):
		d.count.symlinks.Add(1)
		return
	case errors.Is(err, errSpecial):
		d.count.special.Add(1)
		return
	case errors.Is(err, errChanged): // counted by indexFile
	case errors.Is(err, errTooLarge):
		d.count.tooLarge.Add(1)
	default:
		d.count.unreadable.Add(1)
	}
	if root != nil {
		root.setErr(err)
		if isPermission(err) && !root.denied.add(path, err) {
			d.log.Debug("skipped again", "err", err) // logged when first denied
			return
		}
	}
	d.errs.add(err.Error())
	d.log.Warn("skipped", "err", err)
}
