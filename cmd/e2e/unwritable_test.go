//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// An index directory that stops taking writes under a running daemon
// while files keep changing: made read-only by a bind mount over it,
// made immutable (chattr +i), or on a filesystem that fills with the
// free-space guard off. Pebble cannot survive its log failing (it dies
// with "fatal error: sync: unlock of unlocked mutex" when it cannot
// rotate it, cockroachdb/pebble#5601): sifd must catch each before Pebble
// does, or keep Pebble waiting, and stay up. Each test shows the daemon
// degraded with the reason, answering queries from what the index holds
// while the changes wait, the same process throughout; once the fault is
// lifted the changes are applied, sifd check is clean and the index
// equals a fresh scan of the tree.

// unwritableFault runs the test: fault makes the index unwritable and
// returns what lifts it; reason is what the status must say; afterLift, if
// not nil, runs once the changes are applied.
func unwritableFault(t *testing.T, e *env, reason string, fault func() (lift func()), afterLift func(), flags ...string) {
	t.Helper()
	old := e.corpus("a", 40, 7000)
	e.start(append([]string{"--settle-delay", "50ms"}, flags...)...)
	pid := e.daemon.Process.Pid

	lift := fault()
	lifted := false
	defer func() {
		if !lifted {
			lift()
		}
	}()
	// Changes while the index does not take writes: at least 300, enough
	// that Pebble, were they all written, would fill its memtable and
	// rotate its log; and more until the daemon holds its writes (a full
	// disk is found only once a write needs room that Pebble had not
	// set aside).
	added := make(map[string][]byte)
	for i := 0; i < 2000; i++ {
		b := words(uint64(9000+i), 64<<10)
		added[e.write(fmt.Sprintf("b%d/f%04d.txt", i%10, i), b)] = b
		if i%50 != 49 {
			continue
		}
		select {
		case <-e.waited:
			t.Fatalf("sifd died while its index did not take writes: %v\n%s", e.exit, tail(e.logs.String(), 40))
		default:
		}
		if st, err := statusOnce(e); i >= 300 && err == nil && st.State == "degraded" {
			break
		}
	}
	t.Logf("%d files written during the fault", len(added))
	st := e.until(20*time.Second, "writes on hold", func(st *ipc.Status) bool { return st.State == "degraded" })
	t.Logf("status during the fault: %s: %s", st.State, st.Reason)
	if !strings.Contains(st.Reason, reason) {
		t.Errorf("reason %q does not say %q", st.Reason, reason)
	}
	if r := e.sifctl("status"); !strings.Contains(r.stdout, "degraded: "+reason) {
		t.Errorf("sifctl status does not show the degraded state:\n%s", r.stdout)
	}
	// Queries are answered from what the index holds.
	e.allFound(sample(old, 15))
	// A while longer, with more changes: still up, still degraded.
	for i := range 20 {
		e.write(fmt.Sprintf("c/f%02d.txt", i), words(uint64(9500+i), 64<<10))
	}
	time.Sleep(3 * time.Second)
	if st := e.status(); st.State != "degraded" || st.PID != pid {
		t.Errorf("3 s later: state %q (%s), pid %d (was %d)", st.State, st.Reason, st.PID, pid)
	}

	lift()
	lifted = true
	// (A full disk is tried again with back-off, up to a minute.)
	e.until(90*time.Second, "writes resumed", func(st *ipc.Status) bool { return st.State == "ready" })
	e.waitApplied()
	e.allFound(sample(added, 15)) // and all of them by the fresh scan below
	if afterLift != nil {
		afterLift()
	}
	if st := e.status(); st.PID != pid {
		t.Errorf("sifd pid %d after the fault, %d before: it was restarted", st.PID, pid)
	}
	logs := e.logs.String()
	for _, bad := range []string{"fatal error", "panic:", "restarting sifd in a new process"} {
		if strings.Contains(logs, bad) {
			t.Errorf("the log holds %q:\n%s", bad, tail(logs, 40))
		}
	}
	checkAgainstFreshScan(t, e)
}

// sample returns n of files, or all of them if fewer.
func sample(files map[string][]byte, n int) map[string][]byte {
	out := make(map[string][]byte, n)
	for p, b := range files {
		if len(out) == n {
			break
		}
		out[p] = b
	}
	return out
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// A read-only bind mount over the index directory: new files cannot be
// created in it (EROFS); the files Pebble has open stay writable.
func TestFaultIndexReadOnlyMount(t *testing.T) {
	mustRoot(t)
	e := newEnv(t)
	unwritableFault(t, e, "index directory on a read-only filesystem", func() func() {
		if err := syscall.Mount(e.db, e.db, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("mount --bind %s %s: %v", e.db, e.db, err)
		}
		if err := syscall.Mount("", e.db, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			unmount(t, e.db)
			t.Fatalf("mount -o remount,bind,ro %s: %v", e.db, err)
		}
		return func() { unmount(t, e.db) }
	}, nil)
}

// chattr +i on the index directory: no file can be created, removed or
// renamed in it (EPERM), even by root.
func TestFaultIndexImmutable(t *testing.T) {
	mustRoot(t)
	e := newEnv(t)
	chattr := func(flag string) {
		if out, err := exec.Command("chattr", flag, e.db).CombinedOutput(); err != nil {
			t.Fatalf("chattr %s %s: %v: %s", flag, e.db, err, out)
		}
	}
	unwritableFault(t, e, "index directory not writable", func() func() {
		chattr("+i")
		t.Cleanup(func() { exec.Command("chattr", "-i", e.db).Run() })
		return func() { chattr("-i") }
	}, nil)
}

// The index's filesystem fills with the free-space guard off
// (--min-free-space -1): Pebble's own writes fail with ENOSPC. The
// ballast sifd keeps beside the index is deleted to give Pebble room,
// and written again once the disk has room.
func TestFaultDiskFullNoGuard(t *testing.T) {
	mustRoot(t)
	e := newEnv(t)
	mnt := filepath.Join(e.dir, "dbfs")
	mountTmpfs(t, mnt, "64m")
	e.db = filepath.Join(mnt, "db")
	ballast := filepath.Join(e.db+".state", "ballast")
	unwritableFault(t, e, "no space left on device", func() func() {
		if _, err := os.Stat(ballast); err != nil {
			t.Errorf("no ballast beside the index at start: %v", err)
		}
		// The compaction after the first scan, and the deletion of the
		// files it made obsolete (a log of 17 MiB among them), must not
		// free room once the disk is full: let them end, and fill the
		// disk again after a while.
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(e.logs.String(), "index compacted") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		fillers := []string{fillDisk(t, mnt)}
		time.Sleep(time.Second)
		more := filepath.Join(mnt, "more")
		must(t, os.Mkdir(more, 0o755))
		fillers = append(fillers, fillDisk(t, more))
		t.Logf("free under the index: %d bytes", statfsFree(t, mnt))
		return func() {
			if _, err := os.Stat(ballast); err == nil {
				t.Errorf("the ballast is still there while the disk is full")
			}
			for _, f := range fillers {
				must(t, os.Remove(f))
			}
		}
	}, func() {
		if !strings.Contains(e.logs.String(), "ballast_deleted=true") {
			t.Errorf("the log does not say the ballast was deleted")
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(ballast); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Errorf("the ballast was not written again once there was room: %v", err)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}, "--min-free-space", "-1")
}
