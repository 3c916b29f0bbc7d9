package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// endlessBackend answers every similar and basis with candidates whose
// files never end, so that a check reading one to its end never returns;
// its groups compute until their context is done or they are released.
type endlessBackend struct {
	*fakeController
	reading chan string // a candidate's read began (its path)
	closed  chan string // a candidate was closed
	groups  chan groupsCall
	// A dupes or a dirs/totals, named, blocks until its context is done:
	// blocked tells it began, unblocked that it ended.
	blocked, unblocked chan string
}

// groupsCall is one computation of groups by an endlessBackend.
type groupsCall struct {
	threshold float64
	ctx       context.Context
	release   chan struct{}
}

func newEndlessBackend() *endlessBackend {
	b := &endlessBackend{fakeController: newFakeController(),
		reading: make(chan string, 100), closed: make(chan string, 100), groups: make(chan groupsCall, 10),
		blocked: make(chan string, 10), unblocked: make(chan string, 10)}
	for i := range 4 {
		m := match(fmt.Sprintf("/c/%d", i), ipc.MaxCheckSize, 0.9)
		b.result.Matches = append(b.result.Matches, m)
	}
	return b
}

func (b *endlessBackend) EachGroup(ctx context.Context, o index.GroupOptions, _ func(index.Group) error) error {
	c := groupsCall{o.Threshold, ctx, make(chan struct{})}
	b.groups <- c
	select {
	case <-ctx.Done():
		return fmt.Errorf("groups: %w", ctx.Err())
	case <-c.release:
		return nil
	}
}

func (b *endlessBackend) Dupes(ctx context.Context, _ string) ([]index.DupeSet, error) {
	return nil, b.block(ctx, "dupes")
}

func (b *endlessBackend) DirTotals(ctx context.Context, _ []string, _ *index.DirTotalsOptions) ([]index.DirTotal, error) {
	return nil, b.block(ctx, "dirs")
}

func (b *endlessBackend) block(ctx context.Context, what string) error {
	b.blocked <- what
	<-ctx.Done()
	b.unblocked <- what
	return ctx.Err()
}

func (b *endlessBackend) OpenIndexed(path string) (io.ReadCloser, index.FileMeta, error) {
	return &endlessFile{b: b, path: path}, index.FileMeta{Path: path, Size: ipc.MaxCheckSize}, nil
}

// endless is what an endlessFile yields, over and over.
var endless = func() []byte {
	r := rand.New(rand.NewPCG(19, 19))
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

type endlessFile struct {
	b       *endlessBackend
	path    string
	started bool
}

func (f *endlessFile) Read(p []byte) (int, error) {
	if !f.started {
		f.started = true
		f.b.reading <- f.path
	}
	return copy(p, endless), nil
}

func (f *endlessFile) Close() error {
	f.b.closed <- f.path
	return nil
}

// serveServer is serveWith, returning the Server too, and a function that
// stops it.
func serveServer(t *testing.T, b any, opts Options) (srv *Server, sock string, c *ipc.Client, stop func()) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	srv = New(backendOf(b), opts)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv, sock, ipc.NewClientWith(sock, ipc.ClientOptions{BusyTries: 1}), stop
}

// sendAndHold sends request on a new connection, which it returns
// without reading the answer.
func sendAndHold(t *testing.T, sock, request string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHangUpStopsCheck sends a similar and a basis whose check reads
// candidates that never end, and hangs up once the reading has begun:
// the request stops reading and frees its slot within a second, which
// the next request, allowed to wait a second for the only slot, shows.
func TestHangUpStopsCheck(t *testing.T) {
	content := endless[:20000]
	sk := &fingerprint.Sketch{Params: fingerprint.DefaultParams(), Summary: fingerprint.Summary{Size: int64(len(content))},
		Features: []fingerprint.Feature{{Hash: 1, Count: 1}}}
	similar := ipc.NewSimilarRequest("", sk)
	similar.Content = content
	basis := ipc.NewBasisRequest("", sk, &ipc.QueryData{Content: content})
	for _, tc := range []struct {
		path string
		req  any
	}{{"/v1/similar", similar}, {"/v1/basis", basis}} {
		name := strings.TrimPrefix(tc.path, "/v1/")
		t.Run(name, func(t *testing.T) {
			b := newEndlessBackend()
			_, sock, c, _ := serveServer(t, b, Options{MaxConcurrent: 1, QueueWait: time.Second})
			body, err := json.Marshal(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			conn := sendAndHold(t, sock, post(tc.path, string(body)))
			path := <-b.reading
			conn.Close()
			start := time.Now()
			if _, err := c.Info(context.Background()); err != nil {
				t.Fatalf("info after the client of a check hung up: %v (the check holds the only slot)", err)
			}
			within(t, "the slot's release after a hang-up", time.Second, time.Since(start))
			select {
			case closed := <-b.closed:
				if closed != path {
					t.Errorf("closed %s, reading %s", closed, path)
				}
			case <-time.After(time.Second):
				t.Errorf("%s not closed a second after the client hung up", path)
			}
			select {
			case p := <-b.reading:
				t.Errorf("%s read after the client hung up", p)
			default:
			}
		})
	}
}

// TestHangUpStopsDupesAndDirs: a dupes (a GET) and a dirs/totals (a POST)
// whose client hangs up see their context done.
func TestHangUpStopsDupesAndDirs(t *testing.T) {
	b := newEndlessBackend()
	_, sock, _, _ := serveServer(t, b, Options{})
	for what, request := range map[string]string{
		"dupes": "GET /v1/dupes HTTP/1.1\r\nHost: sifd\r\n\r\n",
		"dirs":  post("/v1/dirs/totals", `{"dirs": [{"path": "/srv"}]}`),
	} {
		conn := sendAndHold(t, sock, request)
		if got := <-b.blocked; got != what {
			t.Fatalf("sent a %s, and a %s began", what, got)
		}
		conn.Close()
		select {
		case got := <-b.unblocked:
			if got != what {
				t.Errorf("%s hung up, and a %s ended", what, got)
			}
		case <-time.After(time.Second):
			t.Errorf("%s: the work goes on a second after its client hung up", what)
		}
	}
}

// TestHangUpStopsWholeIndex hangs up a groups request while it computes,
// and one waiting to share the answer of another: the computation's
// context is done within a second, and the whole-index slot is free for
// the next request; an answer shared by several clients is computed for as
// long as one of them is there, whichever left, and not at all when
// every one left while it waited for its slot.
func TestHangUpStopsWholeIndex(t *testing.T) {
	b := newEndlessBackend()
	srv, sock, _, _ := serveServer(t, b, Options{MaxWhole: 1, MaxWholeQueued: 4, WholeWait: 5 * time.Second})
	get := func(thr int) string {
		return fmt.Sprintf("GET /v1/groups?threshold=%d HTTP/1.1\r\nHost: sifd\r\n\r\n", thr)
	}
	// next returns the next groups computation, which must be for
	// threshold thr.
	next := func(thr int) groupsCall {
		t.Helper()
		select {
		case c := <-b.groups:
			if c.threshold != float64(thr)/100 {
				t.Fatalf("groups computed with threshold %v, want %v", c.threshold, float64(thr)/100)
			}
			return c
		case <-time.After(5 * time.Second):
			t.Fatalf("groups with threshold %d%% not computed within 5 s", thr)
		}
		panic("unreachable")
	}
	canceledWithin := func(call groupsCall, what string) {
		t.Helper()
		select {
		case <-call.ctx.Done():
		case <-time.After(time.Second):
			t.Fatalf("%s: the groups computation goes on a second after its clients hung up", what)
		}
	}
	// waitLeft waits until the flight pending for threshold thr has left
	// clients (-1: none is pending).
	waitLeft := func(thr, left int) {
		t.Helper()
		prefix := fmt.Sprintf("/v1/groups?threshold=%d|", thr)
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := -1
			srv.lim.flights.mu.Lock()
			for key, f := range srv.lim.flights.pending {
				if strings.HasPrefix(key, prefix) {
					n = f.left
				}
			}
			srv.lim.flights.mu.Unlock()
			if n == left {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("flight for threshold %d%%: %d clients left, want %d", thr, n, left)
			}
			time.Sleep(time.Millisecond)
		}
	}
	answered := func(conn net.Conn, what string) {
		t.Helper()
		if r := readRaw(t, conn, time.Now()); r.status != 200 {
			t.Errorf("%s: %d %+v", what, r.status, r.err)
		}
	}

	// One client, hanging up while its groups computes: the next request
	// gets the slot at once.
	conn := sendAndHold(t, sock, get(30))
	call := next(30)
	conn.Close()
	canceledWithin(call, "one client")
	start := time.Now()
	conn = sendAndHold(t, sock, get(31))
	call = next(31)
	within(t, "the whole-index slot's release after a hang-up", time.Second, time.Since(start))
	close(call.release)
	answered(conn, "groups after the client of another hung up")

	// Two clients of one answer: the first, whose request computes it,
	// leaves while they wait for the slot; the second is answered.
	holder := sendAndHold(t, sock, get(20))
	held := next(20)
	first := sendAndHold(t, sock, get(40))
	second := sendAndHold(t, sock, get(40))
	waitLeft(40, 2)
	first.Close()
	waitLeft(40, 1)
	holder.Close()
	canceledWithin(held, "the holder")
	shared := next(40)
	if err := shared.ctx.Err(); err != nil {
		t.Fatalf("the shared answer is computed with its context done (%v), while a client is still there", err)
	}
	close(shared.release)
	answered(second, "the client left of two")

	// Both clients leave while it computes.
	holder = sendAndHold(t, sock, get(20))
	held = next(20)
	one, two := sendAndHold(t, sock, get(50)), sendAndHold(t, sock, get(50))
	waitLeft(50, 2)
	close(held.release)
	answered(holder, "the holder")
	call = next(50)
	one.Close()
	two.Close()
	canceledWithin(call, "two clients")

	// Both leave while they wait for the slot: it is never computed.
	holder = sendAndHold(t, sock, get(20))
	held = next(20)
	one, two = sendAndHold(t, sock, get(60)), sendAndHold(t, sock, get(60))
	waitLeft(60, 2)
	one.Close()
	two.Close()
	waitLeft(60, -1)
	close(held.release)
	answered(holder, "the holder")
	conn = sendAndHold(t, sock, get(70))
	close(next(70).release) // not 60
	answered(conn, "groups after a flight every client left")
}

// TestStopAnswersUnavailable stops the server while a similar checks a
// candidate that never ends, a groups computes, and two more wait for the
// whole-index slot to share an answer: each is answered 503 unavailable
// at once, rather than left to run.
func TestStopAnswersUnavailable(t *testing.T) {
	b := newEndlessBackend()
	srv, sock, _, stop := serveServer(t, b, Options{MaxWhole: 1, MaxWholeQueued: 4, WholeWait: time.Minute})
	content := endless[:20000]
	req := ipc.NewSimilarRequest("", &fingerprint.Sketch{Params: fingerprint.DefaultParams(),
		Summary: fingerprint.Summary{Size: int64(len(content))}, Features: []fingerprint.Feature{{Hash: 1, Count: 1}}})
	req.Content = content
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	similar := sendAndHold(t, sock, post("/v1/similar", string(body)))
	<-b.reading
	computing := sendAndHold(t, sock, "GET /v1/groups HTTP/1.1\r\nHost: sifd\r\n\r\n")
	<-b.groups
	waiting := []net.Conn{
		sendAndHold(t, sock, "GET /v1/groups?threshold=50 HTTP/1.1\r\nHost: sifd\r\n\r\n"),
		sendAndHold(t, sock, "GET /v1/groups?threshold=50 HTTP/1.1\r\nHost: sifd\r\n\r\n"),
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		srv.lim.flights.mu.Lock()
		n := 0
		for _, f := range srv.lim.flights.pending {
			n += f.left
		}
		srv.lim.flights.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d clients waiting for a groups answer, want 2", n)
		}
	}
	start := time.Now()
	stop()
	within(t, "stopping with requests in progress", 2*time.Second, time.Since(start))
	for what, conn := range map[string]net.Conn{"similar": similar, "groups computing": computing, "groups waiting": waiting[0], "groups joined": waiting[1]} {
		if r := readRaw(t, conn, start); r.status != 503 || r.err == nil || r.err.Code != ipc.CodeUnavailable {
			t.Errorf("%s while the daemon stops: %d %+v, want 503 unavailable", what, r.status, r.err)
		}
	}
	if closed := <-b.closed; closed == "" {
		t.Error("the candidate was not closed")
	}
}
