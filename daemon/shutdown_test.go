package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A root added at run time is started (its tree walked for watches, its
// first scan queued) on a goroutine of Run's group: Run returns only after
// it has ended, and leaves no goroutine of the daemon or the watcher
// behind.
func TestRunJoinsRootWalks(t *testing.T) {
	root, added := t.TempDir(), t.TempDir()
	for i := range 200 {
		os.MkdirAll(filepath.Join(added, fmt.Sprintf("d%03d", i), "sub"), 0o755)
	}
	cfg := Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s.sock")}
	cfg.Logger = discardLogger()
	d, err := open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	var hold, ended atomic.Bool
	testHookStartRoot = func(ctx context.Context) {
		if !hold.Load() {
			return // the configured root's start
		}
		close(entered)
		<-ctx.Done()
		time.Sleep(200 * time.Millisecond) // a walk that takes a while to notice
		ended.Store(true)
	}
	t.Cleanup(func() { testHookStartRoot = nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	<-d.ready
	hold.Store(true)
	if err := d.AddRoot(added); err != nil {
		t.Fatal(err)
	}
	<-entered
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !ended.Load() {
		t.Error("Run returned before a root's start had ended")
	}
	if leaks := daemonGoroutines(5 * time.Second); leaks != "" {
		t.Errorf("goroutines left after Run returned:\n%s", leaks)
	}
}

// daemonGoroutines returns the stacks of goroutines running code of the
// daemon or the watcher, other than the caller's, once none is left or
// after patience.
func daemonGoroutines(patience time.Duration) string {
	deadline := time.Now().Add(patience)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaks []string
		for i, g := range strings.Split(string(buf), "\n\n") {
			if i == 0 { // the caller's own
				continue
			}
			if strings.Contains(g, "sif-dev/sif/daemon.") || strings.Contains(g, "sif-dev/sif/watcher.") {
				leaks = append(leaks, g)
			}
		}
		if len(leaks) == 0 || time.Now().After(deadline) {
			return strings.Join(leaks, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
