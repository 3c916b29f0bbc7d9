package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// notes records what a daemon tells its Notifier.
type notes struct {
	mu   sync.Mutex
	msgs []string
}

func (n *notes) Notify(state string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.msgs = append(n.msgs, state)
	return nil
}

func (n *notes) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.msgs)
}

// The Notifier hears READY=1 first, then the status once the first scan
// has ended, and STOPPING=1 when the daemon stops.
func TestNotifier(t *testing.T) {
	root := t.TempDir()
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", i)), []byte(strings.Repeat(fmt.Sprint(i), 500)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := &notes{}
	d, err := open(Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s"), Notifier: n})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	select {
	case <-d.ready:
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready after 30s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	got := n.list()
	want := []string{
		"READY=1\nSTATUS=serving queries; first scan starting",
		"STATUS=ready: 20 files indexed; watching 1 root",
		"STOPPING=1\nSTATUS=stopping: finishing the work in flight",
	}
	if !slices.Equal(got, want) {
		t.Errorf("notes:\n%q\nwant\n%q", got, want)
	}
}

func TestNotifyStatusLines(t *testing.T) {
	roots := []ipc.RootStatus{
		{State: ipc.RootScanning, FilesDone: 100, FilesSeen: 400, BytesDone: 3e6, WalkDone: true},
		{State: ipc.RootScanning, FilesDone: 20, FilesSeen: 50, BytesDone: 1e6},
	}
	if got, want := scanStatus(roots, 2*time.Second), "first scan: 120 of 450 files found so far, 2.0 MB/s"; got != want {
		t.Errorf("scanStatus: %q, want %q", got, want)
	}
	roots[1].WalkDone = true
	if got, want := scanStatus(roots, 0), "first scan: 120 of 450 files, 0.0 MB/s"; got != want {
		t.Errorf("scanStatus: %q, want %q", got, want)
	}
	roots = []ipc.RootStatus{{State: ipc.RootWatching}, {State: ipc.RootPolling}, {State: ipc.RootWatching}}
	if got, want := readyStatus(7, roots), "ready: 7 files indexed; watching 2 roots, polling 1 root"; got != want {
		t.Errorf("readyStatus: %q, want %q", got, want)
	}
}
