//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sparseFile creates a sparse file of size bytes (all zeros) outside the
// env's root and returns its path.
func (e *env) sparseFile(name string, size int64) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	f, err := os.Create(p)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// outsideFile writes a file outside the env's root and returns its path.
func (e *env) outsideFile(name string, content []byte) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// TestRepetitiveQueries: a query of zeros or of one repeated byte, of any
// size (past the 8 MiB of zeros that once raised the signature's level
// past its maximum, and a sparse 3 GiB file), is judged by similar and
// basis, with its bytes or with a signature, in text and JSON: an answer
// that says it is repetitive, never an error.
func TestRepetitiveQueries(t *testing.T) {
	e := newEnv(t)
	e.write("zeros", make([]byte, 10<<20))
	e.write("aaaa", bytes.Repeat([]byte{'a'}, 2<<20))
	e.write("text.txt", words(1, 200<<10))
	e.start()
	queries := []string{
		e.outsideFile("zeros-500k", make([]byte, 500<<10)), // sent as its bytes
		e.outsideFile("zeros-16m", make([]byte, 16<<20)),   // as a signature
		e.outsideFile("aaaa-3m", bytes.Repeat([]byte{'a'}, 3<<20)),
		e.outsideFile("ff-2m", bytes.Repeat([]byte{0xff}, 2<<20)),
		e.sparseFile("sparse-24m", 24<<20),
	}
	for _, q := range queries {
		for _, args := range [][]string{{"similar"}, {"similar", "--fast"}, {"basis"}} {
			name := strings.Join(args, " ") + " " + filepath.Base(q)
			r := e.sifctl(append(args, q)...)
			if r.code != 0 && r.code != 1 || r.stderr != "" || !strings.Contains(r.stdout, "repetitive") {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want an answer that says it is repetitive", name, r.code, r.stdout, r.stderr)
			}
			r = e.sifctl(append(append(args, "--json"), q)...)
			var line struct {
				Query      string `json:"query"`
				Size       int64  `json:"size"`
				Repetitive bool   `json:"repetitive"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &line); err != nil || r.code != 0 && r.code != 1 || r.stderr != "" ||
				!line.Repetitive || line.Query != q {
				t.Errorf("%s --json: exit %d, stdout %q, stderr %q, %v; want an answer with \"repetitive\": true", name, r.code, r.stdout, r.stderr, err)
			}
		}
	}
	// A query of zeros finds the indexed file of zeros, checked on its
	// windows.
	r, out := e.similar(queries[1])
	if r.code != 0 || len(out) != 1 || len(out[0].Matches) == 0 || out[0].Matches[0].Path != filepath.Join(e.root, "zeros") ||
		out[0].Matches[0].Measure != "sampled" {
		t.Errorf("similar zeros-16m: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	// Varied content is not said to be repetitive.
	if r := e.sifctl("similar", filepath.Join(e.root, "text.txt")); r.code != 1 || strings.Contains(r.stdout, "repetitive") {
		t.Errorf("similar text.txt: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	// A large sparse file: 3 GiB, or 256 MiB under the race detector,
	// which makes the 3 GiB read take minutes; either is far past where
	// the level ran out (8 MiB of zeros).
	size := int64(3 << 30)
	if raceEnabled {
		size = 256 << 20
	}
	big := e.sparseFile("sparse-big", size)
	start := time.Now()
	r = e.sifctl("similar", big)
	t.Logf("similar on a sparse file of %d bytes: %s", size, time.Since(start).Round(time.Millisecond))
	if r.code != 0 && r.code != 1 || r.stderr != "" || !strings.Contains(r.stdout, "repetitive") {
		t.Errorf("similar on a sparse file of %d bytes: exit %d, stdout %q, stderr %q", size, r.code, r.stdout, r.stderr)
	}
}

// spawnSifctl starts sifctl against the env's socket, its output in the
// returned buffers.
func (e *env) spawnSifctl(args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	e.t.Helper()
	cmd := exec.Command(sifctlBin, append([]string{"--socket", e.socket}, args...)...)
	out, errb := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, out, errb
}

// waitFileOpen waits until process pid has path open.
func waitFileOpen(t *testing.T, pid int, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == path {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d did not open %s within 30s", pid, path)
}

// TestSifctlInterrupted: sifctl stops within a second of SIGINT or SIGTERM
// while it reads a large file, exiting 130 or 143.
func TestSifctlInterrupted(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(2, 10000))
	e.start()
	big := e.sparseFile("big", 3<<30)
	for _, c := range []struct {
		sig  syscall.Signal
		args []string
		want int
	}{
		{syscall.SIGTERM, []string{"similar", big}, 143},
		{syscall.SIGINT, []string{"similar", big}, 130},
		{syscall.SIGTERM, []string{"similar", "--fast", "--json", big}, 143},
		{syscall.SIGINT, []string{"basis", big}, 130},
		{syscall.SIGTERM, []string{"compare", big, big}, 143},
	} {
		name := c.sig.String() + " during " + strings.Join(c.args, " ")
		cmd, _, errb := e.spawnSifctl(c.args...)
		waitFileOpen(t, cmd.Process.Pid, big)
		time.Sleep(200 * time.Millisecond) // well into the read
		sent := time.Now()
		cmd.Process.Signal(c.sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatalf("%s: still running 1s after the signal", name)
		}
		took := time.Since(sent)
		if code := cmd.ProcessState.ExitCode(); code != c.want || !strings.Contains(errb.String(), "interrupted by") {
			t.Errorf("%s: exit %d, stderr %q; want %d", name, code, errb.String(), c.want)
		}
		t.Logf("%s: exited %s after the signal", name, took.Round(time.Millisecond))
	}
}

// TestQueryChangedWhileRead: a query file truncated while sifctl reads
// it is not answered as the part read: sifctl says it changed and exits
// 2, with --json's error object on stdout.
func TestQueryChangedWhileRead(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(3, 10000))
	e.start()
	for _, args := range [][]string{{"similar"}, {"similar", "--json"}, {"similar", "--fast"}, {"basis", "--json"}} {
		name := strings.Join(args, " ")
		q := e.sparseFile("q", 2<<30)
		cmd, out, errb := e.spawnSifctl(append(args, q)...)
		waitFileOpen(t, cmd.Process.Pid, q)
		time.Sleep(100 * time.Millisecond)
		if err := os.Truncate(q, 0); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		if err == nil || code != 2 || !strings.Contains(errb.String(), q+": changed while it was read") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and a warning", name, code, out.String(), errb.String())
		}
		if args[len(args)-1] == "--json" {
			var line struct {
				Query string `json:"query"`
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(out.String()), &line); err != nil || line.Query != q || line.Error.Code != "changed" ||
				!strings.Contains(line.Error.Message, "changed while it was read") {
				t.Errorf("%s: stdout %q (%v); want the error object", name, out.String(), err)
			}
		} else if out.String() != "" {
			t.Errorf("%s: answered %q for a file that changed", name, out.String())
		}
	}
}

// TestFlagsAndParamsChecked: float flags refuse NaN and infinities naming
// the flag; sifd's help shows the defaults new indexes get; the daemon
// refuses a query without params.
func TestFlagsAndParamsChecked(t *testing.T) {
	e := newEnv(t)
	q := e.write("a.txt", words(4, 10000))
	e.start()
	for _, args := range [][]string{
		{"similar", "--threshold", "NaN", q},
		{"similar", "--threshold", "+Inf", q},
		{"similar", "--size-ratio", "NaN", q},
		{"groups", "--threshold", "NaN"},
		{"compare", "--threshold", "-Inf", q, q},
	} {
		r := e.sifctl(args...)
		if r.code != 2 || !strings.Contains(r.stderr, fmt.Sprintf("%s %q: not a finite number", args[1], args[2])) || strings.Contains(r.stderr, "json") {
			t.Errorf("%s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	r := run(t, sifdBin, "run", "--help")
	if !strings.Contains(r.stdout+r.stderr, "about 1 in 2^k (default 9)") {
		t.Errorf("sifd run --help does not show --bits's default, 9:\n%s", r.stdout)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", e.socket)
	}}}
	body := `{"size": 3, "strong": "` + strings.Repeat("0", 64) + `", "features": []`
	for _, route := range []string{"/v1/similar", "/v1/basis"} {
		for _, params := range []string{"", `, "params": {}`} {
			resp, err := c.Post("http://sifd"+route, "application/json", strings.NewReader(body+params+"}"))
			if err != nil {
				t.Fatal(err)
			}
			var eb struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			json.NewDecoder(resp.Body).Decode(&eb)
			resp.Body.Close()
			if resp.StatusCode != 400 || eb.Error.Code != "bad_request" || !strings.HasPrefix(eb.Error.Message, "params: missing") {
				t.Errorf("%s without params (%q): %d %+v", route, params, resp.StatusCode, eb)
			}
		}
	}
}
