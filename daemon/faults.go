package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sif-dev/sif/index"
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
	// opened is the index directory as last opened, checked by the fault
	// loop alone.
	opened  dirIdentity
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
	liftCh       chan struct{} // closed when the hold is lifted; nil until asked for
}

// init readies f for the index directory db, keeping minFree bytes free
// under it; f logs to log and notes its errors in errs.
func (f *faults) init(db string, minFree int64, log *slog.Logger, errs *errorLog) {
	f.db, f.log, f.errs = db, log, errs
	f.opened = dirIdentity{path: db}
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

// due reports whether a check last made at *last (a field of f) is due:
// when force is set, or 100 ms after the last. A check due is taken to be
// made now. It takes f.mu.
func (f *faults) due(last *time.Time, force bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !force && time.Since(*last) < 100*time.Millisecond {
		return false
	}
	*last = time.Now()
	return true
}

// checkSpace puts writes on hold when the index's filesystem has less
// than the minimum free. Before a write it looks at most every 100ms, so
// a write can slip past a disk that filled since; the fault loop looks
// every faultPoll with force set, so a disk below the minimum is shown
// within that time even when no write follows.
func (f *faults) checkSpace(force bool) error {
	if f.minFree == 0 {
		return nil
	}
	if !f.due(&f.lastCheck, force) {
		return nil
	}
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

// backgroundError is called on Pebble's goroutines.
func (f *faults) backgroundError(err error) {
	if isNoSpace(err) {
		f.holdWrites(err, false)
	}
}

// setRebuilt records the rebuild of the index, for the status.
func (f *faults) setRebuilt(reason, aside string, at time.Time) {
	f.mu.Lock()
	f.rebuilt = &ipc.IndexRebuild{Reason: reason, MovedTo: aside, At: at.UTC()}
	f.mu.Unlock()
}

// requestRebuild asks the fault loop to rebuild the index.
func (f *faults) requestRebuild(reason string) {
	select {
	case f.rebuildRq <- reason:
	default: // one is asked for already
	}
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
