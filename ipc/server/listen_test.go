//go:build unix

package server

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// logBuf is a concurrency-safe buffer for a test's log.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// warnings returns the log's lines at level WARN.
func (l *logBuf) warnings() []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, "level=WARN") {
			out = append(out, line)
		}
	}
	return out
}

// serveListener listens on sock with mode perm and serves a fake backend
// on it until the test ends; it returns the Listener and the log.
func serveListener(t *testing.T, sock string, perm os.FileMode) (*Listener, *logBuf, *slog.Logger) {
	t.Helper()
	ln, err := Listen(sock, perm)
	if err != nil {
		t.Fatal(err)
	}
	lb := &logBuf{}
	log := slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- New(backendOf(&fakeBackend{params: fingerprint.DefaultParams()}), Options{Version: "test"}).Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln, lb, log
}

// answers reports whether a new connection to sock is answered.
func answers(sock string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := ipc.NewClient(sock).Info(ctx)
	return err
}

// keptConn is a connection opened before the socket file went away.
type keptConn struct {
	net.Conn
	r *bufio.Reader
}

func dialKept(t *testing.T, sock string) *keptConn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	k := &keptConn{Conn: c, r: bufio.NewReader(c)}
	k.get(t) // the server has accepted it
	return k
}

// get sends GET /v1/info on the kept connection and requires a 200.
func (k *keptConn) get(t *testing.T) {
	t.Helper()
	k.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := k.Write([]byte("GET /v1/info HTTP/1.1\r\nHost: sifd\r\n\r\n")); err != nil {
		t.Fatalf("kept connection: %v", err)
	}
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		t.Fatalf("kept connection: %v", err)
	}
	var b [4096]byte
	for {
		if _, err := resp.Body.Read(b[:]); err != nil {
			break
		}
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("kept connection: status %d", resp.StatusCode)
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// A removed socket file is noticed and made again, with its mode, while a
// connection made before goes on being served.
func TestListenerRemovedSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, lb, log := serveListener(t, sock, 0o666)
	kept := dialKept(t, sock)
	if err := ln.Ensure(log); err != nil {
		t.Fatalf("Ensure on an intact socket: %v", err)
	}
	if w := lb.warnings(); len(w) != 0 {
		t.Fatalf("intact socket logged %q", w)
	}

	must(t, os.Remove(sock))
	if err := answers(sock); err == nil {
		t.Fatal("a removed socket still answers")
	}
	if err := ln.Ensure(log); err != nil {
		t.Fatalf("Ensure after removal: %v", err)
	}
	if err := answers(sock); err != nil {
		t.Fatalf("new socket: %v", err)
	}
	if m := mode(t, sock); m != 0o666 {
		t.Errorf("new socket mode %#o, want 0666", m)
	}
	if w := lb.warnings(); len(w) != 1 || !strings.Contains(w[0], "socket file removed: listening again") || !strings.Contains(w[0], sock) {
		t.Errorf("warnings %q, want one saying the socket was removed", w)
	}
	kept.get(t)
	// The new socket is the Listener's own: nothing more to do.
	if err := ln.Ensure(log); err != nil || len(lb.warnings()) != 1 {
		t.Errorf("Ensure on the new socket: %v, warnings %q", err, lb.warnings())
	}
}

// A socket replaced by a stale one (nobody answers) is taken back; a
// regular file is never removed, and is reported once, until it goes.
func TestListenerReplacedSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, lb, log := serveListener(t, sock, 0o600)
	kept := dialKept(t, sock)

	// A stale socket: made, then closed without unlinking.
	must(t, os.Remove(sock))
	other, err := net.Listen("unix", sock)
	must(t, err)
	other.(*net.UnixListener).SetUnlinkOnClose(false)
	other.Close()
	if err := ln.Ensure(log); err != nil {
		t.Fatalf("Ensure over a stale socket: %v", err)
	}
	if err := answers(sock); err != nil {
		t.Fatalf("after a stale socket: %v", err)
	}
	if w := lb.warnings(); len(w) != 1 || !strings.Contains(w[0], "replaced by a socket") {
		t.Errorf("warnings %q, want one saying it was replaced by a socket", w)
	}

	// A regular file.
	must(t, os.Remove(sock))
	must(t, os.WriteFile(sock, []byte("keep me"), 0o644))
	for range 3 {
		if err := ln.Ensure(log); err == nil || !strings.Contains(err.Error(), "not a socket") {
			t.Fatalf("Ensure over a regular file: %v", err)
		}
	}
	if b, err := os.ReadFile(sock); err != nil || string(b) != "keep me" {
		t.Fatalf("the regular file was touched: %q, %v", b, err)
	}
	w := lb.warnings()
	if len(w) != 2 || !strings.Contains(w[1], "replaced by a regular file") || !strings.Contains(w[1], "not a socket") {
		t.Errorf("warnings %q, want one more, once, saying a regular file is there", w)
	}
	kept.get(t)
	must(t, os.Remove(sock))
	if err := ln.Ensure(log); err != nil {
		t.Fatalf("Ensure once the file is gone: %v", err)
	}
	if err := answers(sock); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, sock); m != 0o600 {
		t.Errorf("new socket mode %#o, want 0600", m)
	}
	kept.get(t)
}

// A socket another process answers on is left alone, also by Close; once
// it is gone, the Listener takes the path back.
func TestListenerLiveSocketIsNotTaken(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, lb, log := serveListener(t, sock, 0o600)
	must(t, os.Remove(sock))
	other, err := Listen(sock, 0o600)
	must(t, err)
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for range 2 {
		if err := ln.Ensure(log); !errors.Is(err, ErrInUse) {
			t.Fatalf("Ensure with another process on the path: %v, want ErrInUse", err)
		}
	}
	if w := lb.warnings(); len(w) != 1 || !strings.Contains(w[0], "another process answers there") {
		t.Errorf("warnings %q", w)
	}
	st, err := os.Lstat(sock)
	must(t, err)
	if !sameFile(st, other.id) {
		t.Fatal("Ensure replaced another process's live socket")
	}

	// The other goes away and removes its socket: the path is free.
	must(t, other.Close())
	if _, err := os.Lstat(sock); err == nil {
		t.Fatal("Close left its own socket file")
	}
	if err := ln.Ensure(log); err != nil {
		t.Fatal(err)
	}
	if err := answers(sock); err != nil {
		t.Fatal(err)
	}

	// Close leaves a socket that is not its own.
	mine := filepath.Join(filepath.Dir(sock), "mine.sock")
	y, err := Listen(mine, 0o600)
	must(t, err)
	theirs := filepath.Join(filepath.Dir(sock), "theirs.sock")
	x, err := Listen(theirs, 0o600)
	must(t, err)
	defer x.Close()
	must(t, os.Rename(theirs, mine)) // replaces y's socket with x's
	must(t, y.Close())
	if st, err := os.Lstat(mine); err != nil || !sameFile(st, x.id) {
		t.Fatalf("Close removed a socket that was not its own: %v", err)
	}
}

// A socket whose directory was removed gets the directory back, with its
// mode.
func TestListenerRemovedDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.Chmod(dir, 0o751))
	sock := filepath.Join(dir, "s.sock")
	ln, lb, log := serveListener(t, sock, 0o666)
	must(t, os.RemoveAll(dir))
	if err := ln.Ensure(log); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dir); m != 0o751 {
		t.Errorf("directory made again with mode %#o, want 0751", m)
	}
	if err := answers(sock); err != nil {
		t.Fatal(err)
	}
	if w := lb.warnings(); len(w) != 1 || !strings.Contains(w[0], "removed with its directory") {
		t.Errorf("warnings %q", w)
	}
}

// Watch notices a removed socket by itself, within a few of its periods.
func TestListenerWatch(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, lb, log := serveListener(t, sock, 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ln.Watch(ctx, 20*time.Millisecond, log); close(done) }()
	defer func() { cancel(); <-done }()
	must(t, os.Remove(sock))
	deadline := time.Now().Add(5 * time.Second)
	for answers(sock) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("socket not back 5s after its removal; log:\n%s", lb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if w := lb.warnings(); len(w) != 1 {
		t.Errorf("warnings %q", w)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A socket's new directory lets those the socket is open to reach it,
// whatever the umask; an existing directory is left as it is.
func TestListenDirectoryMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	base := t.TempDir()
	for _, c := range []struct {
		perm, want os.FileMode
	}{{0o666, 0o755}, {0o660, 0o750}, {0o600, 0o700}} {
		sock := filepath.Join(base, c.perm.String(), "run", "sifd.sock")
		ln, err := Listen(sock, c.perm)
		must(t, err)
		if got := mode(t, filepath.Dir(sock)); got != c.want {
			t.Errorf("socket %v: its new directory has mode %v, want %v", c.perm, got, c.want)
		}
		ln.Close()
	}
	kept := filepath.Join(base, "kept")
	must(t, os.Mkdir(kept, 0o700))
	must(t, os.Chmod(kept, 0o711))
	ln, err := Listen(filepath.Join(kept, "sifd.sock"), 0o666)
	must(t, err)
	defer ln.Close()
	if got := mode(t, kept); got != 0o711 {
		t.Errorf("an existing directory's mode was changed to %v, want it left at 0711", got)
	}
}
