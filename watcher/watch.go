package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
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
	// DirAdded: a new directory is now watched, with everything below it.
	// Files may have landed in it before the watch did: scan it.
	DirAdded(path string)
	// Overflow: events were lost; reconcile root with the disk.
	Overflow(root string)
	// Unwatched: dir (and what is below it) could not be watched, e.g. for
	// lack of inotify watches; it must be reconciled on a schedule instead.
	Unwatched(dir string, err error)
}

// WatchOptions configure a Watcher. The zero value means the defaults.
type WatchOptions struct {
	// BufferSize is the capacity of the event channel between the kernel
	// reader and the handler; 0 means fsnotify's default.
	BufferSize uint
	// Logger receives the watcher's log lines; nil discards them.
	Logger *slog.Logger
}

// Watcher watches directory trees recursively on top of fsnotify, which
// watches single directories: every directory under a root gets a watch,
// new directories are watched (then reported with DirAdded so they are
// scanned), and removed or renamed directories drop their watches.
type Watcher struct {
	fsw *fsnotify.Watcher
	log *slog.Logger

	mu    sync.Mutex
	roots []string
	dirs  map[string]bool // watched directories
	// outOfWatches is set once the kernel refused a watch for lack of
	// them, so the limit is logged once, not per directory.
	outOfWatches bool

	adds chan string // directories to watch, for the adder goroutine

	// addWatch adds one directory's watch: fsw.Add, or a test's stand-in.
	addWatch func(dir string) error
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
	w := &Watcher{fsw: fsw, log: log, dirs: make(map[string]bool), adds: make(chan string, 4096)}
	w.addWatch = fsw.Add
	return w, nil
}

// AddRoot watches every directory under root (which must be absolute and
// clean). It returns an error only about root itself; directories that
// cannot be watched are reported to h.Unwatched.
func (w *Watcher) AddRoot(ctx context.Context, root string, h Handler) error {
	st, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("watcher: root %s: %w", root, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("watcher: root %s: not a directory", root)
	}
	w.mu.Lock()
	w.roots = append(w.roots, root)
	w.mu.Unlock()
	return w.watchTree(ctx, root, h)
}

// Watched returns the number of watched directories.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dirs)
}

// watchTree adds a watch for dir and every directory below it, without
// following symlinks.
func (w *Watcher) watchTree(ctx context.Context, dir string, h Handler) error {
	return filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == dir {
				return err
			}
			return nil // the walk that scans reports unreadable entries
		}
		if !de.IsDir() {
			return nil
		}
		if err := w.addWatch(p); err != nil {
			w.unwatched(p, err, h)
			return fs.SkipDir
		}
		w.mu.Lock()
		w.dirs[p] = true
		w.mu.Unlock()
		return nil
	})
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
				if err := w.watchTree(ctx, dir, h); err == nil {
					h.DirAdded(dir)
				} else if !errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
					w.unwatched(dir, err, h)
				}
			}
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
		if st.IsDir() {
			select {
			case w.adds <- p:
			default:
				// The adder is far behind: let a reconcile catch up.
				w.log.Warn("too many new directories at once; reconciling", "dir", p)
				h.Overflow(w.rootOf(p))
			}
			return
		}
		h.Changed(p)
	case ev.Has(fsnotify.Write) || ev.Has(fsnotify.Chmod):
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
			_ = w.fsw.Remove(d) // may be gone already
		}
	}
}

// rootOf returns the root p lies under.
func (w *Watcher) rootOf(p string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return r
		}
	}
	return p
}
