package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// fakeController is a fakeBackend that is also a Controller. It keeps roots in
// a slice, records what it was asked, and fails with err when it is set.
type fakeController struct {
	fakeBackend

	mu       sync.Mutex
	roots    []string
	err      error                                                    // returned by AddRoot, RemoveRoot, Rescan and Wait
	rescans  []string                                                 // paths Rescan was called with
	queued   []string                                                 // what Rescan returns
	timeouts []time.Duration                                          // timeouts Wait was called with
	wait     func(context.Context, time.Duration) (WaitResult, error) // Wait's behaviour; nil answers at once
}

var _ Controller = (*fakeController)(nil)

func (f *fakeController) Status() ipc.Status {
	return ipc.Status{State: "ready", DB: "/var/lib/sifd/index", Roots: f.Roots(), Counters: ipc.Counters{Indexed: 7}}
}

func (f *fakeController) Roots() []ipc.RootStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ipc.RootStatus
	for _, r := range f.roots {
		out = append(out, ipc.RootStatus{Path: r, State: ipc.RootWatching, Source: "added"})
	}
	return out
}

func (f *fakeController) AddRoot(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.roots = append(f.roots, path)
	return nil
}

func (f *fakeController) RemoveRoot(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	i := slices.Index(f.roots, path)
	if i < 0 {
		return fmt.Errorf("%w: %s is not a root", ErrBadRoot, path)
	}
	f.roots = slices.Delete(f.roots, i, i+1)
	return nil
}

func (f *fakeController) Rescan(path string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rescans = append(f.rescans, path)
	return f.queued, f.err
}

func (f *fakeController) Wait(ctx context.Context, timeout time.Duration) (WaitResult, error) {
	f.mu.Lock()
	f.timeouts = append(f.timeouts, timeout)
	err, wait := f.err, f.wait
	f.mu.Unlock()
	if err != nil {
		return WaitResult{}, err
	}
	if wait != nil {
		return wait(ctx, timeout)
	}
	return WaitResult{Cookies: 2}, nil
}

// set changes the fake under its lock.
func (f *fakeController) set(fn func(f *fakeController)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func newFakeController() *fakeController {
	return &fakeController{fakeBackend: fakeBackend{params: fingerprint.DefaultParams(), result: &index.Result{}}}
}

// send makes one request straight to a Server, without a socket, and
// returns the status and the decoded error, if any.
func send(t *testing.T, b any, method, path, body string) (int, *ipc.Error, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	New(backendOf(b), Options{}).ServeHTTP(rec, req)
	var eb errorBody
	json.Unmarshal(rec.Body.Bytes(), &eb)
	return rec.Code, eb.Error, rec.Body.String()
}

// TestControlRoutesNeedController: a Backend without a Controller answers
// the status and control routes 404 not_found, and queries as usual.
func TestControlRoutesNeedController(t *testing.T) {
	fb := &fakeBackend{params: fingerprint.DefaultParams()}
	if code, _, body := send(t, fb, "GET", "/v1/info", ""); code != http.StatusOK {
		t.Errorf("info without a Controller: %d %s", code, body)
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/status", ""},
		{"GET", "/v1/roots", ""},
		{"POST", "/v1/roots", `{"action":"add","path":"/a"}`},
		{"POST", "/v1/rescan", `{}`},
		{"POST", "/v1/wait", `{}`},
	} {
		code, e, body := send(t, fb, r.method, r.path, r.body)
		if code != http.StatusNotFound || e == nil || e.Code != ipc.CodeNotFound || !strings.Contains(e.Message, "not supported by this daemon") {
			t.Errorf("%s %s without a Controller: %d %s", r.method, r.path, code, body)
		}
	}
	// Through the client, the error is an *Error.
	c := serve(t, fb)
	var e *ipc.Error
	if _, err := c.Roots(context.Background()); !errors.As(err, &e) || e.Code != ipc.CodeNotFound {
		t.Errorf("Roots without a Controller: %v", err)
	}
}

func TestRootsAddRemove(t *testing.T) {
	fc := newFakeController()
	c := serve(t, fc)
	ctx := context.Background()

	// No roots is an empty list, not null.
	if _, _, body := send(t, fc, "GET", "/v1/roots", ""); !strings.Contains(body, `"roots":[]`) {
		t.Errorf("no roots: %s", body)
	}
	resp, err := c.AddRoot(ctx, "/srv/a/")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Roots) != 1 || resp.Roots[0].Path != "/srv/a" {
		t.Errorf("after adding /srv/a/: %+v (want the path cleaned)", resp.Roots)
	}
	// A path that is not UTF-8 reaches the backend byte for byte.
	odd := "/srv/b\xff"
	if _, err := c.AddRoot(ctx, odd); err != nil {
		t.Fatal(err)
	}
	fc.set(func(f *fakeController) {
		if !slices.Equal(f.roots, []string{"/srv/a", odd}) {
			t.Errorf("backend roots %q", f.roots)
		}
	})
	resp, err = c.RemoveRoot(ctx, "/srv/a")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Roots) != 1 {
		t.Errorf("after removing /srv/a: %+v", resp.Roots)
	}
	got, err := c.Roots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Roots) != 1 || got.Roots[0].State != ipc.RootWatching || got.Roots[0].Source != "added" {
		t.Errorf("roots %+v", got.Roots)
	}

	// Errors from the backend.
	var e *ipc.Error
	if _, err := c.RemoveRoot(ctx, "/nowhere"); !errors.As(err, &e) || e.Code != ipc.CodeBadRequest || !strings.Contains(e.Message, "/nowhere is not a root") {
		t.Errorf("removing a path that is not a root: %v", err)
	}
	fc.set(func(f *fakeController) { f.err = errors.New("disk on fire") })
	if _, err := c.AddRoot(ctx, "/srv/c"); !errors.As(err, &e) || e.Code != ipc.CodeInternal {
		t.Errorf("backend failure: %v", err)
	}
	fc.set(func(f *fakeController) { f.err = index.ErrClosed })
	if _, err := c.AddRoot(ctx, "/srv/c"); !errors.As(err, &e) || e.Code != ipc.CodeUnavailable {
		t.Errorf("closed index: %v", err)
	}
}

// TestBadRequests sends malformed bodies to every new route.
func TestBadRequests(t *testing.T) {
	fc := newFakeController()
	fc.set(func(f *fakeController) { f.roots = []string{"/srv/a"} })
	cases := []struct {
		name, path, body string
		msg              string
	}{
		{"roots: empty body", "/v1/roots", "", "empty; want a JSON object"},
		{"roots: not JSON", "/v1/roots", "{", "decoding request body"},
		{"roots: unknown field", "/v1/roots", `{"action":"add","path":"/x","recursive":true}`, `unknown field "recursive"`},
		{"roots: no action", "/v1/roots", `{"path":"/x"}`, `action: required`},
		{"roots: bad action", "/v1/roots", `{"action":"move","path":"/x"}`, `action "move": want "add" or "remove"`},
		{"roots: no path", "/v1/roots", `{"action":"add"}`, "path: required"},
		{"roots: relative path", "/v1/roots", `{"action":"add","path":"srv/x"}`, `path "srv/x": must be absolute`},
		{"roots: bad path_raw", "/v1/roots", `{"action":"add","path":"/x","path_raw":"%%%"}`, "path_raw"},
		{"roots: bad root", "/v1/roots", `{"action":"remove","path":"/srv/b"}`, "/srv/b is not a root"},
		{"rescan: empty body", "/v1/rescan", "", "empty; want a JSON object"},
		{"rescan: unknown field", "/v1/rescan", `{"paths":["/x"]}`, `unknown field "paths"`},
		{"rescan: relative path", "/v1/rescan", `{"path":"x"}`, `path "x": must be absolute`},
		{"rescan: bad path_raw", "/v1/rescan", `{"path":"/x","path_raw":"!"}`, "path_raw"},
		{"wait: empty body", "/v1/wait", "", "empty; want a JSON object"},
		{"wait: unknown field", "/v1/wait", `{"timeout":5}`, `unknown field "timeout"`},
		{"wait: wrong type", "/v1/wait", `{"timeout_ms":"5s"}`, "timeout_ms"},
		{"wait: negative", "/v1/wait", `{"timeout_ms":-1}`, "timeout_ms -1: must not be negative"},
	}
	for _, tc := range cases {
		code, e, body := send(t, fc, "POST", tc.path, tc.body)
		if code != http.StatusBadRequest || e == nil || e.Code != ipc.CodeBadRequest || !strings.Contains(e.Message, tc.msg) || strings.HasPrefix(e.Message, "bad root") {
			t.Errorf("%s: %d %s, want 400 bad_request mentioning %q", tc.name, code, strings.TrimSpace(body), tc.msg)
		}
	}
	fc.set(func(f *fakeController) {
		if !slices.Equal(f.roots, []string{"/srv/a"}) || len(f.rescans) != 0 || len(f.timeouts) != 0 {
			t.Errorf("a bad request reached the backend: roots %q, rescans %q, waits %v", f.roots, f.rescans, f.timeouts)
		}
	})
	// Rescan errors that the backend blames on the path.
	fc.set(func(f *fakeController) { f.err = fmt.Errorf("%w: /elsewhere is under no root", ErrBadRoot) })
	if code, e, _ := send(t, fc, "POST", "/v1/rescan", `{"path":"/elsewhere"}`); code != 400 || e == nil || !strings.Contains(e.Message, "under no root") {
		t.Errorf("rescan outside the roots: %d %+v", code, e)
	}
}

func TestRescan(t *testing.T) {
	fc := newFakeController()
	c := serve(t, fc)
	ctx := context.Background()
	// Nothing queued is an empty list, not null.
	if _, _, body := send(t, fc, "POST", "/v1/rescan", `{}`); !strings.Contains(body, `"queued":[]`) {
		t.Errorf("nothing queued: %s", body)
	}
	fc.set(func(f *fakeController) { f.queued = []string{"/srv/a", "/srv/b\xfe"} })
	resp, err := c.Rescan(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Queued) != 2 || resp.Queued[1].Exact() != "/srv/b\xfe" || resp.Queued[1].PathRaw == "" {
		t.Errorf("queued %+v", resp.Queued)
	}
	if _, err := c.Rescan(ctx, "/srv/b\xfe/sub/"); err != nil {
		t.Fatal(err)
	}
	fc.set(func(f *fakeController) {
		if !slices.Equal(f.rescans, []string{"", "", "/srv/b\xfe/sub"}) {
			t.Errorf("rescans %q", f.rescans)
		}
	})
	fc.set(func(f *fakeController) { f.err = errors.New("disk on fire") })
	var e *ipc.Error
	if _, err := c.Rescan(ctx, ""); !errors.As(err, &e) || e.Code != ipc.CodeInternal {
		t.Errorf("backend failure: %v", err)
	}
}

func TestWaitTimeouts(t *testing.T) {
	fc := newFakeController()
	c := serve(t, fc)
	ctx := context.Background()
	for _, tc := range []struct{ give, want time.Duration }{
		{0, ipc.DefaultWait},
		{1500 * time.Millisecond, 1500 * time.Millisecond},
		{time.Microsecond, time.Millisecond}, // rounded up, not down to the default
		{2 * time.Hour, ipc.MaxWait},
		{1<<63 - 1, ipc.MaxWait},
	} {
		resp, err := c.Wait(ctx, tc.give)
		if err != nil {
			t.Fatalf("Wait(%s): %v", tc.give, err)
		}
		if resp.Cookies != 2 || resp.ElapsedNs <= 0 {
			t.Errorf("Wait(%s): %+v, want the backend's answer with the elapsed time filled in", tc.give, resp)
		}
		fc.set(func(f *fakeController) {
			if got := f.timeouts[len(f.timeouts)-1]; got != tc.want {
				t.Errorf("Wait(%s): the backend waited up to %s, want %s", tc.give, got, tc.want)
			}
		})
	}
	// The server caps what the client did not.
	send(t, fc, "POST", "/v1/wait", `{"timeout_ms":9223372036854775807}`)
	fc.set(func(f *fakeController) {
		if got := f.timeouts[len(f.timeouts)-1]; got != ipc.MaxWait {
			t.Errorf("timeout_ms MaxInt64: the backend waited up to %s, want %s", got, ipc.MaxWait)
		}
	})
	// A negative timeout is refused before it is sent.
	n := len(fc.timeouts)
	if _, err := c.Wait(ctx, -time.Second); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("Wait(-1s): %v", err)
	}
	fc.set(func(f *fakeController) {
		if len(f.timeouts) != n {
			t.Error("Wait(-1s) reached the backend")
		}
	})
	// Rescanned roots come back with their exact paths.
	fc.set(func(f *fakeController) {
		f.wait = func(context.Context, time.Duration) (WaitResult, error) {
			time.Sleep(time.Millisecond)
			return WaitResult{Cookies: 1, Rescanned: []string{"/nfs\xff"}}, nil
		}
	})
	resp, err := c.Wait(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Cookies != 1 || resp.ElapsedNs < int64(time.Millisecond) || len(resp.Rescanned) != 1 || resp.Rescanned[0].Exact() != "/nfs\xff" {
		t.Errorf("wait response %+v", resp)
	}
}

// blockingWait waits like a daemon that never catches up: until the
// timeout, or until ctx is done. It closes started when it begins and sends
// the context's error on ended.
func blockingWait(started chan<- struct{}, ended chan<- error) func(context.Context, time.Duration) (WaitResult, error) {
	return func(ctx context.Context, timeout time.Duration) (WaitResult, error) {
		if started != nil {
			close(started)
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		<-ctx.Done()
		if ended != nil {
			ended <- context.Cause(ctx)
		}
		return WaitResult{}, fmt.Errorf("waiting for cookies: %w", ctx.Err())
	}
}

func TestWaitTimesOut(t *testing.T) {
	fc := newFakeController()
	fc.set(func(f *fakeController) { f.wait = blockingWait(nil, nil) })
	c := serve(t, fc)
	_, err := c.Wait(context.Background(), 50*time.Millisecond)
	var e *ipc.Error
	if !errors.As(err, &e) || e.Code != ipc.CodeTimeout || !strings.Contains(e.Message, "after waiting 50ms") {
		t.Errorf("wait that times out: %v, want code timeout saying it waited 50ms", err)
	}
	if code, _, body := send(t, fc, "POST", "/v1/wait", `{"timeout_ms":10}`); code != http.StatusGatewayTimeout {
		t.Errorf("wait that times out: HTTP %d %s, want 504", code, body)
	}
}

func TestWaitClientHangsUp(t *testing.T) {
	fc := newFakeController()
	started, ended := make(chan struct{}), make(chan error, 1)
	fc.set(func(f *fakeController) { f.wait = blockingWait(started, ended) })
	c := serve(t, fc)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Wait(ctx, time.Hour)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client: %v, want context.Canceled", err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the backend's wait ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend still waits after the client hung up")
	}
}

func TestWaitDaemonStops(t *testing.T) {
	fc := newFakeController()
	started := make(chan struct{})
	fc.set(func(f *fakeController) { f.wait = blockingWait(started, nil) })
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(backendOf(fc), Options{}).Serve(ctx, ln) }()
	errc := make(chan error, 1)
	go func() {
		_, err := ipc.NewClient(sock).Wait(context.Background(), time.Hour)
		errc <- err
	}()
	<-started
	stop()
	var e *ipc.Error
	if err := <-errc; !errors.As(err, &e) || e.Code != ipc.CodeUnavailable {
		t.Errorf("wait while the daemon stops: %v, want code unavailable", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
