package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

func TestWaitCommand(t *testing.T) {
	f := &fakeDaemon{catchUp: true}
	sock := startFake(t, f)
	r := sifctl(t, "--socket", sock, "wait")
	r.want(t, "wait", exitFound, "up to date after ", "")
	r.want(t, "wait", exitFound, ": 1 root synchronised by cookie file, 1 rescanned\n  rescanned /nfs\n", "")
	f.mu.Lock()
	if f.waited != ipc.DefaultWait {
		t.Errorf("wait without --timeout waited up to %s, want %s", f.waited, ipc.DefaultWait)
	}
	f.mu.Unlock()
	r = sifctl(t, "--socket", sock, "wait", "--json", "--timeout", "5s")
	var resp ipc.WaitResponse
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil || r.code != exitFound || resp.Cookies != 1 || len(resp.Rescanned) != 1 {
		t.Errorf("wait --json: exit %d, %v: %q", r.code, err, r.stdout)
	}

	f.mu.Lock()
	f.catchUp = false
	f.mu.Unlock()
	sifctl(t, "--socket", sock, "wait", "--timeout", "20ms").want(t, "wait that times out", exitNothing, "",
		"sifctl: wait: timed out after 20ms: the daemon has not applied every change yet")
	if r := sifctl(t, "--socket", sock, "wait", "--json", "--timeout", "20ms"); r.code != exitNothing || r.stdout != "" {
		t.Errorf("wait --json that times out: exit %d, stdout %q", r.code, r.stdout)
	}
}

// wait waits for a daemon that is not listening yet, and asks again a
// daemon that answers it is shutting down; it says what it waited for.
func TestWaitForDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	done := make(chan result, 1)
	go func() { done <- sifctl(t, "--socket", sock, "wait", "--timeout", "10s") }()
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("wait returned with no daemon: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	default:
	}
	startFakeAt(t, &fakeDaemon{catchUp: true}, sock)
	r := <-done
	r.want(t, "wait before the daemon", exitFound, "sifd at "+sock+" answered after ", "")
	r.want(t, "wait before the daemon", exitFound, "; index up to date after ", "")
	r.want(t, "wait before the daemon", exitFound, ": 1 root synchronised by cookie file", "")

	f := &fakeDaemon{catchUp: true, stopping: 3}
	sock = startFake(t, f)
	r = sifctl(t, "--socket", sock, "--json", "wait", "--timeout", "10s")
	var resp struct {
		ipc.WaitResponse
		Socket       string `json:"socket"`
		DaemonWaitNs int64  `json:"daemon_wait_ns"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil || r.code != exitFound || resp.Cookies != 1 ||
		resp.Socket != sock || resp.DaemonWaitNs < int64(firstRetry) {
		t.Errorf("wait --json on a daemon shutting down 3 times: exit %d, %v: %q", r.code, err, r.stdout)
	}
	if f.stopping != 0 {
		t.Errorf("%d waits left unasked", f.stopping)
	}
}

// With no daemon in time, wait times out with exit 1 once --timeout has
// passed, saying what it waited for; a path that is not a socket fails at
// once.
func TestWaitForNoDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	t0 := time.Now()
	r := sifctl(t, "--socket", sock, "wait", "--timeout", "400ms")
	if d := time.Since(t0); d < 400*time.Millisecond || d > 5*time.Second {
		t.Errorf("wait with no daemon returned after %s, want about 400ms", d)
	}
	r.want(t, "wait with no daemon", exitNothing, "",
		"sifctl: wait: timed out after 400ms waiting for sifd to answer on "+sock+" (nothing listened there, ")

	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	r = sifctl(t, "--socket", sock, "wait", "--timeout", "10s")
	r.want(t, "wait on a regular file", exitError, "", sock+" is not a socket")
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("wait on a regular file took %s", d)
	}
}
