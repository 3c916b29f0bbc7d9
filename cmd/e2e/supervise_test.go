//go:build linux

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// supervisedEnv is sifd's environment for a run in the foreground that
// supervises itself, whatever the test runner's own (it may run under
// systemd, which turns supervision off).
var supervisedEnv = []string{"SIFD_SUPERVISE=1", "INVOCATION_ID=", "NOTIFY_SOCKET="}

// backWithNewPid waits until the socket answers ready from a daemon other
// than pid, and returns its pid and how long that took.
func (e *env) backWithNewPid(pid int, within time.Duration) (int, time.Duration) {
	e.t.Helper()
	start := time.Now()
	for {
		select {
		case <-e.waited:
			e.t.Fatalf("the supervisor exited: %v\n%s", e.exit, tail(e.logs.String(), 60))
		default:
		}
		if st, err := statusOnce(e); err == nil && st.PID != pid && st.State == "ready" {
			return st.PID, time.Since(start)
		}
		if time.Since(start) > within {
			e.t.Fatalf("no daemon other than pid %d ready on %s after %v\n%s", pid, e.socket, within, tail(e.logs.String(), 60))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pebble kills the daemon outright (the fatal error of
// cockroachdb/pebble#5601, through a debug hook that makes the creation of
// its next write-ahead log fail while it rotates it): sifd run in the
// foreground starts it again, on the same socket, within seconds, and
// nothing indexed is lost. So does a daemon killed by SIGKILL. SIGTERM to
// the supervisor stops the daemon cleanly.
func TestSupervisorRestartsDeadDaemon(t *testing.T) {
	e := newEnv(t)
	old := e.corpus("a", 110, 4100)
	trigger := filepath.Join(e.dir, "crash-now")
	e.setenv = append(supervisedEnv, "SIFD_DEBUG_CRASH_WAL="+trigger)
	e.start("--settle-delay", "50ms")
	pid := e.status().PID
	if pid == e.daemon.Process.Pid {
		t.Fatalf("the daemon runs in the process started (pid %d): not supervised", pid)
	}
	// Something in Pebble's memtable, for the compaction to flush.
	added := e.write("b/new.txt", words(4200, 20000))
	e.waitApplied()

	if err := os.WriteFile(trigger, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	pid2, took := e.backWithNewPid(pid, 30*time.Second)
	t.Logf("Pebble's fatal error: back in %v (pid %d, then %d)", took.Round(time.Millisecond), pid, pid2)
	logs := e.logs.String()
	if !strings.Contains(logs, "fatal error: sync: unlock of unlocked mutex") {
		t.Errorf("the daemon did not die of Pebble's fatal error:\n%s", tail(logs, 60))
	}
	if !strings.Contains(logs, "sifd died: restarting it") {
		t.Errorf("the supervisor did not log the restart:\n%s", tail(logs, 60))
	}
	if took > 10*time.Second {
		t.Errorf("the daemon was back only after %v", took)
	}
	e.allFound(sample(old, 15))
	if got := e.topMatch(e.query("q-added", e.mustRead(added))); got != added {
		t.Errorf("the file indexed before the crash: top match %q, want %s", got, added)
	}

	// A death by a signal the supervisor did not send.
	if err := syscall.Kill(pid2, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pid3, took := e.backWithNewPid(pid2, 30*time.Second)
	t.Logf("SIGKILL: back in %v (pid %d)", took.Round(time.Millisecond), pid3)
	e.allFound(sample(old, 15))
	checkAgainstFreshScan(t, e) // stops it with SIGTERM: exit status 0
}

// A daemon that exits on its own with an error (here a root that does not
// exist) is not started again: the supervisor exits at once with its
// status and its one line of error.
func TestSupervisorDoesNotRestartOnPurpose(t *testing.T) {
	e := newEnv(t)
	cmd := exec.Command(sifdBin, "run", "--root", filepath.Join(e.dir, "nope"), "--db", e.db, "--socket", e.socket)
	cmd.Env = append(append(os.Environ(), "HOME="+e.dir, "XDG_STATE_HOME="+e.dir), supervisedEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("sifd run with a missing root: %v, want exit status 2\n%s", err, stderr.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if n := strings.Count(stderr.String(), "sifd: "); n != 1 || strings.Contains(stderr.String(), "restarting") {
		t.Errorf("stderr holds %d error lines, want 1 and no restart:\n%s", n, stderr.String())
	}
}
