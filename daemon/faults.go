package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// Faults the daemon survives without stopping (see packaging/README.md, "Faults"):
//
//   - No space left under the index. Before each write the daemon checks
//     that the index's filesystem has Config.MinFreeSpace free; below it,
//     or when a write fails with ENOSPC, index writes are put on hold: the
//     daemon is "degraded" in the status, goes on answering queries from
//     what the index holds, and keeps the paths whose changes wait (up to
//     maxHeldPaths; past that it reconciles every root instead). It tries
//     again after 1 s, doubling up to a minute; once there is room, it
//     clears the state and applies what waited. A write that Pebble itself
//     failed leaves its database unusable: it is reopened, and every root
//     reconciled, since what its log lost is not known. Before writes
//     resume without that, a synced write of nothing checks that Pebble's
//     log did not fail in the background. A failed write of the log
//     leaves Pebble's commit lock held for good, and its Close waits on
//     it: when the database cannot be closed (index.ErrWedged), Run
//     returns ErrRestart and cmd/sifd starts the daemon afresh. The index
//     keeps such failures from happening: a write of Pebble's log or
//     MANIFEST that finds no room waits for it (index.Options.
//     OnUnwritable), and the ballast is deleted to make room (ballast.go).
//   - An index directory that stops taking writes (read-only, immutable,
//     its permissions changed): writes are put on hold as for a full disk,
//     with the reason in the status, until a file can be created in it
//     again (writable.go).
//   - A damaged index (a corruption error from any read or write, at
//     start or later, or from the verification pass that reads the whole
//     index once after start), or its directory deleted: the index is
//     moved aside to DB.corrupt-TIME and rebuilt by a full scan, logged
//     once at Error and shown in the status (index_rebuilt).
//   - A root deleted, renamed away or unmounted: "missing" in the status;
//     its files stay in the index but are not answered; when it is back it
//     is watched again and reconciled (unchanged files cost a stat).
//   - A file that never stops changing: read at most once per max settle
//     delay, counted, and named in the status as still changing
//     (changing.go).

const (
	// faultPoll is how often the index directory and the roots are
	// checked, and writes since the last check synced.
	faultPoll = 2 * time.Second
	// maxHeldPaths bounds the paths kept while writes are on hold.
	maxHeldPaths   = 10000
	minHoldBackoff = time.Second
	maxHoldBackoff = time.Minute
)

// reasonNoSpace is the reason of a hold on writes for want of room.
const reasonNoSpace = "no space left on device"

// faults is the daemon's fault handling: the hold on index writes (why,
// since when, the paths that wait, the back-off of its retries), the
// rebuilds asked for and the last one done. Every error of the index
// reaches it (indexError).
type faults struct {
	db      string       // the index directory
	log     *slog.Logger // the daemon's
	errs    *errorLog    // the daemon's last errors, for the status
	minFree uint64
	ballast ballast
	wrote   atomic.Bool // writes since the last sync
	onHoldB atomic.Bool

	// resume is held by whoever lifts the hold while it queues what
	// waited, so that Wait, which closes its epoch under it, either sees
	// the hold or counts the replay (see Daemon.Wait).
	resume sync.RWMutex

	mu           sync.Mutex
	since        time.Time // writes on hold since
	reason       string
	poisoned     bool // Pebble failed a write: reopen before writing again
	heldPaths    map[string]struct{}
	overflow     bool // more paths waited than were kept: reconcile all
	backoff      time.Duration
	retryAt      time.Time
	lastCheck    time.Time // of the free space
	lastWritable time.Time // of the index directory's writability
	rebuilt      *ipc.IndexRebuild
	rebuildRq    chan string
	dbDev        uint64
	dbIno        uint64
	liftCh       chan struct{} // closed when the hold is lifted; nil until asked for
}

// init readies f for the index directory db, keeping minFree bytes free
// under it; f logs to log and notes its errors in errs.
func (f *faults) init(db string, minFree int64, log *slog.Logger, errs *errorLog) {
	f.db, f.log, f.errs = db, log, errs
	f.ballast = newBallast(db, log)
	f.minFree = uint64(max(minFree, 0))
	f.heldPaths = make(map[string]struct{})
	f.rebuildRq = make(chan string, 1)
}

func (f *faults) onHold() bool { return f.onHoldB.Load() }

// lifted returns a channel closed the next time the hold is lifted.
func (f *faults) lifted() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.liftCh == nil {
		f.liftCh = make(chan struct{})
	}
	return f.liftCh
}

// liftLocked ends the hold on writes and wakes those waiting for it; f.mu
// is held.
func (f *faults) liftLocked() {
	f.onHoldB.Store(false)
	if f.liftCh != nil {
		close(f.liftCh)
		f.liftCh = nil
	}
}

func (f *faults) isPoisoned() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.poisoned
}

// keeping reports whether writes are on hold with changes waiting: paths
// kept, or a reconcile of every root owed.
func (f *faults) keeping() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.onHold() && (len(f.heldPaths) > 0 || f.overflow || f.poisoned)
}

// held reports whether writes are on hold, keeping paths to be tried
// again if they are.
func (f *faults) held(paths ...string) bool {
	if !f.onHold() {
		return false
	}
	f.hold(paths...)
	return true
}

// hold keeps paths to be tried again once writes resume.
func (f *faults) hold(paths ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		if len(f.heldPaths) >= maxHeldPaths {
			f.overflow = true
			return
		}
		f.heldPaths[p] = struct{}{}
	}
}

// statFree is freeSpace, a variable so that tests can make a disk full.
var statFree = freeSpace

// checkSpace puts writes on hold when the index's filesystem has less
// than the minimum free. Before a write it looks at most every 100ms, so
// a write can slip past a disk that filled since; the fault loop looks
// every faultPoll with force set, so a disk below the minimum is shown
// within that time even when no write follows.
func (f *faults) checkSpace(force bool) error {
	if f.minFree == 0 {
		return nil
	}
	f.mu.Lock()
	if !force && time.Since(f.lastCheck) < 100*time.Millisecond {
		f.mu.Unlock()
		return nil
	}
	f.lastCheck = time.Now()
	f.mu.Unlock()
	free, err := statFree(f.db)
	if err != nil || free >= f.minFree {
		return nil
	}
	err = fmt.Errorf("%w: %s free under %s, below the %s kept free", errWritesHeld, humanBytes(free), f.db, humanBytes(f.minFree))
	f.holdWrites(err, false)
	return err
}

// indexError is called with every error of the index.
func (f *faults) indexError(op string, err error) {
	switch {
	case errors.Is(err, errWritesHeld), errors.Is(err, index.ErrClosed), errors.Is(err, context.Canceled):
	case isNoSpace(err):
		// A failed Pebble write (as opposed to the daemon's own check)
		// may leave its log unusable: reopen it before writing again.
		f.holdWrites(err, true)
	case index.IsCorrupt(err):
		f.requestRebuild(fmt.Sprintf("%s: %v", op, err))
	case errors.Is(err, errPebblePanic):
		f.holdWrites(err, true)
	}
}

// holdWrites puts index writes on hold after err.
func (f *faults) holdWrites(err error, poisoned bool) {
	f.mu.Lock()
	f.poisoned = f.poisoned || poisoned
	if f.onHold() {
		f.mu.Unlock()
		return
	}
	f.since = time.Now()
	f.reason = reasonNoSpace
	if !isNoSpace(err) {
		f.reason = "index writes failing"
	}
	if r := holdReason(err); r != "" {
		f.reason = r
	}
	f.backoff = minHoldBackoff
	f.retryAt = time.Now().Add(f.backoff)
	f.onHoldB.Store(true)
	f.mu.Unlock()
	f.errs.add(fmt.Sprintf("index writes on hold: %v", err))
	f.log.Error("index writes on hold: queries are answered from what the index holds; retrying with back-off",
		"db", f.db, "err", err)
}

// retryDue reports whether writes are on hold and the time to try them
// again has come, and whether Pebble failed a write meanwhile.
func (f *faults) retryDue() (due, poisoned bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.onHold() || time.Now().Before(f.retryAt) {
		return false, false
	}
	return true, f.poisoned
}

// backOff puts the next try off: twice as long as the last, up to
// maxHoldBackoff, or minHoldBackoff for an index directory that does not
// take writes (unwritable), since that try costs a failed open.
func (f *faults) backOff(unwritable bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backoff = min(2*f.backoff, maxHoldBackoff)
	if unwritable {
		f.backoff = minHoldBackoff
	}
	f.retryAt = time.Now().Add(f.backoff)
}

// lift ends the hold on writes and returns what waited: the paths kept,
// whether more paths waited than were kept (every root is then
// reconciled), and since when writes were held. The caller holds
// f.resume while it queues what waited.
func (f *faults) lift() (paths map[string]struct{}, overflow bool, since time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	paths, overflow, since = f.heldPaths, f.overflow, f.since
	f.heldPaths = make(map[string]struct{})
	f.overflow, f.poisoned, f.reason = false, false, ""
	f.liftLocked()
	return paths, overflow, since
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
		ix, err := d.openIndex(old.Params())
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

// openIndex opens the index in the index directory, with params.
func (d *Daemon) openIndex(params fingerprint.Params) (*index.Index, error) {
	return index.Open(d.cfg.DB, &index.Options{
		Params: params, Logger: d.cfg.Logger.With("component", "pebble"),
		MoveAsideOldFormat: true, MoveAsideCorrupt: true,
		OnBackgroundError: d.faults.backgroundError,
		OnUnwritable:      d.faults.onUnwritable, OnDiskFull: d.faults.onDiskFull, FS: debugFS(),
	})
}

// backgroundError is called on Pebble's goroutines.
func (f *faults) backgroundError(err error) {
	if isNoSpace(err) {
		f.holdWrites(err, false)
	}
}

// noteMovedAside records and logs why Open moved the index aside. The
// state directory, roots file included, is not the index's: it stays.
func (d *Daemon) noteMovedAside(ix *index.Index) {
	aside := ix.MovedAside()
	if aside == "" {
		return
	}
	if reason := ix.MoveReason(); reason != "" {
		d.faults.setRebuilt("damaged: "+reason, aside)
		d.log.Error("the index is damaged: it was moved aside and is rebuilt by a full scan; delete the old one once done",
			"old", aside, "db", d.cfg.DB, "reason", reason)
		return
	}
	d.log.Warn("the index was written by an older sif: it was moved aside and is rebuilt by a full scan; delete the old one once done",
		"old", aside, "db", d.cfg.DB)
}

// setRebuilt records the rebuild of the index, for the status.
func (f *faults) setRebuilt(reason, aside string) {
	f.mu.Lock()
	f.rebuilt = &ipc.IndexRebuild{Reason: reason, MovedTo: aside, At: time.Now().UTC()}
	f.mu.Unlock()
}

// requestRebuild asks the fault loop to rebuild the index.
func (f *faults) requestRebuild(reason string) {
	select {
	case f.rebuildRq <- reason:
	default: // one is asked for already
	}
}

// rebuild moves the damaged index aside (unless its directory is gone),
// opens a new one in its place and rescans every root into it.
func (d *Daemon) rebuild(reason string, deleted bool) error {
	old := d.ix.cur()
	d.log.Error("the index is damaged or gone: it is moved aside and rebuilt by a full scan; queries are answered from the new index as it fills",
		"db", d.cfg.DB, "reason", reason)
	d.errs.add("index rebuilt: " + reason)
	if err := old.Abandon(); err != nil && !errors.Is(err, index.ErrClosed) {
		if errors.Is(err, index.ErrWedged) {
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
	ix, err := d.openIndex(old.Params())
	if err != nil {
		d.log.Error("cannot open a new index: retrying", "err", err)
		time.AfterFunc(faultPoll, func() { d.faults.requestRebuild(reason) })
		return nil
	}
	d.ix.swap(ix)
	d.rememberDB()
	d.faults.setRebuilt(reason, aside)
	d.faults.resume.Lock()
	defer d.faults.resume.Unlock()
	d.faults.lift() // the rescans below cover what waited
	for _, r := range d.rootList() {
		d.requestScan(r, r.path, false, "index rebuilt")
	}
	return nil
}

// rememberDB notes the identity of the index directory, to notice it
// deleted or replaced.
func (d *Daemon) rememberDB() {
	if st, err := os.Stat(d.cfg.DB); err == nil {
		d.faults.dbDev, d.faults.dbIno = fileID(st)
	}
}

// dbGone reports why the index directory is no longer the one opened, or
// "".
func (d *Daemon) dbGone() string {
	st, err := os.Stat(d.cfg.DB)
	if err != nil {
		return "the index directory was deleted"
	}
	if dev, ino := fileID(st); ino != 0 && (dev != d.faults.dbDev || ino != d.faults.dbIno) {
		return "the index directory was replaced"
	}
	// Pebble keeps its LOCK file from open to close and never writes it
	// again: gone, the directory was emptied under it.
	if _, err := os.Stat(filepath.Join(d.cfg.DB, "LOCK")); errors.Is(err, os.ErrNotExist) {
		return "the index directory was emptied"
	}
	return ""
}

// faultLoop watches for faults until ctx is done: the index directory
// deleted, rebuilds asked for, writes on hold, missing roots; once the
// daemon is ready it verifies the whole index once. It returns an error
// wrapping ErrRestart, which ends Run, when the index cannot be opened
// again in this process.
func (d *Daemon) faultLoop(ctx context.Context) error {
	d.rememberDB()
	t := time.NewTicker(faultPoll)
	defer t.Stop()
	ready := d.ready
	var verify chan error
	for {
		select {
		case <-ctx.Done():
			return nil
		case reason := <-d.faults.rebuildRq:
			if err := d.rebuild(reason, false); err != nil {
				return err
			}
		case <-ready:
			ready = nil
			verify = make(chan error, 1)
			ix := d.ix.cur()
			d.spawn(func(ctx context.Context) { verify <- ix.Verify(ctx) })
		case err := <-verify:
			verify = nil
			if index.IsCorrupt(err) {
				if err := d.rebuild("verification: "+err.Error(), false); err != nil {
					return err
				}
			}
		case <-t.C:
			if why := d.dbGone(); why != "" {
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

// checkRoots marks roots that went missing, and reconciles those back.
func (d *Daemon) checkRoots(ctx context.Context) {
	for _, r := range d.rootList() {
		why, err := d.rootAbsent(r)
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

// rootAbsent says why root r is not there, or "", and the error that
// showed it, if any. A root that was a mount point when first seen is
// absent while it is not one (unmounted).
func (d *Daemon) rootAbsent(r *rootState) (string, error) {
	st, err := os.Stat(r.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "not found", err
		}
		return "cannot be examined: " + unwrapPathErr(err).Error(), err
	}
	if !st.IsDir() {
		return "not a directory", nil
	}
	pst, err := os.Stat(filepath.Dir(r.path))
	if err != nil {
		return "", nil
	}
	dev, _ := fileID(st)
	pdev, _ := fileID(pst)
	r.mu.Lock()
	defer r.mu.Unlock()
	if dev != pdev {
		r.mountPoint = true
	} else if r.mountPoint {
		return "unmounted", nil
	}
	return "", nil
}

// isMountPoint reports whether dir is on another filesystem than its
// parent.
func isMountPoint(dir string) bool {
	st, err := os.Stat(dir)
	if err != nil {
		return false
	}
	pst, err := os.Stat(filepath.Dir(dir))
	if err != nil {
		return false
	}
	dev, _ := fileID(st)
	pdev, _ := fileID(pst)
	return dev != pdev
}

// rootMissing reports whether r is missing, looking now.
func (d *Daemon) rootMissing(r *rootState) bool {
	why, err := d.rootAbsent(r)
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

// status adds the hold on writes and the last rebuild to a status.
func (f *faults) status(st *ipc.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onHold() {
		st.State = "degraded"
		st.Reason = fmt.Sprintf("%s: index writes on hold since %s, retrying every %s; %d changes waiting",
			f.reason, f.since.UTC().Format(time.RFC3339), f.backoff, len(f.heldPaths))
		if f.overflow || f.poisoned {
			st.Reason += " (and a reconcile of every root)"
		}
		if f.reason == reasonNoSpace {
			free, err := statFree(f.db)
			if err == nil {
				st.LowSpace = &ipc.LowSpace{FreeBytes: free, MinFreeBytes: f.minFree, Setting: minFreeSetting}
				st.Reason += "; " + lowSpaceText(free, f.minFree)
			}
		}
	}
	if f.rebuilt != nil {
		rb := *f.rebuilt
		st.IndexRebuilt = &rb
	}
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
