//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// Paths of the binaries built by TestMain, and of a copy of this test
// binary that any user may run (see floodAs).
var sifdBin, sifctlBin, testBin string

// asNobody: when the tests run as root, sifd runs as this uid/gid, so file
// permissions mean something to it (root reads everything).
const nobody = 65534

func TestMain(m *testing.M) {
	if sock := os.Getenv("SIF_E2E_FLOOD"); sock != "" {
		flood(sock, os.Getenv("SIF_E2E_FLOOD_BODY")) // never returns
	}
	dir, err := os.MkdirTemp("", "sif-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Chmod(dir, 0o755)
	sifdBin = filepath.Join(dir, "sifd")
	sifctlBin = filepath.Join(dir, "sifctl")
	testBin = filepath.Join(dir, "e2e.test")
	for bin, pkg := range map[string]string{sifdBin: "../sifd", sifctlBin: "../sifctl"} {
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", pkg, err)
			os.Exit(2)
		}
	}
	if err := copyExecutable(testBin); err != nil {
		fmt.Fprintf(os.Stderr, "copying the test binary: %v\n", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one test's sandbox: a root to index, a db and a socket.
type env struct {
	t      *testing.T
	dir    string // everything lives under it
	root   string
	db     string
	socket string
	daemon *exec.Cmd
	// daemonAttr, when set, runs sifd with these credentials instead of
	// as nobody.
	daemonAttr *syscall.SysProcAttr
	setenv     []string // added to sifd's environment
	logs       *syncBuffer
	waited     chan struct{}
	exit       error
}

func newEnv(t *testing.T) *env {
	t.Helper()
	// Short, world-traversable paths: socket paths are limited to ~100 bytes,
	// and sifd may run as nobody.
	dir, err := os.MkdirTemp("", "sif-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	e := &env{t: t, dir: dir, root: filepath.Join(dir, "root"), db: filepath.Join(dir, "db"), socket: filepath.Join(dir, "s.sock")}
	if err := os.Mkdir(e.root, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(e.root, 0o777)
	return e
}

// write creates root-relative file name with content, making directories.
func (e *env) write(name string, content []byte) string {
	e.t.Helper()
	p := filepath.Join(e.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// start runs sifd on the env's root and waits until it is ready.
func (e *env) start(extra ...string) {
	e.t.Helper()
	e.startNoWait(extra...)
	e.waitReady()
}

func (e *env) startNoWait(extra ...string) {
	e.t.Helper()
	e.startArgs(append([]string{"run", "--root", e.root, "--db", e.db, "--socket", e.socket, "--log-level", "debug"}, extra...)...)
}

// startArgs runs sifd with exactly args, not waiting for it to be ready.
func (e *env) startArgs(args ...string) {
	e.t.Helper()
	cmd := exec.Command(sifdBin, args...)
	e.logs = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = e.logs, e.logs
	cmd.Env = append(os.Environ(), "HOME="+e.dir, "XDG_STATE_HOME="+e.dir, "XDG_RUNTIME_DIR="+e.dir)
	// The daemon in the process started, so that e.daemon's pid is its
	// own (signals, CPU time); a test of the supervisor sets it to 1.
	cmd.Env = append(cmd.Env, "SIFD_SUPERVISE=0")
	cmd.Env = append(cmd.Env, e.setenv...)
	switch {
	case e.daemonAttr != nil:
		cmd.SysProcAttr = e.daemonAttr
	case os.Geteuid() == 0:
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.daemon = cmd
	e.waited = make(chan struct{})
	go func() { e.exit = cmd.Wait(); close(e.waited) }()
	e.t.Cleanup(func() {
		if e.daemon != nil {
			e.daemon.Process.Kill()
			<-e.waited
		}
		if e.t.Failed() {
			e.t.Logf("sifd log:\n%s", e.logs.String())
		}
	})
}

// waitReady polls the status until every root has been scanned.
func (e *env) waitReady() {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-e.waited:
			e.t.Fatalf("sifd exited before it was ready: %v\n%s", e.exit, e.logs.String())
		default:
		}
		st, err := ipc.NewClient(e.socket).Status(context.Background())
		if err == nil && st.State == "ready" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("sifd not ready after 60s\n%s", e.logs.String())
}

// stop sends SIGTERM and requires a clean exit.
func (e *env) stop() {
	e.t.Helper()
	e.daemon.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.waited:
	case <-time.After(30 * time.Second):
		e.t.Fatalf("sifd did not stop within 30s of SIGTERM\n%s", e.logs.String())
	}
	if e.exit != nil {
		e.t.Fatalf("sifd exited with %v after SIGTERM\n%s", e.exit, e.logs.String())
	}
	e.daemon = nil
}

// kill sends SIGKILL and waits for the process to die.
func (e *env) kill() {
	e.t.Helper()
	e.daemon.Process.Kill()
	<-e.waited
	e.daemon = nil
}

// result of a command.
type result struct {
	code   int
	stdout string
	stderr string
}

// sifctl runs sifctl against the env's socket.
func (e *env) sifctl(args ...string) result {
	e.t.Helper()
	return run(e.t, sifctlBin, append([]string{"--socket", e.socket}, args...)...)
}

func run(t *testing.T, bin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running %s %v: %v", bin, args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func (e *env) status() *ipc.Status {
	e.t.Helper()
	st, err := e.tryStatus()
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// tryStatus is status, returning its error.
func (e *env) tryStatus() (*ipc.Status, error) {
	r := e.sifctl("status", "--json")
	if r.code != 0 {
		return nil, fmt.Errorf("sifctl status: exit %d: %s", r.code, r.stderr)
	}
	var st ipc.Status
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		return nil, fmt.Errorf("sifctl status --json: %v\n%s", err, r.stdout)
	}
	return &st, nil
}

// similarJSON is one line of sifctl similar --json.
type similarJSON struct {
	Query        string      `json:"query"`
	Size         int64       `json:"size"`
	Fingerprints int         `json:"fingerprints"`
	Skipped      int         `json:"skipped"`
	TooFew       bool        `json:"too_few"`
	Matches      []ipc.Match `json:"matches"`
}

func (e *env) similar(args ...string) (result, []similarJSON) {
	e.t.Helper()
	r := e.sifctl(append([]string{"similar", "--json"}, args...)...)
	var out []similarJSON
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" {
			continue
		}
		var s similarJSON
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			e.t.Fatalf("similar --json line %q: %v", line, err)
		}
		out = append(out, s)
	}
	return r, out
}

// words makes n bytes of text-like content from seed.
func words(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var b bytes.Buffer
	for b.Len() < n {
		l := 2 + r.IntN(8)
		for range l {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		if r.IntN(12) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

// edit overwrites about frac of b with random 50-byte substitutions.
func edit(seed uint64, b []byte, frac float64) []byte {
	r := rand.New(rand.NewPCG(seed, 0xed17))
	out := append([]byte(nil), b...)
	changed := make([]bool, len(out))
	n := 0
	for float64(n) < frac*float64(len(out)) {
		at := r.IntN(len(out) - 50)
		sub := words(r.Uint64(), 50)
		for i := range 50 {
			if !changed[at+i] {
				changed[at+i] = true
				n++
			}
			out[at+i] = sub[i]
		}
	}
	return out
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// must fails the test on a non-nil err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
