package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// Handler receives what a Watcher learns about its roots. Its methods are
// called from the watcher's goroutines, concurrently, and must return
// quickly (record and hand on, e.g. Settler.Touch): a slow handler makes the
// kernel drop events.
type Handler interface {
	// Changed: the file at path may have been created or changed.
	Changed(path string)
	// Removed: path is gone, and if it was a directory, everything below it.
	Removed(path string)
	// DirAdded: a new directory is now watched, and so is every directory
	// the watcher found below it. Files may have landed in it before the
	// watches did: scan it. A directory made below it after the watcher
	// listed its parent (mkdir -p racing the watcher) raises its own
	// creation event and is reported by its own DirAdded once watched, so
	// a file written there before that watch lies below that later report,
	// not this one: a handler that scans every directory reported misses
	// no file, but DirAdded does not mean the whole tree is watched.
	DirAdded(path string)
	// Overflow: events were lost; reconcile root with the disk.
	Overflow(root string)
	// Unwatched: dir (and what is below it) could not be watched, e.g. for
	// lack of inotify watches; it must be reconciled on a schedule instead.
	// A directory that is gone by the time its watch is added is not
	// reported here: it is gone, and its removal is reported.
	Unwatched(dir string, err error)
}

// WatchOptions configure a Watcher. The zero value means the defaults.
type WatchOptions struct {
	// BufferSize is the capacity of the event channel between the kernel
	// reader and the handler; 0 means fsnotify's default.
	BufferSize uint
	// Logger receives the watcher's log lines; nil discards them.
	Logger *slog.Logger
	// DropEvery, when positive, drops every DropEvery-th event and reports
	// an Overflow for its root instead, as if the kernel had lost it: a
	// fault injection for tests of what event loss costs and repairs.
	DropEvery int
	// Exclude names the paths not to watch nor report, relative to the
	// root they are under; nil excludes nothing. Excluded directories get
	// no watch; the creation or change of an excluded path is not
	// reported, its removal is (harmless, and it may have been indexed
	// before it was excluded). Watcher.SetExclude replaces it.
	Exclude *Exclude
}

// Watcher watches directory trees recursively on top of fsnotify, which
// watches single directories: every directory under a root gets a watch,
// new directories are watched (then reported with DirAdded so they are
// scanned), and removed or renamed directories drop their watches.
//
// Roots can be added and removed, and the exclusions replaced, while Run
// runs. Roots may nest: a path is then matched against the exclusions
// relative to the innermost root, and a directory stays watched as long as
// one root holds it.
type Watcher struct {
	fsw *fsnotify.Watcher
	log *slog.Logger

	// mu guards what follows, and is held across adding a watch and
	// recording it, so that a root removed (or a directory excluded)
	// meanwhile leaves no watch behind.
	mu      sync.Mutex
	roots   []string
	exclude *Exclude
	dirs    map[string]bool // watched directories
	// dirsGen counts the changes to dirs; under caches WatchedUnder's
	// answers as of a generation (status requests ask it often).
	dirsGen uint64
	under   map[string]underCount
	// outOfWatches is set once the kernel refused a watch for lack of
	// them, so the limit is logged once, not per directory.
	outOfWatches bool

	// The adder goroutine's work: new directories to watch, and requests
	// to add the watches that replaced exclusions no longer keep away.
	adds    chan string
	rewatch chan struct{}
	// pending counts the work queued for the adder or under way.
	pending gauge

	// addWatch adds one directory's watch: fsw.Add, or a test's stand-in.
	addWatch func(dir string) error

	dropEvery int
	events    int // events read, for dropEvery
}

// NewWatcher returns a watcher with no roots. Call AddRoot, then Run.
func NewWatcher(o WatchOptions) (*Watcher, error) {
	var fsw *fsnotify.Watcher
	var err error
	if o.BufferSize > 0 {
		fsw, err = fsnotify.NewBufferedWatcher(o.BufferSize)
	} else {
		fsw, err = fsnotify.NewWatcher()
	}
	if err != nil {
		return nil, fmt.Errorf("watcher: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{
		fsw: fsw, log: log, exclude: o.Exclude, dropEvery: o.DropEvery,
		dirs: make(map[string]bool), adds: make(chan string, 4096), rewatch: make(chan struct{}, 1),
	}
	w.addWatch = fsw.Add
	return w, nil
}

// AddRoot watches every directory under root (which must be absolute and
// clean), but the excluded ones. It may be called before or while Run runs;
// adding a root again only watches what is not watched yet. It returns an
// error only about root itself; directories that cannot be watched are
// reported to h.Unwatched.
func (w *Watcher) AddRoot(ctx context.Context, root string, h Handler) error {
	if err := w.addRootPath(root); err != nil {
		return err
	}
	err := w.watchTree(ctx, root, h)
	switch {
	case errors.Is(err, errNoRoot): // removed meanwhile
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("watcher: root %s: %w", root, err)
	}
	return err
}

// addRootPath checks that root is a directory and records it among the
// roots, once.
func (w *Watcher) addRootPath(root string) error {
	st, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("watcher: root %s: %w", root, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("watcher: root %s: not a directory", root)
	}
	w.mu.Lock()
	if !slices.Contains(w.roots, root) {
		w.roots = append(w.roots, root)
	}
	w.mu.Unlock()
	return nil
}

// AddRootShallow adds root (absolute and clean) as AddRoot does, but
// watches root itself only: the caller walks the tree and watches every
// directory below it with WatchDir before it lists it, as a scan walking
// the root anyway does (WalkOptions.OnDir), so that the tree is walked
// once, not twice. A change in a directory below root before its watch
// is added raises no event, and is seen by that walk. It returns an error
// only about root itself; a root the kernel refuses to watch is reported
// to h.Unwatched, and so left unwatched below as AddRoot leaves it.
func (w *Watcher) AddRootShallow(root string, h Handler) error {
	if err := w.addRootPath(root); err != nil {
		return err
	}
	switch err := w.watchDir(root, true); {
	case err == nil, err == errNoRoot: // removed meanwhile
		return nil
	case err == errExcluded, errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("watcher: root %s: %w", root, err)
	default:
		w.unwatched(root, err, h)
		return nil
	}
}

// WatchDir adds the watch of dir, a directory below a root added with
// AddRootShallow, and not of the directories below it. Call it before
// listing dir. It returns nil when dir is watched now, when it is
// excluded or not under a root, and when it is gone (its parent's watch
// reports the removal). When the kernel refuses the watch, it reports dir
// to h.Unwatched and returns the error: leave the directories below dir
// unwatched too, as AddRoot does (dir is reconciled on a schedule, and
// what is below it with it).
func (w *Watcher) WatchDir(dir string, h Handler) error {
	switch err := w.watchDir(dir, true); {
	case err == nil, err == errExcluded, err == errNoRoot, errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		w.unwatched(dir, err, h)
		return err
	}
}

// WatchAgain watches dir, a directory below a root, and the directories
// below it that are not watched, as for a new directory: from Run's
// goroutine, which then reports dir with h.DirAdded (or h.Unwatched).
// It is for a directory that could not be listed or watched before and
// may be now, its permissions changed. It reports false, doing nothing,
// when too many new directories wait for their watches already.
func (w *Watcher) WatchAgain(dir string) bool {
	w.pending.Add(1)
	select {
	case w.adds <- dir:
		return true
	default:
		w.pending.Add(-1)
		return false
	}
}

// RemoveRoot stops watching root (as given to AddRoot): it drops root and
// the watch of every directory at or below it that no other root holds.
// Events already read for paths below it are dropped, and so are the new
// directories below it still waiting for their watch. It may be called
// while Run runs; an unknown root is ignored.
func (w *Watcher) RemoveRoot(root string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.Index(w.roots, root)
	if i < 0 {
		return
	}
	w.roots = slices.Delete(w.roots, i, i+1)
	for d := range w.dirs {
		if _, below := relPath(root, d); !below {
			continue
		}
		if _, held := w.rootOfLocked(d); held { // by an outer root
			continue
		}
		delete(w.dirs, d)
		w.dirsGen++
		_ = w.fsw.Remove(d) // may be gone already
	}
}

// SetExclude replaces the exclusions, as when the configuration changes.
// The directories e excludes lose their watches at once. Those it no
// longer excludes get theirs from Run's goroutine, which walks the roots
// for them; each one is then reported with DirAdded, as its files were not
// indexed. The same patterns again change nothing. The exclusions of Walk
// are the caller's to replace.
func (w *Watcher) SetExclude(e *Exclude) {
	w.mu.Lock()
	if w.exclude.same(e) {
		w.mu.Unlock()
		return
	}
	w.exclude = e
	for d := range w.dirs {
		root, ok := w.rootOfLocked(d)
		if !ok {
			continue
		}
		if rel, _ := relPath(root, d); e.Match(rel, true) {
			delete(w.dirs, d)
			w.dirsGen++
			_ = w.fsw.Remove(d)
		}
	}
	w.mu.Unlock()
	// One request is enough: it reads the exclusions when it runs.
	w.pending.Add(1)
	select {
	case w.rewatch <- struct{}{}:
	default:
		w.pending.Add(-1)
	}
}

// Watched returns the number of watched directories.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dirs)
}

// WatchedUnder returns the number of watched directories at or below dir.
// It counts them only when a directory was watched or unwatched since it
// was last asked about dir.
func (w *Watcher) WatchedUnder(dir string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.under[dir]; ok && c.gen == w.dirsGen {
		return c.n
	}
	n := 0
	for d := range w.dirs {
		if _, below := relPath(dir, d); below {
			n++
		}
	}
	if w.under == nil || len(w.under) > 64 {
		w.under = make(map[string]underCount)
	}
	w.under[dir] = underCount{w.dirsGen, n}
	return n
}

// underCount is a count of WatchedUnder as of a generation of the
// watched directories.
type underCount struct {
	gen uint64
	n   int
}

// Pending returns the number of new directories (and exclusion changes)
// queued for Run's goroutine to add their watches, or being handled: a
// new directory is counted from its creation event until DirAdded has
// returned for it.
func (w *Watcher) Pending() int {
	return int(w.pending.load())
}

// Idle returns a channel that is closed once Pending is 0: at once if it
// is 0 now, else when the last of the directories pending now (or of
// those added meanwhile) has been handled.
func (w *Watcher) Idle() <-chan struct{} {
	return w.pending.zero()
}

// gauge counts work under way and signals when none is left. The zero
// value counts none.
type gauge struct {
	mu sync.Mutex
	n  int64
	// idle is closed while n is 0 (nil stands for a closed channel).
	idle chan struct{}
}

func (g *gauge) Add(delta int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	was := g.n
	g.n += delta
	switch {
	case was == 0 && g.n != 0:
		g.idle = make(chan struct{})
	case was != 0 && g.n == 0:
		close(g.idle)
		g.idle = nil
	}
}

func (g *gauge) load() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (g *gauge) zero() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.idle == nil {
		return closedChan
	}
	return g.idle
}

// Why watchDir did not watch a directory, other than the kernel's refusal.
var (
	errExcluded = errors.New("excluded")
	errNoRoot   = errors.New("not under a root")
)

// watchTree adds a watch for dir and every directory below it that is not
// excluded, without following symlinks. If dir itself is excluded, or not
// (or no longer) under a root, it returns errExcluded or errNoRoot; if it
// is gone, an error matching fs.ErrNotExist. A directory below it that is
// gone by the time its watch is added (made and removed at once, as builds
// do) is skipped: its parent's watch reports its removal.
//
// Each directory's watch is added before it is listed (Walk's OnDir), so
// an entry made before the watch is listed and one made after raises an
// event. The walk lists no directory through a symlink, even one that
// replaced a directory as it went (walk_linux.go).
func (w *Watcher) watchTree(ctx context.Context, dir string, h Handler) error {
	onDir := func(p string) error {
		switch err := w.watchDir(p, p == dir); {
		case err == nil:
			return nil
		case p == dir && (err == errExcluded || err == errNoRoot || errors.Is(err, fs.ErrNotExist)):
			return err
		case errors.Is(err, fs.ErrNotExist):
			return fs.SkipDir
		case err == errExcluded:
			return fs.SkipDir
		case err == errNoRoot: // the root was removed meanwhile
			return fs.SkipAll
		default:
			w.unwatched(p, err, h)
			return fs.SkipDir
		}
	}
	// Files, and what could not be listed, are the scan's to report.
	return Walk(ctx, dir, WalkOptions{OnDir: onDir, NoInfo: true}, func(Entry) error { return nil })
}

// watchDir adds the watch of directory p, unless it is excluded or not
// under a root. top says whether p is where a tree starts, so the
// directories above it must be checked against the exclusions too.
func (w *Watcher) watchDir(p string, top bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	root, ok := w.rootOfLocked(p)
	if !ok {
		return errNoRoot
	}
	rel, _ := relPath(root, p)
	if top && w.exclude.Match(rel, true) || !top && w.exclude.matchEntry(rel, true) {
		return errExcluded
	}
	if err := w.addWatch(p); err != nil {
		return err
	}
	if !w.dirs[p] {
		w.dirs[p] = true
		w.dirsGen++
	}
	return nil
}

// addTree watches the new directory dir and what is below it, then
// reports it to h.DirAdded (or h.Unwatched). It runs on the adder
// goroutine.
func (w *Watcher) addTree(ctx context.Context, dir string, h Handler) {
	switch err := w.watchTree(ctx, dir, h); {
	case err == nil:
		h.DirAdded(dir)
	case errors.Is(err, errExcluded), errors.Is(err, errNoRoot),
		errors.Is(err, fs.ErrNotExist), ctx.Err() != nil:
		// Nothing to watch, or nothing to tell.
	default:
		w.unwatched(dir, err, h)
	}
}

// rewatchRoots walks every root for the directories without a watch that
// are not excluded (any more) and gives each its watch with addTree. It
// runs on the adder goroutine after SetExclude. A directory the kernel
// refused to watch before is tried again.
func (w *Watcher) rewatchRoots(ctx context.Context, h Handler) {
	w.mu.Lock()
	roots := slices.Clone(w.roots)
	w.mu.Unlock()
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if err != nil || !de.IsDir() {
				return nil
			}
			w.mu.Lock()
			watched := w.dirs[p]
			w.mu.Unlock()
			if watched {
				return nil // go on below it
			}
			w.addTree(ctx, p, h) // if it is excluded, this does nothing
			return fs.SkipDir
		})
	}
}

func (w *Watcher) unwatched(dir string, err error, h Handler) {
	if errors.Is(err, syscall.ENOSPC) {
		w.mu.Lock()
		first := !w.outOfWatches
		w.outOfWatches = true
		w.mu.Unlock()
		if first {
			w.log.Error("out of inotify watches: directories beyond the limit are rescanned on a schedule instead; "+
				"raise the limit with: sysctl fs.inotify.max_user_watches=N (and in /etc/sysctl.d)",
				"limit", maxUserWatches(), "dir", dir)
		}
		err = fmt.Errorf("out of inotify watches (fs.inotify.max_user_watches=%s): %w", maxUserWatches(), err)
	} else {
		w.log.Warn("cannot watch directory", "dir", dir, "err", err)
	}
	h.Unwatched(dir, err)
}

// maxUserWatches reads the kernel's per-user inotify watch limit.
func maxUserWatches() string {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// Run delivers events to h until ctx is done, then closes the watcher and
// returns ctx.Err(). It runs two goroutines: one reads events and does
// nothing slow, the other adds watches for new directories.
func (w *Watcher) Run(ctx context.Context, h Handler) error {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case dir := <-w.adds:
				w.addTree(ctx, dir, h)
			case <-w.rewatch:
				w.rewatchRoots(ctx, h)
			}
			w.pending.Add(-1)
		}
	})
	defer func() {
		w.fsw.Close()
		wg.Wait()
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return errors.New("watcher: event channel closed")
			}
			if w.events++; w.dropEvery > 0 && w.events%w.dropEvery == 0 {
				w.log.Debug("dropping an event (fault injection)", "event", ev.String())
				w.mu.Lock()
				root, ok := w.rootOfLocked(ev.Name)
				w.mu.Unlock()
				if ok {
					h.Overflow(root)
				}
				continue
			}
			w.event(ev, h)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return errors.New("watcher: error channel closed")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.mu.Lock()
				roots := append([]string(nil), w.roots...)
				w.mu.Unlock()
				w.log.Warn("events were lost; reconciling", "roots", roots)
				for _, r := range roots {
					h.Overflow(r)
				}
				continue
			}
			w.log.Warn("watch error", "err", err)
		}
	}
}

// event handles one fsnotify event on the event goroutine.
func (w *Watcher) event(ev fsnotify.Event, h Handler) {
	p := ev.Name
	root, ok, excluded := w.place(p)
	if !ok {
		return // read before its root was removed
	}
	switch {
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		w.forget(p)
		h.Removed(p)
	case ev.Has(fsnotify.Create):
		st, err := os.Lstat(p)
		if err != nil {
			h.Removed(p) // gone already
			return
		}
		if excluded(st.IsDir()) {
			return
		}
		if st.IsDir() {
			w.pending.Add(1)
			select {
			case w.adds <- p:
			default:
				// The adder is far behind: let a reconcile catch up.
				w.pending.Add(-1)
				w.log.Warn("too many new directories at once; reconciling", "dir", p)
				h.Overflow(root)
			}
			return
		}
		h.Changed(p)
	case ev.Has(fsnotify.Write) || ev.Has(fsnotify.Chmod):
		if excluded(false) {
			return
		}
		if excluded(true) { // excluded if it is a directory
			if st, err := os.Lstat(p); err == nil && st.IsDir() {
				return
			}
		}
		h.Changed(p)
	}
}

// forget drops the watches of p and the directories below it (the kernel
// drops them itself when a watched directory goes; this keeps the count).
func (w *Watcher) forget(p string) {
	prefix := p + string(filepath.Separator)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dirs[p] {
		return
	}
	for d := range w.dirs {
		if d == p || strings.HasPrefix(d, prefix) {
			delete(w.dirs, d)
			w.dirsGen++
			_ = w.fsw.Remove(d) // may be gone already
		}
	}
}

// place returns the innermost root p lies at or below, whether there is
// one, and a function telling whether p is excluded if it is a directory
// (isDir) or not.
func (w *Watcher) place(p string) (root string, ok bool, excluded func(isDir bool) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	root, ok = w.rootOfLocked(p)
	ex := w.exclude
	rel, _ := relPath(root, p)
	// Events come from watched directories, which are not excluded, nor are
	// the directories above them: then only p itself needs matching. An
	// event read after its directory lost its watch (to SetExclude, say)
	// needs the directories above it matched too.
	if w.dirs[filepath.Dir(p)] {
		return root, ok, func(isDir bool) bool { return ex.matchEntry(rel, isDir) }
	}
	return root, ok, func(isDir bool) bool { return ex.Match(rel, isDir) }
}

// rootOfLocked is rootOf with w.mu held.
func (w *Watcher) rootOfLocked(p string) (root string, ok bool) {
	for _, r := range w.roots {
		if _, below := relPath(r, p); below && len(r) >= len(root) {
			root, ok = r, true
		}
	}
	return root, ok
}
