//go:build unix

package e2e

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// heldConn is a connection to sifd opened before its socket file went
// away: requests on it must go on being answered.
type heldConn struct {
	c net.Conn
	r *bufio.Reader
}

func (e *env) holdConn() *heldConn {
	e.t.Helper()
	c, err := net.Dial("unix", e.socket)
	must(e.t, err)
	e.t.Cleanup(func() { c.Close() })
	h := &heldConn{c: c, r: bufio.NewReader(c)}
	h.status(e.t)
	return h
}

// status sends GET /v1/status on the held connection and requires a 200.
func (h *heldConn) status(t *testing.T) {
	t.Helper()
	h.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := h.c.Write([]byte("GET /v1/status HTTP/1.1\r\nHost: sifd\r\n\r\n")); err != nil {
		t.Fatalf("held connection: %v", err)
	}
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		t.Fatalf("held connection: %v", err)
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(b.String(), `"pid"`) {
		t.Fatalf("held connection: status %d: %s", resp.StatusCode, b.String())
	}
}

// statusBackWithin polls sifctl status until it succeeds, at most d, and
// returns how long it took.
func (e *env) statusBackWithin(d time.Duration, what string) time.Duration {
	e.t.Helper()
	t0 := time.Now()
	for {
		r := e.sifctl("status")
		if r.code == 0 {
			return time.Since(t0)
		}
		if time.Since(t0) > d {
			e.t.Fatalf("%s: sifctl status still fails after %s: exit %d: %s\n%s", what, d, r.code, r.stderr, e.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logged waits up to d for the daemon's log to hold s.
func (e *env) logged(d time.Duration, s string) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(e.logs.String(), s) {
		if time.Now().After(deadline) {
			e.t.Fatalf("after %s the log does not say %q:\n%s", d, s, e.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func socketModeOwner(t *testing.T, path string) (os.FileMode, uint32) {
	t.Helper()
	st, err := os.Lstat(path)
	must(t, err)
	if st.Mode().Type() != os.ModeSocket {
		t.Fatalf("%s is %v, not a socket", path, st.Mode())
	}
	return st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid
}

// A removed socket file is noticed within seconds, logged, and made again
// with the same mode and owner; a connection opened before goes on being
// answered, and the index is not scanned again.
func TestSocketRemoved(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(1, 4000))
	// The system socket's access: every local user, mode 0666.
	e.start("--socket-access", "all")
	mode0, uid0 := socketModeOwner(t, e.socket)
	if mode0 != 0o666 {
		t.Fatalf("socket mode %#o, want 0666", mode0)
	}
	held := e.holdConn()
	scans := strings.Count(e.logs.String(), "scan started")

	must(t, os.Remove(e.socket))
	took := e.statusBackWithin(5*time.Second, "socket removed")
	t.Logf("sifctl status answered again %s after the socket was removed", took.Round(10*time.Millisecond))
	e.logged(time.Second, "socket file removed: listening again on a new socket")
	if !strings.Contains(e.logs.String(), "level=WARN msg=\"socket file removed") {
		t.Errorf("the removal is not logged at warn level:\n%s", e.logs.String())
	}
	mode, uid := socketModeOwner(t, e.socket)
	if mode != mode0 || uid != uid0 {
		t.Errorf("new socket: mode %#o owner %d, want %#o %d as before", mode, uid, mode0, uid0)
	}
	held.status(t)
	// As nobody, through the 0666 socket.
	if os.Geteuid() == 0 {
		cmd := asNobody(sifctlBin, "--socket", e.socket, "status")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sifctl status as nobody on the new socket: %v: %s", err, out)
		}
	}
	if n := strings.Count(e.logs.String(), "scan started"); n != scans {
		t.Errorf("the socket's return rescanned: %d scans logged, %d before", n, scans)
	}
	e.stop()
	if _, err := os.Lstat(e.socket); err == nil {
		t.Error("sifd left its socket file behind at exit")
	}
}

// A socket replaced by a regular file: the file is not removed, the
// daemon says why it cannot be reached, once, and listens again as soon
// as the file is gone.
func TestSocketReplacedByFile(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(2, 4000))
	e.start()
	held := e.holdConn()
	must(t, os.Remove(e.socket))
	must(t, os.WriteFile(e.socket, []byte("not a socket"), 0o644))
	e.logged(5*time.Second, "socket file replaced by a regular file; cannot listen there again")
	time.Sleep(5 * time.Second) // two more checks: the warning is not repeated
	if n := strings.Count(e.logs.String(), "level=WARN msg=\"socket file replaced by a regular file"); n != 1 {
		t.Errorf("the replacement was warned about %d times, want once:\n%s", n, e.logs.String())
	}
	if b, err := os.ReadFile(e.socket); err != nil || string(b) != "not a socket" {
		t.Fatalf("sifd touched the file put in its socket's place: %q, %v", b, err)
	}
	if r := e.sifctl("status"); r.code == 0 {
		t.Fatalf("sifctl status answered through a regular file?")
	}
	held.status(t)
	must(t, os.Remove(e.socket))
	took := e.statusBackWithin(5*time.Second, "file removed")
	t.Logf("sifctl status answered again %s after the file was removed", took.Round(10*time.Millisecond))
	held.status(t)
}

// A socket another sifd answers on is never taken from it: the daemon
// whose socket was removed waits, and listens again once the path is
// free.
func TestSocketTakenByAnotherDaemon(t *testing.T) {
	a := newEnv(t)
	a.write("a.txt", words(3, 4000))
	a.start()
	must(t, os.Remove(a.socket))
	b := newEnv(t)
	b.socket = a.socket
	b.write("b.txt", words(4, 4000))
	b.start()
	a.logged(5*time.Second, "another process answers there")
	time.Sleep(3 * time.Second)
	if st := a.status(); st.PID != b.daemon.Process.Pid {
		t.Fatalf("the socket answers for pid %d, want the second sifd's %d\n%s", st.PID, b.daemon.Process.Pid, a.logs.String())
	}
	b.stop() // removes its socket
	a.statusBackWithin(5*time.Second, "second sifd stopped")
	if st := a.status(); st.PID != a.daemon.Process.Pid {
		t.Fatalf("the socket answers for pid %d, want the first sifd's %d", st.PID, a.daemon.Process.Pid)
	}
}

// SIGHUP makes a removed socket again at once, without waiting for the
// periodic check.
func TestSocketSIGHUP(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(5, 4000))
	e.start("--socket-check-interval", "1h")
	must(t, os.Remove(e.socket))
	time.Sleep(500 * time.Millisecond)
	if r := e.sifctl("status"); r.code == 0 {
		t.Fatal("sifctl status answered with the socket removed")
	}
	must(t, e.daemon.Process.Signal(syscall.SIGHUP))
	took := e.statusBackWithin(2*time.Second, "SIGHUP after removing the socket")
	t.Logf("sifctl status answered again %s after SIGHUP", took.Round(10*time.Millisecond))
	e.logged(time.Second, "socket file removed: listening again on a new socket")
	e.stop()
}

// asNobody returns a command that runs bin as nobody.
func asNobody(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return cmd
}
