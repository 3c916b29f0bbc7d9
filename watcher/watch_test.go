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
	timeout := time.After(10 * time.Second)
	var seen []string
	for {
		select {
		case got := <-r.ch:
			if got == want {
				return
			}
			seen = append(seen, got)
		case <-timeout:
			t.Fatalf("no %q; saw %q", want, seen)
		}
	}
}

func startWatcher(t *testing.T, o WatchOptions, h Handler) (*Watcher, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
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
	return w, root
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
	// (the file inside may have landed before the watch).
	deep := filepath.Join(root, "d1", "d2", "d3")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(deep, "early.txt"), []byte("x"), 0o644)
	r.expect(t, "diradded "+filepath.Join(root, "d1"))
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
