package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// refuseWrites makes the index directory refuse writes with errno while
// the returned flag is set.
func refuseWrites(t *testing.T, errno syscall.Errno) *atomic.Bool {
	var refuse atomic.Bool
	oldCheck, oldProbe := dirWritableCheck, probeDir
	dirWritableCheck = func(dir string) error {
		if refuse.Load() {
			return &os.PathError{Op: "access", Path: dir, Err: errno}
		}
		return oldCheck(dir)
	}
	probeDir = func(dir string) error {
		if refuse.Load() {
			return &os.PathError{Op: "open", Path: dir, Err: errno}
		}
		return oldProbe(dir)
	}
	t.Cleanup(func() { dirWritableCheck, probeDir = oldCheck, oldProbe }) // after the daemon's own cleanup
	return &refuse
}

// An index directory that stops taking writes puts writes on hold, with
// the reason in the status, before any write reaches Pebble; the changes
// made meanwhile are applied once it takes writes again.
func TestIndexDirNotWritable(t *testing.T) {
	for _, c := range []struct {
		errno  syscall.Errno
		reason string
	}{
		{syscall.EROFS, "index directory on a read-only filesystem"},
		{syscall.EPERM, "index directory not writable (immutable?)"},
		{syscall.EACCES, "index directory not writable (permission denied)"},
	} {
		t.Run(c.errno.Error(), func(t *testing.T) {
			refuse := refuseWrites(t, c.errno)
			root := t.TempDir()
			d, logs := startDaemon(t, Config{Roots: []string{root}, SettleDelay: 20 * time.Millisecond})
			refuse.Store(true)
			time.Sleep(150 * time.Millisecond) // past the last look, which a write may reuse for 100 ms
			if err := d.ix.Remove(filepath.Join(root, "none")); err == nil {
				t.Fatal("a write went through while the index directory refused writes")
			}
			st := d.Status()
			if st.State != "degraded" || !strings.HasPrefix(st.Reason, c.reason+": ") {
				t.Fatalf("status: %s (%s), want degraded: %s\n%s", st.State, st.Reason, c.reason, logs)
			}
			p := filepath.Join(root, "new.txt")
			if err := os.WriteFile(p, []byte(strings.Repeat("written while on hold; ", 300)), 0o644); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * faultPoll)
			if st := d.Status(); st.State != "degraded" {
				t.Fatalf("writes resumed while the directory still refused them: %s (%s)", st.State, st.Reason)
			} else if !strings.Contains(st.Reason, "retrying every 1s;") {
				t.Errorf("reason %q: a directory that refuses writes is tried every second, without back-off", st.Reason)
			}
			refuse.Store(false)
			deadline := time.Now().Add(6 * faultPoll)
			for d.Status().State != "ready" {
				if time.Now().After(deadline) {
					t.Fatalf("still %s (%s) once the directory took writes\n%s", d.Status().State, d.Status().Reason, logs)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if _, err := d.Wait(context.Background(), 10*time.Second); err != nil {
				t.Fatal(err)
			}
			if _, err := d.ix.Lookup(p); err != nil {
				t.Errorf("the file written while on hold is not indexed: %v", err)
			}
		})
	}
}

// The ballast is written beside the index at start; a full disk deletes it
// and puts writes on hold; once there is room again it is written anew.
func TestBallast(t *testing.T) {
	d, logs := startDaemon(t, Config{Roots: []string{t.TempDir()}})
	size := d.faults.ballast.size()
	if size == 0 {
		t.Fatalf("no ballast for the test's filesystem")
	}
	st, err := os.Stat(d.faults.ballast.path())
	if err != nil || uint64(st.Size()) != size {
		t.Fatalf("ballast at start: %v, %v; want %d bytes", st, err, size)
	}
	if filepath.Dir(d.faults.ballast.path()) != d.stateDir() {
		t.Errorf("ballast %s is not in the state directory %s", d.faults.ballast.path(), d.stateDir())
	}
	d.faults.onDiskFull()
	if _, err := os.Stat(d.faults.ballast.path()); !os.IsNotExist(err) {
		t.Fatalf("ballast after the disk filled: %v", err)
	}
	if st := d.Status(); st.State != "degraded" || !strings.Contains(st.Reason, "no space left on device") {
		t.Fatalf("status after the disk filled: %s (%s)", st.State, st.Reason)
	}
	deadline := time.Now().Add(4 * faultPoll)
	for {
		if _, err := os.Stat(d.faults.ballast.path()); err == nil && d.Status().State == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ballast was not written again, or writes not resumed: %s\n%s", d.Status().State, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
