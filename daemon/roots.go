package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/server"
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

	mu                sync.Mutex
	scanning          bool
	fullQueued        int    // full scans requested and not yet ended, running or not
	failed            string // why the last full scan failed
	missing           string // why the root is not there now, or ""
	mountPoint        bool   // the root was seen to be a mount point
	started, finished time.Time
	lastErr           string
	unwatched         map[string]string // directory → why it is not watched
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

// unwatchedDirs returns the directories that could not be watched.
func (r *rootState) unwatchedDirs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	dirs := make([]string, 0, len(r.unwatched))
	for d := range r.unwatched {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs
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

// rootList returns the current roots.
// rootPaths returns the paths of the roots in effect.
func (d *Daemon) rootPaths() []string {
	var out []string
	for _, r := range d.rootList() {
		out = append(out, r.path)
	}
	return out
}

func (d *Daemon) rootList() []*rootState {
	d.rmu.RLock()
	defer d.rmu.RUnlock()
	return slices.Clone(d.roots)
}

// filter is what decides which files are indexed; it changes on reload.
type filter struct {
	exclude          *watcher.Exclude
	minSize, maxSize int64 // maxSize negative: no limit
}

func (f *filter) excluded(root, path string, isDir bool) bool {
	if f.exclude == nil || path == root {
		return false
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return f.exclude.Match(filepath.ToSlash(rel), isDir)
}

func (d *Daemon) filter() *filter { return d.filt.Load() }

func newFilter(c Config) (*filter, error) {
	ex, err := watcher.NewExclude(c.Exclude)
	if err != nil {
		return nil, err
	}
	return &filter{exclude: ex, minSize: c.MinFileSize, maxSize: c.MaxFileSize}, nil
}

// startRoot begins keeping root up to date: it watches the root's
// directories (or, on a filesystem without events, schedules it for
// polling), then queues its full scan. Watches come first, so no change
// made during the scan is missed. It is called once per root, and closes
// r.begun when done.
func (d *Daemon) startRoot(ctx context.Context, r *rootState, why string) *scanRun {
	defer close(r.begun)
	if !r.polled && d.watch != nil {
		if err := d.watch.AddRoot(r.ctx, r.path, d.handler()); err != nil && r.ctx.Err() == nil {
			r.fail(err)
			d.log.Error("cannot watch root", "root", r.path, "err", err)
		}
	}
	return d.requestScan(r, r.path, false, why)
}

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
	if kind == watcher.LocalFS {
		return nil
	}
	if d.cfg.NetworkFS == NetworkFSRefuse {
		return fmt.Errorf("root %s: on a %s filesystem (%s), which sends no change events; "+
			"network_fs = \"refuse\" in the configuration refuses such roots (\"scan\" rescans them every rescan_interval)",
			r.path, kind, name)
	}
	r.polled = true
	d.log.Warn("root is on a filesystem without change events: it is rescanned periodically",
		"root", r.path, "fs", name, "kind", kind.String(), "rescan_interval", d.cfg.RescanInterval)
	return nil
}

// overflow schedules a reconcile of root after the kernel dropped events.
// Repeated overflows back off: a reconcile waits twice as long after the
// previous one each time, up to maxOverflowBackoff.
func (d *Daemon) overflow(rootPath string) {
	r := d.rootOf(rootPath)
	if r == nil {
		return
	}
	r.mu.Lock()
	now := time.Now()
	if r.overflowDue {
		r.mu.Unlock()
		return
	}
	var wait time.Duration
	if !r.lastOverflow.IsZero() && now.Sub(r.lastOverflow) < 2*max(r.backoff, minOverflowBackoff) {
		r.backoff = min(max(2*r.backoff, minOverflowBackoff), maxOverflowBackoff)
		wait = r.backoff
	} else {
		r.backoff = 0
	}
	r.lastOverflow = now
	r.overflowDue = true
	r.mu.Unlock()
	d.log.Warn("events were lost: reconciling the root", "root", r.path, "after", wait)
	time.AfterFunc(wait, func() {
		// The reconcile is queued before overflowDue is cleared, so a
		// Wait sees either the flag (and asks for a reconcile itself) or
		// the queued reconcile in its epoch.
		if r.ctx.Err() == nil {
			d.requestScan(r, r.path, false, "events lost")
		}
		r.mu.Lock()
		r.overflowDue = false
		r.mu.Unlock()
	})
}

const (
	minOverflowBackoff = time.Second
	maxOverflowBackoff = 5 * time.Minute
)

// periodic rescans, every rescan interval, the roots without events and
// the directories that could not be watched.
func (d *Daemon) periodic(ctx context.Context) {
	t := time.NewTicker(d.cfg.RescanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, r := range d.rootList() {
			if r.polled {
				d.requestScan(r, r.path, false, "periodic rescan")
				continue
			}
			for _, dir := range r.unwatchedDirs() {
				d.requestScan(r, dir, false, "not watched")
			}
		}
	}
}

// The roots file in the index directory records the roots added and
// removed at run time (sifctl roots), so they outlive restarts. The roots
// in effect are those of the configuration, plus Added, minus Removed.
type rootsFile struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

const rootsFileName = "roots.json"

func (d *Daemon) loadRootsFile() (rootsFile, error) {
	var rf rootsFile
	b, err := os.ReadFile(filepath.Join(d.cfg.DB, rootsFileName))
	if errors.Is(err, os.ErrNotExist) {
		return rf, nil
	}
	if err != nil {
		return rf, err
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		return rf, fmt.Errorf("%s: %w", filepath.Join(d.cfg.DB, rootsFileName), err)
	}
	return rf, nil
}

func (d *Daemon) saveRootsFile(rf rootsFile) error {
	b, err := json.MarshalIndent(rf, "", "  ")
	if err != nil {
		return err
	}
	name := filepath.Join(d.cfg.DB, rootsFileName)
	tmp := name + ".tmp"
	if err := writeFileSync(tmp, append(b, '\n')); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

func writeFileSync(name string, b []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// effectiveRoots applies the roots file to the configured roots: the
// configured ones, plus those added with sifctl roots add, minus those
// removed with sifctl roots remove (which wins over the configuration,
// --root included, until the root is added again). It returns each root
// with its source.
func effectiveRoots(config []string, rf rootsFile) (paths []string, source map[string]string) {
	source = make(map[string]string)
	for _, p := range config {
		if !slices.Contains(rf.Removed, p) {
			source[p] = sourceConfig
		}
	}
	for _, p := range rf.Added {
		if _, ok := source[p]; !ok && !slices.Contains(rf.Removed, p) {
			source[p] = sourceAdded
		}
	}
	for p := range source {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// Drop roots inside other roots.
	out := paths[:0]
	for _, p := range paths {
		if len(out) > 0 && under(p, out[len(out)-1]) {
			delete(source, p)
			continue
		}
		out = append(out, p)
	}
	return out, source
}

// Sources of a root (ipc.RootStatus.Source), and the one logged for a
// configured root that is not in effect.
const (
	sourceConfig  = "config"            // the configuration file or --root
	sourceAdded   = "added"             // sifctl roots add, kept in the roots file
	sourceRemoved = "removed-by-sifctl" // configured, but sifctl roots remove took it out
)

// removedRoots returns the configured roots that the roots file takes out
// of effect (sifctl roots remove), sorted.
func removedRoots(config []string, rf rootsFile) []string {
	var out []string
	for _, p := range config {
		if slices.Contains(rf.Removed, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// logRoots logs the roots in effect, each with its source, and the
// configured roots that sifctl roots remove took out: what runs may differ
// from the configuration, and the log must say so and why.
func (d *Daemon) logRoots(what string, paths []string, source map[string]string, removed []string) {
	file := filepath.Join(d.cfg.DB, rootsFileName)
	for _, p := range paths {
		d.log.Info(what, "root", p, "source", source[p])
	}
	for _, p := range removed {
		d.log.Warn(what+": configured root not in effect", "root", p, "source", sourceRemoved,
			"why", "removed with sifctl roots remove, recorded in "+file+"; sifctl roots add it to watch it again")
	}
}

// removedRoots returns the configured roots not in effect because sifctl
// roots remove took them out, for the status.
func (d *Daemon) removedRoots() []ipc.FilePath {
	rf, err := d.loadRootsFile()
	if err != nil {
		return nil
	}
	var out []ipc.FilePath
	for _, p := range removedRoots(d.cfg.Roots, rf) {
		out = append(out, ipc.NewFilePath(p))
	}
	return out
}

// AddRoot implements server.Controller: it starts watching and scanning dir,
// and records it in the roots file.
func (d *Daemon) AddRoot(dir string) error {
	clean, err := cleanRoots([]string{dir})
	if err != nil {
		return fmt.Errorf("%w: %v", server.ErrBadRoot, err)
	}
	dir = clean[0]
	d.ctlMu.Lock()
	defer d.ctlMu.Unlock()
	for _, r := range d.rootList() {
		if under(dir, r.path) {
			return fmt.Errorf("%w: %s is already indexed, under root %s", server.ErrBadRoot, dir, r.path)
		}
		if under(r.path, dir) {
			return fmt.Errorf("%w: %s holds root %s: remove that root first", server.ErrBadRoot, dir, r.path)
		}
	}
	r := newRootState(d.runCtx, dir, "added")
	if err := d.classifyRoot(r); err != nil {
		return fmt.Errorf("%w: %v", server.ErrBadRoot, err)
	}
	rf, err := d.loadRootsFile()
	if err != nil {
		return err
	}
	rf.Removed = slices.DeleteFunc(rf.Removed, func(p string) bool { return p == dir })
	if !slices.Contains(d.cfg.Roots, dir) && !slices.Contains(rf.Added, dir) {
		rf.Added = append(rf.Added, dir)
	}
	if slices.Contains(d.cfg.Roots, dir) {
		r.source = "config"
	}
	if err := d.saveRootsFile(rf); err != nil {
		return fmt.Errorf("saving roots: %w", err)
	}
	d.rmu.Lock()
	d.roots = append(d.roots, r)
	sort.Slice(d.roots, func(i, j int) bool { return d.roots[i].path < d.roots[j].path })
	d.rmu.Unlock()
	d.log.Info("root added", "root", dir)
	go d.startRoot(d.runCtx, r, "root added")
	return nil
}

// RemoveRoot implements server.Controller: it stops watching dir, removes
// its files from the index, and records the removal in the roots file.
func (d *Daemon) RemoveRoot(dir string) error {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	d.ctlMu.Lock()
	defer d.ctlMu.Unlock()
	var r *rootState
	for _, x := range d.rootList() {
		if x.path == dir || x.path == resolved(dir) {
			r = x
		}
	}
	if r == nil {
		var paths []string
		for _, x := range d.rootList() {
			paths = append(paths, x.path)
		}
		return fmt.Errorf("%w: %s is not a root (roots: %s)", server.ErrBadRoot, dir, strings.Join(paths, ", "))
	}
	rf, err := d.loadRootsFile()
	if err != nil {
		return err
	}
	rf.Added = slices.DeleteFunc(rf.Added, func(p string) bool { return p == r.path })
	if slices.Contains(d.cfg.Roots, r.path) && !slices.Contains(rf.Removed, r.path) {
		rf.Removed = append(rf.Removed, r.path)
	}
	if err := d.saveRootsFile(rf); err != nil {
		return fmt.Errorf("saving roots: %w", err)
	}
	d.dropRoot(r)
	d.log.Info("root removed", "root", r.path)
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
	// Files under the root are now outside every root: the workers
	// forget them, ordered with any read in flight.
	s := &scanRun{root: r, dir: r.path}
	d.queueOutside(d.runCtx, s)
}

// queueOutside queues every record under s.dir as an item of s, for
// workers that will find it outside the roots and forget it.
func (d *Daemon) queueOutside(ctx context.Context, s *scanRun) {
	var paths []string
	_ = d.ix.Files(dirPrefix(s.dir), func(rec index.FileRecord) error {
		paths = append(paths, rec.Path)
		return nil
	})
	go func() {
		for _, p := range paths {
			s.itemAdded()
			if !d.lanes.push(ctx, false, item{path: p, t: ticket{scan: s}}) {
				s.itemDone()
				return
			}
		}
	}()
}

func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// Roots implements server.Controller.
func (d *Daemon) Roots() []ipc.RootStatus {
	var out []ipc.RootStatus
	for _, r := range d.rootList() {
		st := r.status()
		st.Watched = d.watchedUnder(r.path)
		out = append(out, st)
	}
	return out
}

// Rescan implements server.Controller.
func (d *Daemon) Rescan(dir string) ([]string, error) {
	if dir == "" {
		var out []string
		for _, r := range d.rootList() {
			d.requestScan(r, r.path, false, "rescan asked for")
			out = append(out, r.path)
		}
		return out, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", server.ErrBadRoot, dir, err)
	}
	real := resolved(abs)
	r := d.rootOf(real)
	if r == nil {
		return nil, fmt.Errorf("%w: %s is not under any root", server.ErrBadRoot, dir)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", server.ErrBadRoot, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", server.ErrBadRoot, dir)
	}
	d.requestScan(r, real, false, "rescan asked for")
	return []string{real}, nil
}
