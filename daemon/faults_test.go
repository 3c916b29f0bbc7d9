package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A disk that fills while nothing is written is shown within a fault
// poll: the daemon need not wait for a write to fail or to be checked,
// and it resumes once there is room again.
func TestDiskFilledWithoutWrites(t *testing.T) {
	var full atomic.Bool
	old := statFree
	statFree = func(dir string) (uint64, error) {
		if full.Load() {
			return 4096, nil
		}
		return old(dir)
	}
	t.Cleanup(func() { statFree = old }) // after the daemon's own cleanup
	d, logs := startDaemon(t, Config{Roots: []string{t.TempDir()}, MinFreeSpace: 1 << 20})
	if st := d.Status(); st.State != "ready" {
		t.Fatalf("state before the disk filled: %s (%s)", st.State, st.Reason)
	}
	full.Store(true)
	until := func(what string, ok func(state, reason string) bool) {
		t.Helper()
		deadline := time.Now().Add(3 * faultPoll)
		for {
			st := d.Status()
			if ok(st.State, st.Reason) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after %s: state %s (%s)\n%s", what, 3*faultPoll, st.State, st.Reason, logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	until("degraded with no write", func(state, reason string) bool {
		return state == "degraded" && strings.Contains(reason, "no space left on device")
	})
	full.Store(false)
	until("ready once there is room", func(state, _ string) bool { return state == "ready" })
}

// A compaction that finds the index directory gone (Pebble panics when it
// cannot create its next log) is a fault like a failed write, not a crash:
// Compact returns, and the daemon goes on to rebuild the index.
func TestCompactionWithIndexDeleted(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte(strings.Repeat("the first file; ", 400)), 0o644)
	d, logs := startDaemon(t, Config{Roots: []string{root}, SettleDelay: 20 * time.Millisecond})
	os.WriteFile(filepath.Join(root, "b.txt"), []byte(strings.Repeat("a second file, in the memtable; ", 400)), 0o644)
	if _, err := d.Wait(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(d.cfg.DB); err != nil {
		t.Fatal(err)
	}
	if err := d.ix.Compact(context.Background()); err != nil {
		t.Errorf("compaction with the index deleted: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "rebuil") {
		if time.Now().After(deadline) {
			t.Fatalf("the deleted index was not rebuilt\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
