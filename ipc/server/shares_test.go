package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/peer"
)

// asUsers makes the server take a connection's uid from the name its
// client bound ("@sif-test-uid-N-K"), so one test process can call as
// several users; the real credentials are those of the test's user.
func asUsers(t *testing.T) {
	t.Helper()
	old := peerCred
	peerCred = func(c net.Conn) (peer.Cred, error) {
		var uid, k uint32
		if _, err := fmt.Sscanf(c.RemoteAddr().String(), "@sif-test-uid-%d-%d", &uid, &k); err != nil {
			return old(c)
		}
		return peer.Cred{UID: uid, GID: uid}, nil
	}
	t.Cleanup(func() { peerCred = old })
}

var dialSeq atomic.Uint32

// dialAs opens a connection to sock that the server takes for uid's.
func dialAs(t *testing.T, sock string, uid uint32) net.Conn {
	t.Helper()
	la := &net.UnixAddr{Name: fmt.Sprintf("@sif-test-uid-%d-%d-%d", uid, dialSeq.Add(1), time.Now().UnixNano()), Net: "unix"}
	c, err := net.DialUnix("unix", la, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

// rawDoAs is rawDo as uid.
func rawDoAs(t *testing.T, sock string, uid uint32, request string) rawResponse {
	t.Helper()
	start := time.Now()
	c := dialAs(t, sock, uid)
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		t.Error(err)
		return rawResponse{}
	}
	return readRaw(t, c, start)
}

// TestUserShareLeavesSlots: a user whose requests hold their share of the
// slots waits in a queue of their own and is then refused, naming their
// share, while another user's request is served at once.
func TestUserShareLeavesSlots(t *testing.T) {
	asUsers(t)
	bb := newBlockingBackend()
	const wait = 400 * time.Millisecond
	sock, _ := serveWith(t, bb, Options{MaxConcurrent: 4, MaxPerUser: 2, QueueWait: wait})
	body := similarBody(t, 5)
	var held sync.WaitGroup
	answers := make(chan rawResponse, 10)
	for range 5 {
		held.Go(func() { answers <- rawDoAs(t, sock, 1000, post("/v1/similar", body)) })
	}
	<-bb.entered
	<-bb.entered
	// Two of uid 1000's requests are in; the others wait for uid 1000's
	// slots, not the server's: uid 1001 gets in at once.
	other := make(chan rawResponse, 1)
	start := time.Now()
	go func() { other <- rawDoAs(t, sock, 1001, post("/v1/similar", body)) }()
	select {
	case <-bb.entered:
		within(t, "another user's request while one user holds their share", wait/2, time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("another user's request was not served while one user held their share")
	}
	select {
	case <-bb.entered:
		t.Fatal("a third request of uid 1000 was served beyond its share of 2")
	case <-time.After(wait + 200*time.Millisecond):
	}
	for range 3 {
		r := <-answers
		if r.status != http.StatusServiceUnavailable || r.err == nil || r.err.Code != ipc.CodeBusy ||
			!strings.Contains(r.err.Message, "2 requests of yours (uid 1000) in progress") {
			t.Errorf("uid 1000 beyond its share: %d %+v, want 503 busy naming its share", r.status, r.err)
		}
	}
	close(bb.release)
	held.Wait()
	for range 2 {
		if r := <-answers; r.status != http.StatusOK {
			t.Errorf("a request within its share: %d %+v", r.status, r.err)
		}
	}
	if r := <-other; r.status != http.StatusOK {
		t.Errorf("uid 1001's request: %d %+v", r.status, r.err)
	}
}

// TestUserConnShare: a user's new connection beyond their share closes
// their own idlest one, never another user's; with none idle, its request
// waits for room, and is answered busy and closed when none comes.
func TestUserConnShare(t *testing.T) {
	asUsers(t)
	bb := newBlockingBackend()
	sock, _ := serveWith(t, bb, Options{MaxConns: 8, MaxConnsPerUser: 2, MaxConcurrent: 8, MaxPerUser: 8})
	status := "GET /v1/status HTTP/1.1\r\nHost: sifd\r\n\r\n"
	keep := func(uid uint32) net.Conn {
		c := dialAs(t, sock, uid)
		if _, err := io.WriteString(c, status); err != nil {
			t.Fatal(err)
		}
		if r := readRaw(t, c, time.Now()); r.status != http.StatusOK {
			t.Fatalf("status as uid %d: %d %+v", uid, r.status, r.err)
		}
		return c // idle now, kept open
	}
	other := keep(1001)
	defer other.Close()
	mine1, mine2 := keep(1000), keep(1000)
	defer mine1.Close()
	defer mine2.Close()
	// A third connection of uid 1000 closes one of uid 1000's idle ones
	// (the idlest, mine1, unless the server saw mine2 go idle first).
	third := keep(1000)
	defer third.Close()
	closed := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		var b [1]byte
		_, err := c.Read(b[:])
		return err != nil && !isTimeout(err)
	}
	if closed(other) {
		t.Errorf("uid 1001's connection was closed for uid 1000's")
	}
	survivor := mine2
	switch c1, c2 := closed(mine1), closed(mine2); {
	case c1 == c2:
		t.Fatalf("uid 1000's first connections: closed %v and %v, want one of them closed", c1, c2)
	case c2:
		survivor = mine1
	}
	// With both of uid 1000's connections busy, a third is answered busy.
	body := similarBody(t, 5)
	for _, c := range []net.Conn{survivor, third} {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(c, post("/v1/similar", body))
	}
	<-bb.entered
	<-bb.entered
	r := rawDoAs(t, sock, 1000, status)
	if r.status != http.StatusServiceUnavailable || r.err == nil || !strings.Contains(r.err.Message, "2 connections of yours (uid 1000)") || !r.close {
		t.Errorf("a connection beyond uid 1000's share: %d %+v, closed %v; want 503 busy naming its share, closed", r.status, r.err, r.close)
	}
	// Another user is still served.
	if r := rawDoAs(t, sock, 1002, status); r.status != http.StatusOK {
		t.Errorf("uid 1002 with uid 1000 at its share: %d %+v", r.status, r.err)
	}
	// A connection beyond the share waits for room: once uid 1000's
	// requests end, it is served.
	waited := make(chan rawResponse, 1)
	go func() { waited <- rawDoAs(t, sock, 1000, status) }()
	time.Sleep(100 * time.Millisecond)
	close(bb.release)
	if r := <-waited; r.status != http.StatusOK {
		t.Errorf("a connection beyond uid 1000's share, its requests ending meanwhile: %d %+v, want 200", r.status, r.err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// stuckBackend's Similar works until its context is done.
type stuckBackend struct{ *fakeController }

func (b stuckBackend) Similar(ctx context.Context, _ index.Query, _ index.QueryOptions) (*index.Result, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRequestTimeout: a query still at work after RequestTimeout is
// stopped and answered 504 timeout, and its slot is free again.
func TestRequestTimeout(t *testing.T) {
	const limit = 300 * time.Millisecond
	sock, c := serveWith(t, stuckBackend{newFakeController()}, Options{RequestTimeout: limit, MaxConcurrent: 1})
	body := similarBody(t, 5)
	r := rawDo(t, sock, post("/v1/similar", body))
	if r.status != http.StatusGatewayTimeout || r.err == nil || r.err.Code != ipc.CodeTimeout || !strings.Contains(r.err.Message, "more than 300ms") {
		t.Errorf("a query past its time: %d %+v, want 504 timeout naming the limit", r.status, r.err)
	}
	if r.took < limit || r.took > 10*limit {
		t.Errorf("answered after %v, want about %v", r.took, limit)
	}
	if _, err := c.Status(context.Background()); err != nil {
		t.Errorf("status after a query timed out: %v", err)
	}
}

// slowBackend's Similar takes a few milliseconds, as a query does.
type slowBackend struct{ *fakeController }

func (b slowBackend) Similar(context.Context, index.Query, index.QueryOptions) (*index.Result, error) {
	time.Sleep(3 * time.Millisecond)
	return &index.Result{}, nil
}

// TestManyClientsOfOneUser: many clients of one user, each on a
// connection of its own and more of them than the user's share of
// connections, all pausing between requests, are all answered: the
// user's connections are shared out in turn (an idle one closed for a new
// one, whose client sends again), never closed in a storm before they
// could send, and a request beyond the share waits for room rather than
// being refused.
func TestManyClientsOfOneUser(t *testing.T) {
	const clients, requests = 24, 30
	sock, _ := serveWith(t, slowBackend{newFakeController()}, Options{MaxConns: 64, MaxConnsPerUser: 4, MaxConcurrent: 16, MaxPerUser: 16})
	sk := &fingerprint.Sketch{Params: fingerprint.DefaultParams(), Features: []fingerprint.Feature{{Hash: 1, Count: 1}}}
	req := ipc.NewSimilarRequest("", sk)
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first atomic.Value
	for i := range clients {
		wg.Go(func() {
			c := ipc.NewClient(sock)
			for k := range requests {
				var err error
				if k%5 == 0 {
					_, err = c.Status(context.Background())
				} else {
					_, err = c.Similar(context.Background(), req)
				}
				if err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
				time.Sleep(time.Duration((i*7+k*3)%5) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d requests of %d clients of one user, 4 connections to share, failed; the first: %v", n, clients*requests, clients, first.Load())
	}
}
