package daemon

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"log/slog"

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
	d, err := open(Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s"), NetworkFS: NetworkFSRefuse})
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
	os.MkdirAll(db, 0o700)
	os.WriteFile(filepath.Join(db, markerName), []byte("123 1000000000\n"), 0o600)
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
	if _, err := os.Stat(filepath.Join(db, markerName)); !os.IsNotExist(err) {
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
