//go:build linux

package watcher

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// recorder is a Handler that sends what it hears on a channel.
type recorder struct {
	ch    chan string
	block chan struct{} // if set, Changed waits on it (to make the kernel queue overflow)
	once  sync.Once
}

func newRecorder() *recorder { return &recorder{ch: make(chan string, 1<<16)} }

func (r *recorder) send(s string) {
	select {
	case r.ch <- s:
	default:
	}
}
func (r *recorder) Changed(p string) {
	if r.block != nil {
		r.once.Do(func() { <-r.block })
	}
	r.send("changed " + p)
}
func (r *recorder) Removed(p string)                { r.send("removed " + p) }
func (r *recorder) DirAdded(p string)               { r.send("diradded " + p) }
func (r *recorder) Overflow(root string)            { r.send("overflow " + root) }
func (r *recorder) Unwatched(dir string, err error) { r.send("unwatched " + dir) }

// expect waits (up to 10 s of real time, normally milliseconds) for want.
func (r *recorder) expect(t *testing.T, want string) {
	t.Helper()
	r.until(t, want)
}

// until waits like expect, and returns what was heard before want.
func (r *recorder) until(t *testing.T, want string) []string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	var seen []string
	for {
		select {
		case got := <-r.ch:
			if got == want {
				return seen
			}
			seen = append(seen, got)
		case <-timeout:
			t.Fatalf("no %q; saw %q", want, seen)
		}
	}
}

// tempRoot returns a new temporary directory, its symlinks resolved (as
// the kernel names what it reports on).
func tempRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func startWatcher(t *testing.T, o WatchOptions, h Handler) (*Watcher, string) {
	t.Helper()
	root := tempRoot(t)
	return startWatcherAt(t, root, o, h), root
}

// startWatcherAt runs a watcher of root until the test ends.
func startWatcherAt(t *testing.T, root string, o WatchOptions, h Handler) *Watcher {
	t.Helper()
	w, err := NewWatcher(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.AddRoot(ctx, root, h); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- w.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run: %v", err)
		}
	})
	return w
}

func TestWatchFilesAndNewDirectories(t *testing.T) {
	r := newRecorder()
	w, root := startWatcher(t, WatchOptions{}, r)
	if w.Watched() != 1 {
		t.Fatalf("watching %d directories, want 1", w.Watched())
	}
	f := filepath.Join(root, "a.txt")
	os.WriteFile(f, []byte("x"), 0o644)
	r.expect(t, "changed "+f)

	// A new tree: its directories are watched, then reported for a scan
	// (the file inside may have landed before the watch). d1 is reported
	// once the walk from it is done; d2 and d3 may have been made after
	// that walk listed their parents (mkdir -p races it), and are then
	// watched and reported on their own (TestWatchDirMadeAfterListing):
	// wait for their watches before counting on their events.
	deep := filepath.Join(root, "d1", "d2", "d3")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(deep, "early.txt"), []byte("x"), 0o644)
	r.expect(t, "diradded "+filepath.Join(root, "d1"))
	waitWatched(t, w, filepath.Join(root, "d1"), 3)
	late := filepath.Join(deep, "late.txt")
	os.WriteFile(late, []byte("y"), 0o644)
	r.expect(t, "changed "+late)
	if n := w.Watched(); n != 4 {
		t.Errorf("watching %d directories, want 4", n)
	}

	// Rename: the old path is removed, the new one created.
	g := filepath.Join(root, "b.txt")
	os.Rename(f, g)
	r.expect(t, "removed "+f)
	r.expect(t, "changed "+g)

	// Removing a tree drops its watches.
	os.RemoveAll(filepath.Join(root, "d1"))
	r.expect(t, "removed "+filepath.Join(root, "d1"))
	deadline := time.Now().Add(5 * time.Second)
	for w.Watched() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := w.Watched(); n != 1 {
		t.Errorf("after removing the tree, watching %d directories, want 1", n)
	}
}

// Symlinks to directories are not followed, so a loop cannot trap the
// watcher.
func TestWatchDoesNotFollowSymlinks(t *testing.T) {
	r := newRecorder()
	w, root := startWatcher(t, WatchOptions{}, r)
	os.Mkdir(filepath.Join(root, "real"), 0o755)
	r.expect(t, "diradded "+filepath.Join(root, "real"))
	os.Symlink(".", filepath.Join(root, "real", "loop"))
	os.Symlink("/", filepath.Join(root, "escape"))
	os.WriteFile(filepath.Join(root, "marker"), nil, 0o644)
	r.expect(t, "changed "+filepath.Join(root, "marker"))
	if n := w.Watched(); n != 2 {
		t.Errorf("watching %d directories, want 2 (symlinks not followed)", n)
	}
}

// When the handler falls behind and the kernel drops events, the root is
// reported for a reconcile.
func TestWatchOverflow(t *testing.T) {
	max, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(string(max), &n)
	r := newRecorder()
	r.block = make(chan struct{})
	_, root := startWatcher(t, WatchOptions{BufferSize: 1}, r)
	// The first Changed blocks the handler; the kernel queue then fills.
	for i := range n + 1000 {
		f, err := os.Create(filepath.Join(root, fmt.Sprintf("f%06d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	close(r.block)
	r.expect(t, "overflow "+root)
}

// Out of inotify watches: the directories that could not be watched are
// reported (each once, with what is below it skipped), the limit is logged
// once with the sysctl to raise, and nothing retries.
func TestWatchOutOfWatches(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{"a/x", "b/y", "c"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	var logs strings.Builder
	w, err := NewWatcher(WatchOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.fsw.Close()
	calls := 0
	real := w.addWatch
	w.addWatch = func(dir string) error {
		calls++
		if calls > 2 { // the kernel's limit: root and a
			return fmt.Errorf("inotify_add_watch: %w", syscall.ENOSPC)
		}
		return real(dir)
	}
	r := newRecorder()
	if err := w.AddRoot(context.Background(), root, r); err != nil {
		t.Fatal(err)
	}
	// Walk order: root, a, a/x (refused), b (refused: b/y is not tried), c (refused).
	for _, d := range []string{"a/x", "b", "c"} {
		r.expect(t, "unwatched "+filepath.Join(root, d))
	}
	if calls != 5 || w.Watched() != 2 {
		t.Errorf("%d watch attempts, %d watched; want 5 and 2", calls, w.Watched())
	}
	if n := strings.Count(logs.String(), "out of inotify watches"); n != 1 || !strings.Contains(logs.String(), "sysctl fs.inotify.max_user_watches") {
		t.Errorf("logged the limit %d times, want once naming the sysctl:\n%s", n, logs.String())
	}
}

// mkdirs makes the directories rels under root.
func mkdirs(t *testing.T, root string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// noneAbout fails if any of heard names one of paths.
func noneAbout(t *testing.T, heard []string, paths ...string) {
	t.Helper()
	for _, h := range heard {
		for _, p := range paths {
			if strings.HasSuffix(h, " "+p) {
				t.Errorf("heard %q", h)
			}
		}
	}
}

// Excluded directories are not watched, and the creation or change of
// excluded paths is not reported; their removal is.
func TestWatchExclude(t *testing.T) {
	root := tempRoot(t)
	mkdirs(t, root, ".git/objects", "src/.git", "node_modules/x", "build/out")
	ex, err := NewExclude([]string{".git/", "node_modules/", "*.swp", "/build/"})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	w := startWatcherAt(t, root, WatchOptions{Exclude: ex}, r)
	if n := w.Watched(); n != 2 {
		t.Fatalf("watching %d directories, want 2 (root and src)", n)
	}
	at := func(rel string) string { return filepath.Join(root, rel) }

	// An excluded file's creation and writes go unheard, its removal not.
	os.WriteFile(at("src/a.swp"), []byte("x"), 0o644)
	os.WriteFile(at("src/a.txt"), []byte("x"), 0o644)
	noneAbout(t, r.until(t, "changed "+at("src/a.txt")), at("src/a.swp"))
	os.Remove(at("src/a.swp"))
	r.expect(t, "removed "+at("src/a.swp"))

	// A file named like a directory-only pattern is no directory.
	os.WriteFile(at("src/node_modules"), nil, 0o644)
	r.expect(t, "changed "+at("src/node_modules"))

	// A new tree is watched but for its excluded directories, whose
	// content goes unheard.
	mkdirs(t, root, "x/.git/objects")
	r.expect(t, "diradded "+at("x"))
	if n := w.Watched(); n != 3 {
		t.Errorf("watching %d directories, want 3 (x/.git is excluded)", n)
	}
	os.WriteFile(at("x/.git/objects/o"), nil, 0o644)
	os.Chmod(at("x/.git"), 0o700)
	os.WriteFile(at("x/marker"), nil, 0o644)
	noneAbout(t, r.until(t, "changed "+at("x/marker")), at("x/.git"), at("x/.git/objects/o"))

	// "/build/" is anchored: a new build directory at the top is neither
	// watched nor reported, one elsewhere is.
	os.RemoveAll(at("build"))
	r.expect(t, "removed "+at("build"))
	mkdirs(t, root, "build", "src/build")
	noneAbout(t, r.until(t, "diradded "+at("src/build")), at("build"))
	if n := w.Watched(); n != 4 {
		t.Errorf("watching %d directories, want 4", n)
	}
}

// Roots can be added while Run runs, and removed: their watches go, and
// nothing more is heard of them.
func TestWatchAddAndRemoveRoot(t *testing.T) {
	r := newRecorder()
	w, a := startWatcher(t, WatchOptions{}, r)
	b := tempRoot(t)
	mkdirs(t, b, "sub")
	ctx := context.Background()
	if err := w.AddRoot(ctx, b, r); err != nil {
		t.Fatal(err)
	}
	if n := w.Watched(); n != 3 {
		t.Fatalf("watching %d directories, want 3", n)
	}
	f := filepath.Join(b, "sub", "f")
	os.WriteFile(f, nil, 0o644)
	r.expect(t, "changed "+f)
	mkdirs(t, b, "new")
	r.expect(t, "diradded "+filepath.Join(b, "new"))

	w.RemoveRoot(b)
	if n, k := w.Watched(), len(w.fsw.WatchList()); n != 1 || k != 1 {
		t.Fatalf("after RemoveRoot, %d directories watched, %d kernel watches; want 1 and 1", n, k)
	}
	g, newer := filepath.Join(b, "sub", "g"), filepath.Join(b, "newer")
	os.WriteFile(g, nil, 0o644)
	mkdirs(t, b, "newer")
	marker := filepath.Join(a, "marker")
	os.WriteFile(marker, nil, 0o644)
	noneAbout(t, r.until(t, "changed "+marker), g, newer)

	// A directory of the removed root still waiting for its watch gets
	// none.
	if err := w.watchTree(ctx, newer, r); err != errNoRoot {
		t.Errorf("watching a directory of a removed root: %v, want errNoRoot", err)
	}
	w.RemoveRoot(b) // again: ignored
	if n := w.Watched(); n != 1 {
		t.Errorf("watching %d directories, want 1", n)
	}

	// Nested roots share watches: removing the inner one keeps them.
	in := filepath.Join(a, "in")
	mkdirs(t, a, "in/deep")
	r.expect(t, "diradded "+in)
	if err := w.AddRoot(ctx, in, r); err != nil {
		t.Fatal(err)
	}
	if n := w.Watched(); n != 3 {
		t.Fatalf("watching %d directories, want 3", n)
	}
	w.RemoveRoot(in)
	if n := w.Watched(); n != 3 {
		t.Errorf("after removing the inner root, watching %d directories, want 3", n)
	}
	w.RemoveRoot(a)
	if n, k := w.Watched(), len(w.fsw.WatchList()); n != 0 || k != 0 {
		t.Errorf("after removing every root, %d directories watched, %d kernel watches", n, k)
	}
}

// waitWatched waits until n directories at or below dir are watched.
func waitWatched(t *testing.T, w *Watcher, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.WatchedUnder(dir) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d directories watched under %s, want %d", w.WatchedUnder(dir), dir, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitIdle waits until the watcher has no new directory left to watch.
func waitIdle(t *testing.T, w *Watcher) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.Pending() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d directories still pending", w.Pending())
		}
		time.Sleep(time.Millisecond)
	}
}

// New exclusions drop the watches of the directories they exclude; lifted
// ones give the directories they kept away their watches, and report them
// for a scan.
func TestWatchSetExclude(t *testing.T) {
	root := tempRoot(t)
	mkdirs(t, root, "a/b", "c/d", "keep")
	at := func(rel string) string { return filepath.Join(root, rel) }
	r := newRecorder()
	w := startWatcherAt(t, root, WatchOptions{}, r)
	if n := w.Watched(); n != 6 {
		t.Fatalf("watching %d directories, want 6", n)
	}

	ex, _ := NewExclude([]string{"a/", "d/"})
	w.SetExclude(ex)
	if n, k, a := w.Watched(), len(w.fsw.WatchList()), w.WatchedUnder(at("a")); n != 3 || k != 3 || a != 0 {
		t.Fatalf("after excluding a/ and d/: %d watched, %d kernel watches, %d under a; want 3, 3, 0", n, k, a)
	}
	os.WriteFile(at("a/b/x"), nil, 0o644)
	os.WriteFile(at("keep/marker"), nil, 0o644)
	heard := r.until(t, "changed "+at("keep/marker"))
	waitIdle(t, w) // the walk for lifted exclusions finds none
	os.WriteFile(at("keep/marker2"), nil, 0o644)
	heard = append(heard, r.until(t, "changed "+at("keep/marker2"))...)
	noneAbout(t, heard, at("a"), at("a/b/x"), at("c/d"))

	same, _ := NewExclude([]string{"a/", "d/"})
	w.SetExclude(same)
	if n := w.Pending(); n != 0 {
		t.Errorf("the same patterns again: %d pending", n)
	}

	ex, _ = NewExclude([]string{"d/"})
	w.SetExclude(ex)
	r.expect(t, "diradded "+at("a"))
	if n, a := w.Watched(), w.WatchedUnder(at("a")); n != 5 || a != 2 {
		t.Errorf("after lifting a/: %d watched, %d under a; want 5 and 2", n, a)
	}
	os.WriteFile(at("a/b/y"), nil, 0o644)
	r.expect(t, "changed "+at("a/b/y"))
	waitIdle(t, w)
}

// A new directory is pending from its creation event until DirAdded has
// been called for it.
func TestWatchPending(t *testing.T) {
	root := tempRoot(t)
	w, err := NewWatcher(WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	if err := w.AddRoot(context.Background(), root, r); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "new")
	mkdirs(t, root, "new")
	// Handle the creation event before Run does: the adder is not running.
	w.event(fsnotify.Event{Name: dir, Op: fsnotify.Create}, r)
	if n := w.Pending(); n != 1 {
		t.Fatalf("%d pending, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx, r) }()
	defer func() { cancel(); <-done }()
	r.expect(t, "diradded "+dir)
	waitIdle(t, w)
	if n := w.WatchedUnder(root); n != 2 {
		t.Errorf("%d watched under the root, want 2", n)
	}
}

// DropEvery loses events on purpose and reports each loss as an overflow
// of the root, like the kernel does.
func TestWatchDropEvery(t *testing.T) {
	r := newRecorder()
	_, root := startWatcher(t, WatchOptions{DropEvery: 2}, r)
	for i := range 4 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	heard := r.until(t, "overflow "+root)
	for _, h := range heard {
		if strings.HasPrefix(h, "overflow ") && h != "overflow "+root {
			t.Errorf("overflow reported for %q, want the root", h)
		}
	}
}

// Idle is closed while nothing is pending, and once what was pending has
// been handled.
func TestIdle(t *testing.T) {
	var g gauge
	if !closed(g.zero()) {
		t.Fatal("new gauge: not idle")
	}
	g.Add(1)
	idle := g.zero()
	g.Add(1)
	g.Add(-1)
	if closed(idle) {
		t.Fatal("idle with one still pending")
	}
	g.Add(-1)
	if !closed(idle) || !closed(g.zero()) {
		t.Fatal("not idle with none pending")
	}
	g.Add(1)
	if closed(g.zero()) {
		t.Fatal("idle again with one pending")
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A directory the kernel refused to watch (EACCES: the daemon could not
// read it) is watched when asked again, with the directories below it,
// and reported as added so that it is scanned; a change of its
// permissions, which its parent's watch reports, is what tells the caller
// to ask.
func TestWatchAgain(t *testing.T) {
	root := tempRoot(t)
	mkdirs(t, root, "locked/sub")
	locked := filepath.Join(root, "locked")
	w, err := NewWatcher(WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	deny := true
	real := w.addWatch
	w.addWatch = func(dir string) error {
		mu.Lock()
		defer mu.Unlock()
		if deny && dir == locked {
			return fmt.Errorf("inotify_add_watch: %w", syscall.EACCES)
		}
		return real(dir)
	}
	r := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.AddRoot(ctx, root, r); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- w.Run(ctx, r) }()
	defer func() { cancel(); <-done }()
	r.expect(t, "unwatched "+locked)
	if n := w.Watched(); n != 1 {
		t.Fatalf("%d directories watched, want the root alone", n)
	}
	mu.Lock()
	deny = false
	mu.Unlock()
	if err := os.Chmod(locked, 0o700); err != nil {
		t.Fatal(err)
	}
	r.expect(t, "changed "+locked) // from the root's watch
	if !w.WatchAgain(locked) {
		t.Fatal("WatchAgain refused")
	}
	r.expect(t, "diradded "+locked)
	if n := w.Watched(); n != 3 {
		t.Errorf("%d directories watched after WatchAgain, want 3", n)
	}
	os.WriteFile(filepath.Join(locked, "sub", "f"), []byte("x"), 0o644)
	r.expect(t, "changed "+filepath.Join(locked, "sub", "f"))
}
