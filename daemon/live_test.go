package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"log/slog"

	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/watcher"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startDaemon runs a daemon on cfg until the test ends and waits until it
// is ready.
func startDaemon(t *testing.T, cfg Config) (*Daemon, *lockedBuffer) {
	t.Helper()
	return startDaemonWith(t, cfg, nil)
}

// startDaemonWith is startDaemon calling opened, if not nil, with the
// daemon once it is open and before it runs.
func startDaemonWith(t *testing.T, cfg Config, opened func(*Daemon)) (*Daemon, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.DB == "" {
		cfg.DB = filepath.Join(t.TempDir(), "db")
	}
	if cfg.Socket == "" {
		cfg.Socket = filepath.Join(t.TempDir(), "s.sock")
	}
	d, err := open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if opened != nil {
		opened(d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case <-d.ready:
	case err := <-done:
		t.Fatalf("run ended before ready: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("not ready after 30s\n%s", logs.String())
	}
	return d, logs
}

func fakeFS(t *testing.T, kind watcher.FSKind, name string) {
	old := detectFS
	detectFS = func(string) (watcher.FSKind, string, error) { return kind, name, nil }
	t.Cleanup(func() { detectFS = old })
}

// A root on a filesystem without change events is refused when the
// configuration says so, with a message naming the root, the filesystem
// and the setting.
func TestNetworkRootRefused(t *testing.T) {
	fakeFS(t, watcher.NetworkFS, "nfs")
	root := t.TempDir()
	d, err := open(Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s"), NetworkFS: config.NetworkFSRefuse})
	if err != nil {
		t.Fatal(err)
	}
	err = d.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), "nfs") || !strings.Contains(err.Error(), "network_fs") {
		t.Errorf("run on a refused NFS root: %v", err)
	}
}

// By default such a root is polled: not watched, rescanned every rescan
// interval, so changes still arrive.
func TestNetworkRootPolled(t *testing.T) {
	fakeFS(t, watcher.NetworkFS, "nfs")
	root := t.TempDir()
	d, _ := startDaemon(t, Config{Roots: []string{root}, RescanInterval: 50 * time.Millisecond})
	st := d.Roots()[0]
	if st.State != ipc.RootPolling || !strings.Contains(st.Reason, "nfs") || st.FS != "nfs" {
		t.Errorf("status of an NFS root: %+v", st)
	}
	if n := d.watchedUnder(root); n != 0 {
		t.Errorf("%d directories watched on an NFS root", n)
	}
	os.WriteFile(filepath.Join(root, "new.txt"), bytes.Repeat([]byte("polled content "), 500), 0o644)
	deadline := time.Now().Add(10 * time.Second)
	for d.Status().Index.Files != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a file created on a polled root was not indexed by the periodic rescan")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A directory that cannot be watched (out of inotify watches) makes the
// root degraded, says why, and is rescanned every rescan interval.
func TestUnwatchedDirectoryIsRescanned(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	os.Mkdir(sub, 0o755)
	d, logs := startDaemon(t, Config{Roots: []string{root}, RescanInterval: 30 * time.Millisecond})
	d.handler().Unwatched(sub, errors.Join(errors.New("out of inotify watches (fs.inotify.max_user_watches=8192)"), syscall.ENOSPC))
	st := d.Roots()[0]
	if st.State != ipc.RootDegraded || !strings.Contains(st.Reason, "max_user_watches") || st.Unwatched != 1 {
		t.Errorf("status with an unwatched directory: %+v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), `why="not watched"`) || !strings.Contains(logs.String(), "dir="+sub) {
		if time.Now().After(deadline) {
			t.Fatalf("the unwatched directory was not rescanned\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The run marker: a clean shutdown removes it; a run that finds it knows
// the previous one ended uncleanly and distrusts recent metadata.
func TestRunMarker(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(t.TempDir(), "db")
	os.MkdirAll(StateDir(db), 0o700)
	os.WriteFile(filepath.Join(StateDir(db), markerName), []byte("123 1000000000\n"), 0o600)
	cfg := Config{Roots: []string{root}, DB: db, Socket: filepath.Join(t.TempDir(), "s")}
	d, err := open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	<-d.ready
	if !d.Status().UncleanStart {
		t.Error("a leftover marker did not make the start unclean")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(StateDir(db), markerName)); !os.IsNotExist(err) {
		t.Errorf("marker after a clean shutdown: %v", err)
	}
	d, err = open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- d.run(ctx) }()
	<-d.ready
	if d.Status().UncleanStart {
		t.Error("start after a clean shutdown reported unclean")
	}
	cancel()
	<-done
}

// More changes than the settler keeps one by one: the rest are folded
// into their directories, which are rescanned once they settle. Every
// file created is indexed and every file removed forgotten, and Wait
// covers the rescans.
func TestSettleOverflowRescansDirectories(t *testing.T) {
	root := t.TempDir()
	for i := range 4 { // made before the start: no new-directory scans
		os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%d", i), "sub"), 0o755)
	}
	d, logs := startDaemon(t, Config{Roots: []string{root}, SettleDelay: 50 * time.Millisecond, MaxSettling: 4})
	var paths []string
	for i := range 40 {
		dir := filepath.Join(root, fmt.Sprintf("d%d", i%4), "sub")
		p := filepath.Join(dir, fmt.Sprintf("f%02d.txt", i))
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprintf("file %d has its own words; ", i), 40)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	wait := func() {
		t.Helper()
		if _, err := d.Wait(context.Background(), 20*time.Second); err != nil {
			t.Fatalf("wait: %v\n%s", err, logs)
		}
	}
	wait()
	for _, p := range paths {
		if _, err := d.ix.Lookup(p); err != nil {
			t.Errorf("%s not indexed: %v", p, err)
		}
	}
	for _, p := range paths {
		os.Remove(p)
	}
	wait()
	for _, p := range paths {
		if _, err := d.ix.Lookup(p); err == nil {
			t.Errorf("%s still indexed after its removal", p)
		}
	}
	if !strings.Contains(logs.String(), "too many changes to keep one by one") {
		t.Errorf("no directory was rescanned for settling too many changes\n%s", logs)
	}
}

// The first full scan of a watched root into an index holding nothing
// under it skips the removal pass (its records were all written with the
// watches in place), and a file removed after it still leaves the index;
// a later start, with records to check, makes the pass and removes the
// record of a file deleted while the daemon was down; a polled root's
// first scan makes it too.
func TestFirstScanRemovalPass(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(root, n), bytes.Repeat([]byte("content of "+n+" "), 300), 0o644)
	}
	cfg := Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s")}
	const skipped = "removal pass skipped"
	run := func(want int, skip bool, between func(d *Daemon)) {
		t.Helper()
		logs := &lockedBuffer{}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		d, err := open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		}()
		<-d.ready
		if _, err := d.Wait(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), skipped); got != skip {
			t.Errorf("removal pass skipped: %v, want %v\n%s", got, skip, logs.String())
		}
		if between != nil {
			between(d)
			if _, err := d.Wait(ctx, 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for d.Status().Index.Files != uint64(want) {
			if time.Now().After(deadline) {
				t.Fatalf("%d files indexed, want %d\n%s", d.Status().Index.Files, want, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	run(2, true, func(*Daemon) { os.Remove(filepath.Join(root, "a")) })
	os.Remove(filepath.Join(root, "b"))
	run(1, false, nil)

	fakeFS(t, watcher.NetworkFS, "nfs")
	root = t.TempDir()
	os.WriteFile(filepath.Join(root, "p"), bytes.Repeat([]byte("polled "), 300), 0o644)
	cfg = Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s")}
	run(1, false, nil)
}
