//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// makeTree writes files distinct text files of 1.5 to 3.3 KB under root,
// spread over dirs directories, and returns their paths.
func makeTree(t *testing.T, root string, dirs, files int, seed uint64) []string {
	t.Helper()
	var paths []string
	for i := range files {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i%dirs))
		if err := os.MkdirAll(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%05d.txt", i))
		if err := os.WriteFile(p, words(seed<<32|uint64(i), 1500+(i%7)*300), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// awaitSocket returns as soon as sifd has created its socket, to ask it
// while it is still starting.
func (e *env) awaitSocket() {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := os.Lstat(e.socket); err == nil && st.Mode().Type() == os.ModeSocket {
			return
		}
		select {
		case <-e.waited:
			e.t.Fatalf("sifd exited before creating its socket: %v\n%s", e.exit, e.logs.String())
		case <-time.After(time.Millisecond):
		}
	}
	e.t.Fatalf("sifd created no socket within 30s\n%s", e.logs.String())
}

// requireFound fails unless every one of files (under the root) is in the
// index: a similar query for a copy of it, made outside the roots (a
// query never lists its own path), lists it as identical.
func (e *env) requireFound(files []string) {
	e.t.Helper()
	queries := make([]string, len(files))
	for i, f := range files {
		rel, err := filepath.Rel(e.dir, f)
		if err != nil {
			e.t.Fatal(err)
		}
		queries[i] = filepath.Join(e.dir, "queries", rel)
		if _, err := os.Stat(queries[i]); err == nil {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			e.t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(queries[i]), 0o777); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(queries[i], b, 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	missing := 0
	for start := 0; start < len(files); start += 500 {
		end := min(start+500, len(files))
		r, out := e.similar(queries[start:end]...)
		if r.code == 2 || len(out) != end-start {
			e.t.Fatalf("sifctl similar on %d files: exit %d, %d answers: %s", end-start, r.code, len(out), r.stderr)
		}
		for i, s := range out {
			want := files[start+i]
			found := false
			for _, m := range s.Matches {
				found = found || m.Path == want && m.Identical
			}
			if !found {
				if missing < 5 {
					e.t.Errorf("%s is not found by sifctl similar", want)
				}
				missing++
			}
		}
	}
	if missing > 0 {
		e.t.Fatalf("%d of %d files are not found", missing, len(files))
	}
}

// requireScanned fails unless every root of st has finished a full scan
// that dealt with every file it found, and the index holds want files.
func requireScanned(t *testing.T, st *ipc.Status, want int) {
	t.Helper()
	for _, r := range st.Roots {
		if r.State != ipc.RootWatching || r.Scans == 0 || r.ScanFinish == "" || !r.WalkDone || r.FilesDone != r.FilesSeen {
			t.Errorf("root %s: %s, %d scans, finished %q, walk done %v, %d of %d files done: want a finished scan",
				r.Path, r.State, r.Scans, r.ScanFinish, r.WalkDone, r.FilesDone, r.FilesSeen)
		}
	}
	if st.Index.Files != uint64(want) {
		t.Errorf("index holds %d files, want %d", st.Index.Files, want)
	}
}

// TestWaitRightAfterStart: sifctl wait called while sifd is starting
// returns only once the first scan is done, so every file that existed
// before the call is found after it. The first scan of a few thousand files
// with one worker takes a while; the wait is asked as soon as the socket
// exists, several times to catch the race between serving and scanning.
func TestWaitRightAfterStart(t *testing.T) {
	e := newEnv(t)
	files := makeTree(t, e.root, 1500, 3000, 1)
	for i := range 3 {
		e.db = filepath.Join(e.dir, fmt.Sprintf("db%d", i))
		e.startNoWait("--workers", "1")
		e.awaitSocket()
		r := e.sifctl("wait", "--timeout", "30s")
		if r.code != 0 {
			t.Fatalf("run %d: sifctl wait: exit %d: %s%s", i, r.code, r.stdout, r.stderr)
		}
		requireScanned(t, e.status(), len(files))
		e.requireFound(files)
		if t.Failed() {
			t.Fatalf("run %d: sifctl wait said %q before the index was up to date", i, r.stdout)
		}
		e.stop()
	}
}

// TestStatusScanningUntilScanned: from the moment sifd answers, a root whose
// first scan is queued (behind another root's) or running shows
// "scanning", never "watching".
func TestStatusScanningUntilScanned(t *testing.T) {
	e := newEnv(t)
	root2 := filepath.Join(e.dir, "root2")
	if err := os.Mkdir(root2, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(root2, 0o777)
	n := len(makeTree(t, e.root, 40, 1500, 1)) + len(makeTree(t, root2, 40, 1500, 2))
	e.startNoWait("--workers", "1", "--root", root2)
	e.awaitSocket()
	c := ipc.NewClient(e.socket)
	samples := 0
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := c.Status(context.Background())
		if err != nil && samples == 0 && ipc.NotServing(err) && time.Now().Before(deadline) {
			// The socket file exists from bind(2), a moment before listen(2).
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("status while starting: %v", err)
		}
		if st.State == "ready" {
			requireScanned(t, st, n)
			break
		}
		samples++
		for _, r := range st.Roots {
			if r.State != ipc.RootScanning && r.ScanFinish == "" {
				t.Fatalf("status %d: root %s shows %q before its first scan ended (daemon %s, %d of %d files done, %d scans)",
					samples, r.Path, r.State, st.State, r.FilesDone, r.FilesSeen, r.Scans)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 60s\n%s", e.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if samples < 2 {
		t.Fatalf("the first scans ended after %d status answers: the tree is too small to see them", samples)
	}
}

// startSifctl starts sifctl against the env's socket in the background;
// the returned channel yields its result.
func (e *env) startSifctl(args ...string) <-chan result {
	done := make(chan result, 1)
	go func() {
		cmd := exec.Command(sifctlBin, append([]string{"--socket", e.socket}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
			errb.WriteString(err.Error())
		}
		done <- result{code: code, stdout: out.String(), stderr: errb.String()}
	}()
	return done
}

// requireStillWaiting fails if wait has returned.
func requireStillWaiting(t *testing.T, done <-chan result, what string) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("%s: wait returned: exit %d: %s%s", what, r.code, r.stdout, r.stderr)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestWaitForStartingDaemon: sifctl wait started before sifd (no socket
// yet), and again with the socket a SIGKILLed sifd left behind, waits for
// sifd, then for its index, and says so.
func TestWaitForStartingDaemon(t *testing.T) {
	e := newEnv(t)
	files := makeTree(t, e.root, 200, 1000, 3)

	done := e.startSifctl("wait", "--timeout", "30s")
	requireStillWaiting(t, done, "no socket")
	e.startNoWait("--workers", "1")
	r := <-done
	if r.code != 0 || !strings.Contains(r.stdout, "sifd at "+e.socket+" answered after ") || !strings.Contains(r.stdout, "; index up to date after ") {
		t.Fatalf("wait before sifd: exit %d: %q %q", r.code, r.stdout, r.stderr)
	}
	requireScanned(t, e.status(), len(files))
	e.requireFound(files)

	e.kill()
	if st, err := os.Lstat(e.socket); err != nil || st.Mode().Type() != os.ModeSocket {
		t.Fatalf("a killed sifd left no socket behind (%v): the test needs one", err)
	}
	files = append(files, e.write("written-while-down.txt", words(99, 5000)))
	done = e.startSifctl("wait", "--json", "--timeout", "30s")
	requireStillWaiting(t, done, "stale socket")
	e.startNoWait("--workers", "1")
	r = <-done
	var w struct {
		ipc.WaitResponse
		Socket       string `json:"socket"`
		DaemonWaitNs int64  `json:"daemon_wait_ns"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &w); r.code != 0 || err != nil || w.Socket != e.socket || w.DaemonWaitNs <= 0 {
		t.Fatalf("wait --json on a stale socket: exit %d, %v: %q %q", r.code, err, r.stdout, r.stderr)
	}
	requireScanned(t, e.status(), len(files))
	e.requireFound(files)
}

// TestWaitNoDaemon: with no sifd ever starting, wait gives up once its
// timeout has passed and says what it waited for; a socket this user may
// not use fails at once.
func TestWaitNoDaemon(t *testing.T) {
	e := newEnv(t)
	t0 := time.Now()
	r := e.sifctl("wait", "--timeout", "2s")
	took := time.Since(t0)
	if r.code != 1 || !strings.Contains(r.stderr, "timed out after 2s waiting for sifd to answer on "+e.socket+" (nothing listened there") {
		t.Errorf("wait with no daemon: exit %d: %q", r.code, r.stderr)
	}
	if took < 2*time.Second || took > 10*time.Second {
		t.Errorf("wait with no daemon returned after %s, want about 2s", took)
	}

	// A socket someone listens on, private to its owner.
	ln, err := net.Listen("unix", e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	args := []string{"--socket", e.socket, "wait", "--timeout", "20s"}
	cmd := exec.Command(sifctlBin, args...)
	if os.Geteuid() == 0 {
		os.Chmod(e.socket, 0o600)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	} else {
		os.Chmod(e.socket, 0) // connect(2) needs write permission
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	t0 = time.Now()
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(errb.String(), "permission denied on "+e.socket) {
		t.Errorf("wait on a socket it may not use: %v: %q", err, errb.String())
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("wait on a socket it may not use took %s: it must fail at once", d)
	}
}

// note is one message sifd sent to the notify socket.
type note struct {
	msg       string
	answering bool // sifd's socket answered a status request when it arrived
}

// TestNotify: sifd run under systemd's notify protocol ($NOTIFY_SOCKET)
// sends READY=1 once its socket answers, STATUS= lines with the first
// scan's progress, then with what is indexed, and STOPPING=1 on SIGTERM.
func TestNotify(t *testing.T) {
	e := newEnv(t)
	files := makeTree(t, e.root, 300, 3000, 4)
	path := filepath.Join(e.dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	os.Chmod(path, 0o777) // sifd may run as nobody
	notes := make(chan note, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(notes)
				return
			}
			msg := string(buf[:n])
			nt := note{msg: msg}
			if strings.Contains(msg, "READY=1") {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := ipc.NewClient(e.socket).Status(ctx)
				cancel()
				nt.answering = err == nil
			}
			notes <- nt
		}
	}()
	next := func(what string) note {
		t.Helper()
		select {
		case nt, ok := <-notes:
			if !ok {
				t.Fatalf("waiting for %s: notify socket closed", what)
			}
			return nt
		case <-time.After(60 * time.Second):
			t.Fatalf("no %s from sifd within 60s\n%s", what, e.logs.String())
		}
		panic("unreachable")
	}

	e.setenv = []string{"NOTIFY_SOCKET=" + path}
	e.startNoWait("--workers", "1", "--progress-interval", "50ms")
	nt := next("READY=1")
	if !strings.Contains(nt.msg, "READY=1") || !nt.answering {
		t.Fatalf("first message %q (socket answering: %v): want READY=1 once the socket answers", nt.msg, nt.answering)
	}
	progress := 0
	for {
		nt = next("STATUS=ready")
		if strings.HasPrefix(nt.msg, "STATUS=first scan: ") && strings.Contains(nt.msg, " MB/s") {
			progress++
			continue
		}
		want := fmt.Sprintf("STATUS=ready: %d files indexed; watching 1 root", len(files))
		if nt.msg != want {
			t.Fatalf("message %q after %d progress lines: want the scan's progress, then %q", nt.msg, progress, want)
		}
		break
	}
	if progress == 0 {
		t.Errorf("no STATUS line with the first scan's progress")
	}
	e.requireFound(files[:10])

	e.stop()
	nt = next("STOPPING=1")
	if !strings.Contains(nt.msg, "STOPPING=1") {
		t.Errorf("message %q after SIGTERM: want STOPPING=1", nt.msg)
	}
}
