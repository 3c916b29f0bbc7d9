package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/watcher"
)

// rootState is one root: how it is kept up to date, and the progress of
// its current or last full scan.
type rootState struct {
	path   string
	source string // "config" or "added"
	fsName string
	// polled roots are on a filesystem without change events: they are
	// scanned every rescan interval instead of watched.
	polled bool

	ctx    context.Context // cancelled when the root is removed
	cancel context.CancelFunc
	// begun is closed once the root's watches are in place and its
	// first scan is queued (startRoot): from then on Wait's cookie proves
	// that every earlier change was seen.
	begun chan struct{}

	filesSeen, bytesSeen, filesDone, bytesDone, filesRead, bytesRead atomic.Uint64
	walkDone                                                         atomic.Bool
	scans                                                            atomic.Uint64
	// watchBelow says that only the root directory is watched yet: the
	// next full scan's walk watches each directory below it before it
	// lists it (watcher.Watcher.AddRootShallow).
	watchBelow atomic.Bool

	mu                sync.Mutex
	scanning          bool
	fullQueued        int    // full scans requested and not yet ended, running or not
	failed            string // why the last full scan failed
	missing           string // why the root is not there now, or ""
	mountPoint        bool   // the root was seen to be a mount point
	started, finished time.Time
	lastErr           string
	unwatched         map[string]string // directory → why it is not watched
	// denied holds what could not be read for lack of permission.
	denied deniedSet
	// Overflow back-off: a reconcile after lost events waits backoff
	// after the previous one when overflows repeat.
	backoff      time.Duration
	lastOverflow time.Time
	overflowDue  bool // a reconcile for an overflow is scheduled
}

func newRootState(ctx context.Context, path, source string) *rootState {
	r := &rootState{path: path, source: source, unwatched: make(map[string]string), begun: make(chan struct{})}
	r.mountPoint = isMountPoint(path)
	r.ctx, r.cancel = context.WithCancel(ctx)
	return r
}

// context returns ctx, also cancelled when the root is removed.
func (r *rootState) context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(r.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (r *rootState) beginScan() {
	r.filesSeen.Store(0)
	r.bytesSeen.Store(0)
	r.filesDone.Store(0)
	r.bytesDone.Store(0)
	r.filesRead.Store(0)
	r.bytesRead.Store(0)
	r.walkDone.Store(false)
	r.scans.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scanning = true
	r.started = time.Now()
	r.finished = time.Time{}
}

func (r *rootState) endScan(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scanning = false
	r.finished = time.Now()
	if err == nil {
		r.failed = ""
	}
}

func (r *rootState) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = err.Error()
	r.lastErr = err.Error()
}

// watchedWhole reports whether every directory of the root is watched
// and the root has not failed.
func (r *rootState) watchedWhole() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.polled && r.failed == "" && len(r.unwatched) == 0
}

func (r *rootState) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr = err.Error()
}

func (r *rootState) setUnwatched(dir string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unwatched[dir] = err.Error()
}

// clearUnwatchedUnder forgets that dir and the directories below it
// could not be watched, before they are tried again.
func (r *rootState) clearUnwatchedUnder(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range r.unwatched {
		if under(d, dir) {
			delete(r.unwatched, d)
		}
	}
}

// unwatchedDirs returns the directories that could not be watched.
func (r *rootState) unwatchedDirs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.unwatched))
}

func (r *rootState) status() ipc.RootStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := ipc.RootStatus{
		Path:      r.path,
		FS:        r.fsName,
		Source:    r.source,
		Unwatched: len(r.unwatched),
		FilesSeen: r.filesSeen.Load(),
		BytesSeen: r.bytesSeen.Load(),
		FilesDone: r.filesDone.Load(),
		BytesDone: r.bytesDone.Load(),
		FilesRead: r.filesRead.Load(),
		BytesRead: r.bytesRead.Load(),
		WalkDone:  r.walkDone.Load(),
		Scans:     r.scans.Load(),
		LastError: r.lastErr,
		Denied:    r.denied.status(),
	}
	switch {
	case r.missing != "":
		st.State, st.Reason = ipc.RootMissing, r.missing+": its files are not answered until it is back"
	case r.failed != "":
		st.State, st.Reason = ipc.RootFailed, r.failed
	case r.scanning || r.fullQueued > 0 || !isClosed(r.begun):
		// A full scan is running or queued (before startRoot, the first
		// one is about to be): files may be missing from the index.
		st.State = ipc.RootScanning
	case r.polled:
		st.State, st.Reason = ipc.RootPolling, fmt.Sprintf("%s sends no change events: scanned every rescan interval", r.fsName)
	case len(r.unwatched) > 0:
		st.State = ipc.RootDegraded
		for d, why := range r.unwatched {
			st.Reason = fmt.Sprintf("%d directories not watched (e.g. %s: %s); rescanned every rescan interval", len(r.unwatched), d, why)
			break
		}
	default:
		st.State = ipc.RootWatching
	}
	switch {
	case !r.finished.IsZero():
		st.ScanSecs = r.finished.Sub(r.started).Seconds()
		st.ScanFinish = r.finished.UTC().Format(time.RFC3339)
	case !r.started.IsZero():
		st.ScanSecs = time.Since(r.started).Seconds()
	}
	if st.ScanSecs > 0 {
		st.BytesPerSec = float64(st.BytesDone) / st.ScanSecs
	}
	if r.scanning && st.WalkDone && st.BytesPerSec > 0 {
		eta := float64(st.BytesSeen-min(st.BytesDone, st.BytesSeen)) / st.BytesPerSec
		st.ETASecs = &eta
	}
	return st
}

// absent says why root r is not there, or "", and the error that showed
// it, if any. A root that was a mount point when first seen is absent
// while it is not one (unmounted).
func (r *rootState) absent() (string, error) {
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

// rootOf returns the root path lies under, or nil.
func (d *Daemon) rootOf(path string) *rootState {
	d.rmu.RLock()
	defer d.rmu.RUnlock()
	for _, r := range d.roots {
		if under(path, r.path) {
			return r
		}
	}
	return nil
}

// rootPaths returns the paths of the roots in effect.
func (d *Daemon) rootPaths() []string {
	var out []string
	for _, r := range d.rootList() {
		out = append(out, r.path)
	}
	return out
}

// rootList returns the current roots.
func (d *Daemon) rootList() []*rootState {
	d.rmu.RLock()
	defer d.rmu.RUnlock()
	return slices.Clone(d.roots)
}

// startRoot begins keeping root up to date: it watches the root's
// directories (or, on a filesystem without events, schedules it for
// polling), then queues its full scan. Watches come first, so no change
// made during the scan is missed: when nothing of the root is indexed
// yet, only the root directory's before the scan, and each directory's
// below it as the scan's walk enters it, before listing it. It is called once per root, and closes
// r.begun when done.
func (d *Daemon) startRoot(ctx context.Context, r *rootState, why string) *scanRun {
	defer close(r.begun)
	if testHookStartRoot != nil {
		testHookStartRoot(ctx)
	}
	if !r.polled && d.watch != nil {
		var err error
		if d.ix.hasFilesUnder(r.path) {
			err = d.watch.AddRoot(r.ctx, r.path, d.handler())
		} else {
			// Nothing of the root is indexed: its first scan walks the
			// whole tree, and watches it as it goes rather than after a
			// walk of its own.
			if err = d.watch.AddRootShallow(r.path, d.handler()); err == nil {
				r.watchBelow.Store(true)
			}
		}
		if err != nil && r.ctx.Err() == nil {
			r.fail(err)
			d.log.Error("cannot watch root", "root", r.path, "err", err)
		}
	}
	return d.requestScan(r, r.path, false, why)
}

// testHookStartRoot, when set, is called as startRoot begins, with its
// context: tests hold a root's start to see that a shutdown waits for it.
var testHookStartRoot func(ctx context.Context)

// detectFS is watcher.DetectFS; tests stand in for network filesystems.
var detectFS = watcher.DetectFS

// classifyRoot detects root's filesystem and decides whether it is
// watched or polled; it fails for a filesystem without events when the
// configuration refuses those.
func (d *Daemon) classifyRoot(r *rootState) error {
	kind, name, err := detectFS(r.path)
	if err != nil {
		return fmt.Errorf("root %s: %w", r.path, err)
	}
	r.fsName = name
	switch kind {
	case watcher.LocalFS:
		return nil
	case watcher.VirtualFS:
		return &config.PseudoFSError{Root: r.path, Real: r.path, FS: name}
	}
	if d.cfg.NetworkFS == config.NetworkFSRefuse {
		return fmt.Errorf("root %s: on a %s filesystem (%s), which sends no change events; "+
			"network_fs = \"refuse\" in the configuration refuses such roots (\"scan\" rescans them every rescan_interval)",
			r.path, kind, name)
	}
	r.polled = true
	d.log.Warn("root is on a filesystem without change events: it is rescanned periodically",
		"root", r.path, "fs", name, "kind", kind.String(), "rescan_interval", d.cfg.RescanInterval)
	return nil
}

// dropRoot stops keeping r up to date and removes its files' records.
func (d *Daemon) dropRoot(r *rootState) {
	d.rmu.Lock()
	d.roots = slices.DeleteFunc(d.roots, func(x *rootState) bool { return x == r })
	d.rmu.Unlock()
	r.cancel()
	if d.watch != nil {
		d.watch.RemoveRoot(r.path)
	}
	d.bulk.dropRoot(r, d.track)
	d.live.dropRoot(r, d.track)
	// Files under the root are now outside every root: they are removed
	// in the background, and left out of the status and answers at once
	// (forget.go).
	d.forgetRoot(r.path)
}

func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// rootOverlapError says why a directory cannot become a root: it lies
// under a root in effect (or is one), or holds one.
type rootOverlapError struct {
	path, other string
	holds       bool // path holds the root other, rather than lying under it
}

func (e *rootOverlapError) Error() string {
	if e.holds {
		return fmt.Sprintf("%s holds root %s: remove that root first", e.path, e.other)
	}
	return fmt.Sprintf("%s is already indexed, under root %s", e.path, e.other)
}

// addRoot adds path (absolute, symlinks resolved, a directory) to the roots
// in effect, from source (sourceConfig or sourceAdded): it refuses a path
// under a root or holding one (*rootOverlapError), detects the path's
// filesystem and whether it is watched or polled (classifyRoot; polled
// too when the daemon watches nothing), and inserts it in path order. The
// root's context derives from ctx. The root is not started: the caller
// calls startRoot (at start, firstScan does). A removal of the path, or
// of a root under or above it, still forgetting records is stopped before
// the root is inserted (forget.go): the records left are its scan's to
// find. Callers serialise: they hold
// ctlMu, or run before anything else does (setUpRoots).
func (d *Daemon) addRoot(ctx context.Context, path, source string) (*rootState, error) {
	for _, x := range d.rootList() {
		if under(path, x.path) {
			return nil, &rootOverlapError{path: path, other: x.path}
		}
		if under(x.path, path) {
			return nil, &rootOverlapError{path: path, other: x.path, holds: true}
		}
	}
	r := newRootState(ctx, path, source)
	if err := d.classifyRoot(r); err != nil {
		r.cancel()
		return nil, err
	}
	if d.watch == nil {
		r.polled = true
	}
	d.stopForgetting(path)
	d.rmu.Lock()
	i, _ := slices.BinarySearchFunc(d.roots, path, func(x *rootState, p string) int { return strings.Compare(x.path, p) })
	d.roots = slices.Insert(d.roots, i, r)
	d.rmu.Unlock()
	return r, nil
}
