//go:build unix

package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// copyExecutable copies this test binary to path, for any user to run.
func copyExecutable(path string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// floodConns is how many requests a flood keeps in flight at once: twice
// as many as the daemon has request slots, and as many connections as
// one user may keep open.
const floodConns = 32

// flood is what this test binary does when run with SIF_E2E_FLOOD set to
// a socket (see floodAs): it posts the request in the file body to
// /v1/similar from floodConns connections at once, each again as soon as
// it is answered, until it is killed, and prints a dot per answer.
func flood(sock, body string) {
	b, err := os.ReadFile(body)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	var ok, busy atomic.Int64
	for range floodConns {
		go func() {
			hc := unixClient(sock)
			for {
				status, _, err := postWith(context.Background(), hc, "/v1/similar", b)
				switch {
				case err != nil:
					time.Sleep(10 * time.Millisecond)
				case status == 200:
					ok.Add(1)
				default:
					busy.Add(1)
				}
			}
		}()
	}
	for {
		time.Sleep(time.Second)
		os.Stdout.WriteString(".")
	}
}

// floodAs starts a flood of the daemon at sock by uid with the request in
// body, a file uid can read, and returns a function that stops it.
func floodAs(t *testing.T, uid uint32, sock, body string) (stop func()) {
	t.Helper()
	cmd := exec.Command(testBin)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "SIF_E2E_FLOOD="+sock, "SIF_E2E_FLOOD_BODY="+body)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	stop = func() {
		if !done {
			done = true
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}
