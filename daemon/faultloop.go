package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// The fault loop (faultLoop) polls for what no error reports (the index
// directory deleted, a disk that filled, a root gone or back), rebuilds
// the index when asked to, and resumes the writes put on hold; the state
// it keeps is in faults (faults.go).

// faultLoop watches for faults until ctx is done: the index directory
// deleted, rebuilds asked for, writes on hold, missing roots; once the
// daemon is ready and the compaction after its first scan has ended (which
// reads every block it rewrites, checksums included) it verifies the whole
// index once, at the scan's priority. It returns an error
// wrapping ErrRestart, which ends Run, when the index cannot be opened
// again in this process.
func (d *Daemon) faultLoop(ctx context.Context) error {
	d.faults.opened.remember()
	t := time.NewTicker(faultPoll)
	defer t.Stop()
	compacted := d.compacted
	var verify chan error
	for {
		select {
		case <-ctx.Done():
			return nil
		case reason := <-d.faults.rebuildRq:
			if err := d.rebuild(reason, false); err != nil {
				return err
			}
		case <-compacted:
			compacted = nil
			verify = make(chan error, 1)
			ix := d.ix.cur()
			d.spawn(func(ctx context.Context) {
				var err error
				atNice(workerNice, func() { err = ix.Verify(ctx) })
				verify <- err
			})
		case err := <-verify:
			verify = nil
			if why := d.faults.opened.gone(); why != "" && err != nil {
				// Tables missing because the directory went: say so.
				if err := d.rebuild(why, true); err != nil {
					return err
				}
				continue
			}
			if index.IsCorrupt(err) {
				if err := d.rebuild("verification: "+err.Error(), false); err != nil {
					return err
				}
			}
		case <-t.C:
			if why := d.faults.opened.gone(); why != "" {
				if err := d.rebuild(why, true); err != nil {
					return err
				}
				continue
			}
			if err := d.retryWrites(ctx); err != nil {
				return err
			}
			if !d.faults.onHold() {
				_ = d.faults.checkSpace(true)
				_ = d.faults.checkWritable(true)
				d.faults.ballast.keep(d.faults.minFree)
			}
			d.debugCrashPoll()
			if d.faults.wrote.Swap(false) && !d.faults.onHold() {
				_ = d.ix.Sync() // a failed write to the log shows here
			}
			if !d.faults.onHold() {
				// What a first scan read is found by queries within a
				// tick, however long the scan. (After the Sync: a log
				// that failed is found by it, not by this larger write.)
				_ = d.ix.Flush()
			}
			d.checkRoots(ctx)
			d.changing.expire()
		}
	}
}

// rebuild moves the damaged index aside (unless its directory is gone),
// opens a new one in its place and rescans every root into it.
func (d *Daemon) rebuild(reason string, deleted bool) error {
	old := d.ix.cur()
	d.log.Error("the index is damaged or gone: it is moved aside and rebuilt by a full scan; queries are answered from the new index as it fills",
		"db", d.cfg.DB, "reason", reason)
	d.errs.add("index rebuilt: " + reason)
	if err := abandonIndex(old); err != nil && !errors.Is(err, index.ErrClosed) {
		if errors.Is(err, index.ErrWedged) {
			// The next process finishes the rebuild (rebuildnote.go).
			if err := leaveRebuildNote(d.stateDir(), reason, deleted); err != nil {
				d.log.Error("cannot leave the note of the rebuild for the next process", "err", err)
			}
			return fmt.Errorf("%w: %w", ErrRestart, err)
		}
		d.log.Debug("closing the damaged index", "err", err)
	}
	aside := ""
	if !deleted {
		var err error
		if aside, err = index.MoveAside(nil, d.cfg.DB, "corrupt"); err != nil {
			d.log.Error("cannot move the damaged index aside", "err", err)
		}
	}
	if err := os.MkdirAll(d.cfg.DB, 0o700); err != nil {
		d.log.Error("cannot recreate the index directory", "err", err)
	}
	d.restoreState()
	ix, err := d.openIndex(old.Params(), ptr(old.SimiHash()))
	if err != nil {
		d.log.Error("cannot open a new index: retrying", "err", err)
		time.AfterFunc(faultPoll, func() { d.faults.requestRebuild(reason) })
		return nil
	}
	d.ix.swap(ix)
	d.faults.opened.remember()
	d.faults.setRebuilt(reason, aside, time.Now())
	d.faults.resume.Lock()
	defer d.faults.resume.Unlock()
	d.faults.lift() // the rescans below cover what waited
	for _, r := range d.rootList() {
		d.requestScan(r, r.path, false, "index rebuilt")
	}
	return nil
}

// abandonIndex is index.Index.Abandon, a variable so that tests can
// wedge it.
var abandonIndex = (*index.Index).Abandon

// openIndex opens the index in the index directory, with params and
// SimiHash keys or not (nil: as stored).
func (d *Daemon) openIndex(params fingerprint.Params, simi *bool) (*index.Index, error) {
	return index.Open(d.cfg.DB, &index.Options{
		Params: params, SimiHash: simi, Logger: d.cfg.Logger.With("component", "pebble"),
		MoveAsideOldFormat: true, MoveAsideCorrupt: true, Journal: d.cfg.publishing(),
		OnBackgroundError: d.faults.backgroundError,
		OnUnwritable:      d.faults.onUnwritable, OnDiskFull: d.faults.onDiskFull, FS: debugFS(),
	})
}

// noteMovedAside records and logs why Open moved the index aside. The
// state directory, roots file included, is not the index's: it stays.
func (d *Daemon) noteMovedAside(ix *index.Index) {
	aside := ix.MovedAside()
	if aside == "" {
		return
	}
	if reason := ix.MoveReason(); reason != "" {
		d.faults.setRebuilt("damaged: "+reason, aside, time.Now())
		d.log.Error("the index is damaged: it was moved aside and is rebuilt by a full scan; delete the old one once done",
			"old", aside, "db", d.cfg.DB, "reason", reason)
		return
	}
	d.log.Warn("the index was written by an older sif: it was moved aside and is rebuilt by a full scan; delete the old one once done",
		"old", aside, "db", d.cfg.DB)
}

// retryWrites tries to resume index writes. It returns an error wrapping
// ErrRestart when the index cannot be reopened in this process.
func (d *Daemon) retryWrites(ctx context.Context) error {
	f := &d.faults
	due, poisoned := f.retryDue()
	if !due {
		return nil
	}

	ok := true
	if free, err := statFree(d.cfg.DB); err == nil && free < max(f.minFree, 1<<20)+f.ballast.owed() {
		ok = false
		d.log.Debug("still no room for the index", "free", free, "db", d.cfg.DB)
	}
	// A directory that does not take writes is tried again every second,
	// not with back-off: the try costs a failed open.
	unwritable := ok && !f.writableAgain()
	ok = ok && !unwritable
	if ok && !poisoned {
		// Writes went on hold before any of ours failed, but Pebble writes
		// its log in the background too, and a write of it that failed
		// for want of room fails every later one: the first that needs a
		// new memtable would kill the process (Pebble panics with its
		// lock released). A synced write of nothing shows such a log.
		if err := d.ix.probe(); err != nil {
			d.log.Warn("the index's log failed while the disk was full: reopening the index", "err", err)
			poisoned = true
		}
	}
	if ok && poisoned {
		// Reopen Pebble: its log writer keeps its first error for good.
		old := d.ix.cur()
		if err := old.Abandon(); err != nil {
			if errors.Is(err, index.ErrWedged) {
				return fmt.Errorf("%w: %w", ErrRestart, err)
			}
			d.log.Warn("closing the index that failed to write", "err", err)
		}
		ix, err := d.openIndex(old.Params(), ptr(old.SimiHash()))
		if err != nil {
			d.log.Error("cannot reopen the index", "err", err)
			ok = false
		} else {
			d.ix.swap(ix)
			d.noteMovedAside(ix)
		}
	}
	if !ok {
		f.backOff(unwritable)
		return nil
	}
	f.resume.Lock()
	defer f.resume.Unlock()
	paths, overflow, since := f.lift()
	overflow = overflow || poisoned
	d.log.Info("index writes resumed", "on_hold_for", time.Since(since).Round(time.Millisecond),
		"waiting", len(paths), "reconcile", overflow)
	if overflow {
		for _, r := range d.rootList() {
			d.requestScan(r, r.path, false, "index writes resumed")
		}
		return nil
	}
	for p := range paths {
		d.touch(p, 0, false)
	}
	return nil
}

// dirIdentity is the identity of a directory as last seen (its device
// and inode), to notice it deleted or replaced.
type dirIdentity struct {
	path     string
	dev, ino uint64
}

// remember notes the identity of the directory as it is now.
func (x *dirIdentity) remember() {
	if st, err := os.Stat(x.path); err == nil {
		x.dev, x.ino = fileID(st)
	}
}

// gone reports why the index directory is no longer the one remembered,
// or "".
func (x *dirIdentity) gone() string {
	st, err := os.Stat(x.path)
	if err != nil {
		return "the index directory was deleted"
	}
	if dev, ino := fileID(st); ino != 0 && (dev != x.dev || ino != x.ino) {
		return "the index directory was replaced"
	}
	// Pebble keeps its LOCK file from open to close and never writes it
	// again: gone, the directory was emptied under it.
	if _, err := os.Stat(filepath.Join(x.path, "LOCK")); errors.Is(err, os.ErrNotExist) {
		return "the index directory was emptied"
	}
	return ""
}

// checkRoots marks roots that went missing, and reconciles those back.
func (d *Daemon) checkRoots(ctx context.Context) {
	for _, r := range d.rootList() {
		why, err := r.absent()
		if why != "" {
			d.markMissing(r, why, err)
			continue
		}
		r.mu.Lock()
		was := r.missing
		r.missing = ""
		r.mu.Unlock()
		if was != "" {
			d.log.Info("root is back: reconciling it", "root", r.path, "was", was)
			if d.watch != nil && !r.polled {
				if err := d.watch.AddRoot(r.ctx, r.path, d.handler()); err != nil && r.ctx.Err() == nil {
					d.log.Error("cannot watch root", "root", r.path, "err", err)
				}
			}
			d.requestScan(r, r.path, false, "root back")
		}
	}
}

// rootMissing reports whether r is missing, looking now.
func (d *Daemon) rootMissing(r *rootState) bool {
	why, err := r.absent()
	if why == "" {
		return false
	}
	d.markMissing(r, why, err)
	return true
}

// missingPrefixes returns the directory prefixes of the missing roots.
func (d *Daemon) missingPrefixes() []string {
	var out []string
	for _, r := range d.rootList() {
		r.mu.Lock()
		if r.missing != "" {
			out = append(out, dirPrefix(r.path))
		}
		r.mu.Unlock()
	}
	return out
}

func ptr[T any](v T) *T { return &v }
