package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// serveWith serves b with opts on a temporary socket and returns the socket
// and a client that does not retry when the daemon is busy.
func serveWith(t *testing.T, b any, opts Options) (string, *ipc.Client) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- New(backendOf(b), opts).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return sock, ipc.NewClientWith(sock, ipc.ClientOptions{BusyTries: 1})
}

// rawResponse is an answer read off a socket by hand.
type rawResponse struct {
	status int
	header http.Header
	err    *ipc.Error
	took   time.Duration
	close  bool // the server said it closes the connection
}

// rawDo sends request, a whole HTTP/1.1 request as text, on a new
// connection and reads the answer.
func rawDo(t *testing.T, sock, request string) rawResponse {
	t.Helper()
	start := time.Now()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Error(err)
		return rawResponse{}
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Error(err)
		return rawResponse{}
	}
	return readRaw(t, c, start)
}

func readRaw(t *testing.T, c net.Conn, start time.Time) rawResponse {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Errorf("reading the answer: %v", err)
		return rawResponse{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb errorBody
	json.Unmarshal(b, &eb)
	return rawResponse{status: resp.StatusCode, header: resp.Header, err: eb.Error, took: time.Since(start), close: resp.Close}
}

func post(path, body string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: sifd\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
}

// blockingBackend's Similar blocks until release is closed, after telling
// entered.
type blockingBackend struct {
	*fakeController
	entered chan struct{}
	release chan struct{}
}

func (b *blockingBackend) Similar(context.Context, index.Query, index.QueryOptions) (*index.Result, error) {
	b.entered <- struct{}{}
	<-b.release
	return &index.Result{}, nil
}

func newBlockingBackend() *blockingBackend {
	return &blockingBackend{fakeController: newFakeController(), entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func similarBody(t *testing.T, n int) string {
	t.Helper()
	fs := make([]fingerprint.Feature, n)
	for i := range fs {
		fs[i] = fingerprint.Feature{Hash: uint64(i + 1), Count: 1}
	}
	b, err := json.Marshal(ipc.NewSimilarRequest("", &fingerprint.Sketch{Params: fingerprint.DefaultParams(), Features: fs}))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func within(t *testing.T, what string, d time.Duration, took time.Duration) {
	t.Helper()
	if took > d {
		t.Errorf("%s took %s, want at most %s", what, took, d)
	}
}

func TestBusyAfterQueueing(t *testing.T) {
	bb := newBlockingBackend()
	const wait = 2 * time.Second
	sock, c := serveWith(t, bb, Options{MaxConcurrent: 2, MaxQueued: 1, QueueWait: wait, MaxPerUser: 2})
	body := similarBody(t, 5)
	var held sync.WaitGroup
	for range 2 {
		held.Go(func() {
			if r := rawDo(t, sock, post("/v1/similar", body)); r.status != http.StatusOK {
				t.Errorf("a held query: %d %+v", r.status, r.err)
			}
		})
	}
	<-bb.entered
	<-bb.entered
	// Both slots are taken: the third request waits QueueWait for one,
	// then is refused.
	third := make(chan rawResponse, 1)
	go func() { third <- rawDo(t, sock, post("/v1/similar", body)) }()
	time.Sleep(50 * time.Millisecond)
	// With the queue full, a fourth is refused at once.
	r := rawDo(t, sock, "GET /v1/status HTTP/1.1\r\nHost: sifd\r\n\r\n")
	if r.status != http.StatusServiceUnavailable || r.err == nil || r.err.Code != ipc.CodeBusy || r.header.Get("Retry-After") != "1" {
		t.Errorf("a request with the queue full: %d %+v Retry-After %q, want 503 busy with Retry-After: 1", r.status, r.err, r.header.Get("Retry-After"))
	}
	within(t, "a busy answer with the queue full", wait/2, r.took)
	r = <-third
	if r.status != http.StatusServiceUnavailable || r.err == nil || r.err.Code != ipc.CodeBusy || r.header.Get("Retry-After") != "1" {
		t.Errorf("third query: %d %+v Retry-After %q, want 503 busy with Retry-After: 1", r.status, r.err, r.header.Get("Retry-After"))
	}
	if r.err != nil && (!strings.Contains(r.err.Message, "2 requests in progress") || !strings.Contains(r.err.Message, "none ended within 2s")) {
		t.Errorf("busy message %q does not say how many requests are in progress and how long it waited", r.err.Message)
	}
	if r.took < wait-100*time.Millisecond {
		t.Errorf("the third query was refused after %s, before the queue wait of %s", r.took, wait)
	}
	within(t, "a busy answer after queueing", 5*time.Second, r.took)
	// Other routes count too; waits do not.
	var e *ipc.Error
	if _, err := c.Status(context.Background()); !errors.As(err, &e) || e.Code != ipc.CodeBusy || !errors.Is(err, ipc.ErrBusy) {
		t.Errorf("status while busy: %v, want ErrBusy with the daemon's *Error with code busy", err)
	}
	if _, err := c.Wait(context.Background(), time.Second); err != nil {
		t.Errorf("wait while the queries are busy: %v", err)
	}
	// A request queued when a slot is freed gets it (this client does not
	// retry).
	errc := make(chan error, 1)
	go func() { _, err := c.Status(context.Background()); errc <- err }()
	time.Sleep(100 * time.Millisecond)
	close(bb.release)
	if err := <-errc; err != nil {
		t.Errorf("a queued request after the slots were freed: %v", err)
	}
	held.Wait()
}

// orderBackend records the size of each query as it enters Similar, and
// holds it there until gate is closed.
type orderBackend struct {
	fakeBackend
	gate chan struct{}
	mu   sync.Mutex
	seen []int64
}

func (b *orderBackend) Similar(_ context.Context, q index.Query, _ index.QueryOptions) (*index.Result, error) {
	b.mu.Lock()
	b.seen = append(b.seen, q.Sketch.Size)
	b.mu.Unlock()
	<-b.gate
	return &index.Result{}, nil
}

// TestQueueFirstComeFirstServed: queued requests get the slot in the order
// they came.
func TestQueueFirstComeFirstServed(t *testing.T) {
	ob := &orderBackend{fakeBackend: fakeBackend{params: fingerprint.DefaultParams()}, gate: make(chan struct{})}
	sock, _ := serveWith(t, ob, Options{MaxConcurrent: 1, QueueWait: 10 * time.Second})
	query := func(size int64) string {
		sk := &fingerprint.Sketch{Summary: fingerprint.Summary{Size: size}, Params: fingerprint.DefaultParams(), Features: []fingerprint.Feature{{Hash: 1, Count: 1}}}
		b, err := json.Marshal(ipc.NewSimilarRequest("", sk))
		if err != nil {
			t.Fatal(err)
		}
		return post("/v1/similar", string(b))
	}
	var all sync.WaitGroup
	for i := range 6 {
		all.Go(func() {
			if r := rawDo(t, sock, query(int64(i))); r.status != http.StatusOK {
				t.Errorf("query %d: %d %+v", i, r.status, r.err)
			}
		})
		time.Sleep(100 * time.Millisecond) // so that they queue in turn
	}
	close(ob.gate)
	all.Wait()
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if fmt.Sprint(ob.seen) != "[0 1 2 3 4 5]" {
		t.Errorf("queries served in the order %v, want the order they came in", ob.seen)
	}
}

func TestClientGivesUpWhenBusy(t *testing.T) {
	bb := newBlockingBackend()
	sock, c := serveWith(t, bb, Options{MaxConcurrent: 1})
	var held sync.WaitGroup
	defer held.Wait()
	defer close(bb.release)
	body := similarBody(t, 5)
	held.Go(func() { rawDo(t, sock, post("/v1/similar", body)) })
	<-bb.entered
	c = ipc.NewClientWith(sock, ipc.ClientOptions{BusyTries: 3, BusyMaxDelay: 30 * time.Millisecond})
	start := time.Now()
	_, err := c.Info(context.Background())
	if !errors.Is(err, ipc.ErrBusy) || !strings.Contains(err.Error(), "still after 3 tries") {
		t.Errorf("a client that stays refused: %v, want ErrBusy after 3 tries", err)
	}
	// Retry-After asks for a second; the delay is capped at 30 ms here.
	if took := time.Since(start); took < 60*time.Millisecond {
		t.Errorf("3 tries in %s: the client did not wait between them", took)
	}
	// Cancelling the context stops the retries.
	c = ipc.NewClientWith(sock, ipc.ClientOptions{BusyTries: 1000, BusyMaxDelay: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := c.Info(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("retrying with a context that ends: %v", err)
	}
	within(t, "retries after the context ended", 5*time.Second, time.Since(start))
}

func TestWaitsCapped(t *testing.T) {
	fc := newFakeController()
	started := make(chan struct{}, 10)
	fc.set(func(f *fakeController) {
		f.wait = func(ctx context.Context, timeout time.Duration) (WaitResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			return WaitResult{}, ctx.Err()
		}
	})
	_, c := serveWith(t, fc, Options{MaxWaits: 2, MaxConcurrent: 1, MaxWaitsPerUser: 2})
	ctx, cancel := context.WithCancel(context.Background())
	var held sync.WaitGroup
	for range 2 {
		held.Go(func() { c.Wait(ctx, time.Hour) })
	}
	<-started
	<-started
	start := time.Now()
	var e *ipc.Error
	if _, err := c.Wait(context.Background(), time.Hour); !errors.As(err, &e) || e.Code != ipc.CodeBusy || !strings.Contains(e.Message, "2 waits in progress") {
		t.Errorf("a third wait: %v, want busy naming 2 waits", err)
	}
	within(t, "a busy answer to a wait", 2*time.Second, time.Since(start))
	// The waits hold no query slot, though there is only one.
	if _, err := c.Status(context.Background()); err != nil {
		t.Errorf("status while two waits are held: %v", err)
	}
	cancel()
	held.Wait()
}

func TestBodyTooLarge(t *testing.T) {
	fb := newFakeController() // a Controller too, so /v1/status answers
	sock, c := serveWith(t, fb, Options{MaxBody: 1000})
	big := similarBody(t, 100) // about 4 KB
	// Refused from its Content-Length, before it is read.
	r := rawDo(t, sock, post("/v1/similar", big))
	if r.status != http.StatusRequestEntityTooLarge || r.err == nil || r.err.Code != ipc.CodeTooLarge || !strings.Contains(r.err.Message, "larger than 1000 bytes") {
		t.Errorf("a body over MaxBody: %d %+v, want 413 too_large naming 1000 bytes", r.status, r.err)
	}
	// Refused as it is read when it comes chunked, without a length.
	chunked := fmt.Sprintf("POST /v1/similar HTTP/1.1\r\nHost: sifd\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(big), big)
	r = rawDo(t, sock, chunked)
	if r.status != http.StatusRequestEntityTooLarge || r.err == nil || r.err.Code != ipc.CodeTooLarge || !strings.Contains(r.err.Message, "larger than 1000 bytes") {
		t.Errorf("a chunked body over MaxBody: %d %+v, want 413 too_large naming 1000 bytes", r.status, r.err)
	}
	// Through the client, with a body much larger than the socket's
	// buffers: the answer, not a broken pipe.
	var e *ipc.Error
	if _, err := c.Similar(context.Background(), ipc.NewSimilarRequest("", &fingerprint.Sketch{Params: fb.params, Features: make([]fingerprint.Feature, 200000)})); !errors.As(err, &e) || e.Code != ipc.CodeTooLarge {
		t.Errorf("a 5 MB query through the client: %v, want code too_large", err)
	}
	// A small body still goes through.
	if _, err := c.Similar(context.Background(), ipc.NewSimilarRequest("", &fingerprint.Sketch{Params: fb.params, Features: []fingerprint.Feature{{Hash: 1, Count: 1}}})); err != nil {
		t.Errorf("a small query: %v", err)
	}
}

func TestTooManyFeatures(t *testing.T) {
	fb := newFakeController() // a Controller too, so /v1/status answers
	_, c := serveWith(t, fb, Options{MaxFeatures: 3})
	sk := &fingerprint.Sketch{Params: fb.params, Features: []fingerprint.Feature{{Hash: 1, Count: 1}, {Hash: 2, Count: 1}, {Hash: 3, Count: 1}}}
	if _, err := c.Similar(context.Background(), ipc.NewSimilarRequest("", sk)); err != nil {
		t.Errorf("3 features with MaxFeatures 3: %v", err)
	}
	sk.Features = append(sk.Features, fingerprint.Feature{Hash: 4, Count: 1})
	var e *ipc.Error
	_, err := c.Similar(context.Background(), ipc.NewSimilarRequest("", sk))
	if !errors.As(err, &e) || e.Code != ipc.CodeTooLarge || !strings.Contains(e.Message, "features: 4 fingerprints, more than the 3 this daemon accepts") {
		t.Errorf("4 features with MaxFeatures 3: %v, want too_large naming features and the limit", err)
	}
}

func TestTrailingData(t *testing.T) {
	fc := newFakeController()
	for _, body := range []string{`{} {}`, `{}x`, `{}]`} {
		code, e, out := send(t, fc, "POST", "/v1/rescan", body)
		if code != http.StatusBadRequest || e == nil || !strings.Contains(e.Message, "after the JSON value") {
			t.Errorf("body %q: %d %s, want 400 naming the data after the JSON value", body, code, out)
		}
	}
	if code, _, out := send(t, fc, "POST", "/v1/rescan", "{}\n\t "); code != http.StatusOK {
		t.Errorf("trailing white space: %d %s", code, out)
	}
}

func TestSlowBodyCutOff(t *testing.T) {
	fb := newFakeController() // a Controller too, so /v1/status answers
	sock, c := serveWith(t, fb, Options{MaxConcurrent: 1, BodyTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	// The header promises 100 bytes; 10 come, then nothing.
	fmt.Fprintf(conn, "POST /v1/similar HTTP/1.1\r\nHost: sifd\r\nContent-Length: 100\r\n\r\n{\"size\": 1")
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	r := readRaw(t, conn, start)
	if r.status != http.StatusRequestTimeout || r.err == nil || r.err.Code != ipc.CodeTimeout || !strings.Contains(r.err.Message, "not received within 300ms") {
		t.Errorf("a body that stops: %d %+v, want 408 timeout", r.status, r.err)
	}
	if r.took < 250*time.Millisecond {
		t.Errorf("cut off after %s, before the body timeout", r.took)
	}
	within(t, "cutting off a slow body", 10*time.Second, r.took)
	// The connection is closed, and the only slot free again.
	if n, err := conn.Read(make([]byte, 1)); err == nil {
		t.Errorf("the connection is still open: read %d bytes", n)
	}
	if _, err := c.Status(context.Background()); err != nil {
		t.Errorf("status after the slow body was cut off: %v", err)
	}
}

// slowBodies opens n connections to sock that each announce a body of
// size bytes and send only its first byte.
func slowBodies(t *testing.T, sock string, n int, size int64) {
	t.Helper()
	for i := range n {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /v1/similar HTTP/1.1\r\nHost: sifd\r\nContent-Length: %d\r\n\r\n{", size)
	}
}

// TestSlowBodiesHoldNoSlot: requests whose bodies come slowly, more of them
// than there are slots or connections, each announcing the largest body
// accepted, neither take the slots nor spend the body budget nor keep new
// connections out: other clients are answered at once.
func TestSlowBodiesHoldNoSlot(t *testing.T) {
	fb := newFakeController() // a Controller too, so /v1/status answers
	const maxBody = 1 << 20
	// Slots held by the slow bodies would keep the requests below waiting
	// the whole QueueWait, then failing busy: the bound below, well under
	// it, leaves room for a loaded machine without hiding that.
	_, c := serveWith(t, fb, Options{MaxConcurrent: 2, MaxConns: 8, MaxBody: maxBody, MaxBodyInFlight: 2 * maxBody, QueueWait: 30 * time.Second, BodyTimeout: time.Minute})
	sock := c.Socket()
	slowBodies(t, sock, 20, maxBody)
	time.Sleep(200 * time.Millisecond) // the daemon reads their headers
	sk := &fingerprint.Sketch{Params: fb.params, Features: make([]fingerprint.Feature, 5000)}
	for i := range sk.Features {
		sk.Features[i] = fingerprint.Feature{Hash: uint64(i + 1), Count: 1}
	}
	for i := range 3 {
		start := time.Now()
		if _, err := c.Status(context.Background()); err != nil {
			t.Errorf("status %d with 20 slow bodies: %v", i, err)
		}
		// A query of about 200 KB.
		if _, err := c.Similar(context.Background(), ipc.NewSimilarRequest("", sk)); err != nil {
			t.Errorf("similar %d with 20 slow bodies: %v", i, err)
		}
		within(t, "status and similar with 20 slow bodies", 10*time.Second, time.Since(start))
	}
}

// TestBodyBudgetBusy: when the bodies being read fill MaxBodyInFlight, a
// body waits QueueWait for room, then is answered busy; room made by a
// body cut off lets it through.
func TestBodyBudgetBusy(t *testing.T) {
	fb := newFakeController() // a Controller too, so /v1/status answers
	const budget = 64 << 10
	sock, c := serveWith(t, fb, Options{MaxBody: budget, MaxBodyInFlight: budget, MaxBodyPerUser: budget, QueueWait: 200 * time.Millisecond, BodyTimeout: 2 * time.Second})
	// A body of the whole budget arrives but for its last bytes: the
	// pieces read so far and the one awaited fill the budget.
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/similar HTTP/1.1\r\nHost: sifd\r\nContent-Length: %d\r\n\r\n", budget)
	conn.Write(make([]byte, budget-100))
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	r := rawDo(t, sock, post("/v1/similar", similarBody(t, 5)))
	if r.status != http.StatusServiceUnavailable || r.err == nil || r.err.Code != ipc.CodeBusy || !strings.Contains(r.err.Message, "request bodies of 65536 bytes") {
		t.Errorf("a body with the budget spent: %d %+v, want 503 busy naming the budget", r.status, r.err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("refused after %s, before the queue wait", took)
	}
	// A request without a body needs no room.
	if _, err := c.Status(context.Background()); err != nil {
		t.Errorf("status with the body budget spent: %v", err)
	}
	// Once the stalled body is cut off, a query goes through.
	c = ipc.NewClientWith(sock, ipc.ClientOptions{BusyTries: 100, BusyMaxDelay: 100 * time.Millisecond})
	if _, err := c.Similar(context.Background(), ipc.NewSimilarRequest("", &fingerprint.Sketch{Params: fb.params, Features: []fingerprint.Feature{{Hash: 1, Count: 1}}})); err != nil {
		t.Errorf("a query once the stalled body was cut off: %v", err)
	}
}

func TestSlowHeaderCutOff(t *testing.T) {
	sock, _ := serveWith(t, &fakeBackend{params: fingerprint.DefaultParams()}, Options{HeaderTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	io.WriteString(conn, "GET /v1/status HTTP/1.1\r\nHost: sifd\r\n")
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	io.ReadAll(conn) // until the server closes it
	took := time.Since(start)
	if took < 250*time.Millisecond {
		t.Errorf("closed after %s, before the header timeout", took)
	}
	within(t, "closing a connection with a slow header", 10*time.Second, took)
}

// bigBackend answers every query with n matches: megabytes of JSON.
type bigBackend struct {
	*fakeController
	entered chan struct{}
}

func (b *bigBackend) Similar(context.Context, index.Query, index.QueryOptions) (*index.Result, error) {
	b.entered <- struct{}{}
	res := &index.Result{Matches: make([]index.Match, 50000)}
	for i := range res.Matches {
		res.Matches[i].Path = fmt.Sprintf("/srv/a/long/enough/path/to/make/the/answer/large/%08d", i)
	}
	return res, nil
}

func TestStalledReaderFreesSlot(t *testing.T) {
	bb := &bigBackend{fakeController: newFakeController(), entered: make(chan struct{}, 10)}
	sock, c := serveWith(t, bb, Options{MaxConcurrent: 1, WriteTimeout: 2 * time.Second})
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Ask for an answer of about 8 MB, and never read it.
	start := time.Now()
	io.WriteString(conn, post("/v1/similar", similarBody(t, 5)))
	<-bb.entered
	var e *ipc.Error
	if _, err := c.Status(context.Background()); !errors.As(err, &e) || e.Code != ipc.CodeBusy {
		t.Fatalf("status while the one slot writes to a client that does not read: %v, want busy", err)
	}
	// Once the write times out, the slot is free.
	// A slot never freed would keep it busy until the test ends: the bound
	// is far above the write timeout, for a loaded machine.
	c = ipc.NewClientWith(sock, ipc.ClientOptions{BusyTries: 4000, BusyMaxDelay: 50 * time.Millisecond})
	if _, err := c.Status(context.Background()); err != nil {
		t.Fatalf("status after the write timeout: %v", err)
	}
	within(t, "freeing the slot of a client that does not read", 90*time.Second, time.Since(start))
	// And the stalled connection has been closed.
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, _ := io.Copy(io.Discard, conn)
	if n > 4<<20 {
		t.Errorf("the stalled client could still read %d bytes: the answer was not cut off", n)
	}
}

func TestLongRequestsOutliveShortDeadlines(t *testing.T) {
	fc := newFakeController()
	fc.set(func(f *fakeController) { f.wait = blockingWait(nil, nil) })
	_, c := serveWith(t, fc, Options{BodyTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond})
	// A wait outlasts both deadlines and still gets its answer: the body's
	// read deadline is lifted once it is read, and the write deadline runs
	// from the first byte of the answer.
	var e *ipc.Error
	if _, err := c.Wait(context.Background(), 500*time.Millisecond); !errors.As(err, &e) || e.Code != ipc.CodeTimeout {
		t.Errorf("a 500 ms wait with 50 ms body and write timeouts: %v, want code timeout after the wait ran out", err)
	}
	fc.set(func(f *fakeController) {
		f.wait = func(context.Context, time.Duration) (WaitResult, error) {
			time.Sleep(300 * time.Millisecond)
			return WaitResult{Cookies: 1}, nil
		}
	})
	if resp, err := c.Wait(context.Background(), time.Second); err != nil || resp.Cookies != 1 {
		t.Errorf("a wait that succeeds after 300 ms: %+v, %v", resp, err)
	}
}

// TestIdleConnections opens many more connections than MaxConns, idle or
// sending their header a byte at a time, and holds them: a client still
// gets its answers at once, and the daemon's goroutines and memory stay
// bounded by MaxConns, though the header timeout is a minute away.
func TestIdleConnections(t *testing.T) {
	const maxConns, idle = 32, 320
	fb := newFakeController() // a Controller too, so /v1/status answers
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	sock, c := serveWith(t, fb, Options{MaxConns: maxConns, HeaderTimeout: time.Minute, IdleTimeout: time.Minute})
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	for i := range idle {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, conn)
		if i%2 == 1 {
			io.WriteString(conn, "GET /v1/status HTTP/1.1\r\nHo") // a slowloris
		}
	}
	// Keep the slow ones trickling while a client asks.
	stop := make(chan struct{})
	var trickle sync.WaitGroup
	trickle.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for i := 1; i < len(conns); i += 2 {
				conns[i].SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
				conns[i].Write([]byte("o"))
			}
		}
	})
	for i := range 5 {
		start := time.Now()
		if _, err := c.Status(context.Background()); err != nil {
			t.Fatalf("status %d with %d idle connections: %v", i, idle, err)
		}
		within(t, fmt.Sprintf("status %d with %d idle connections", i, idle), 5*time.Second, time.Since(start))
	}
	close(stop)
	trickle.Wait()

	// The daemon closed all but MaxConns of them.
	closed := 0
	for _, conn := range conns {
		conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		// EOF, or ECONNRESET when the daemon closed it with unread bytes.
		if _, err := conn.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++
		}
	}
	if closed < idle-maxConns {
		t.Errorf("%d of %d idle connections closed, want at least %d", closed, idle, idle-maxConns)
	}
	got := runtime.NumGoroutine() - goroutines
	if got > maxConns+10 {
		t.Errorf("%d more goroutines with %d idle connections, want at most about MaxConns (%d)", got, idle, maxConns)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 2<<20 {
		t.Errorf("heap grew by %d bytes with %d idle connections held", grew, idle)
	}
	t.Logf("%d idle connections: %d closed by the daemon, %d more goroutines, heap in use %+d bytes",
		idle, closed, got, int64(after.HeapInuse)-int64(before.HeapInuse))
}

// TestFullOfActiveConnections: when every connection has a request in
// progress, a new one waits for one of them to end, rather than failing or
// costing a goroutine.
func TestFullOfActiveConnections(t *testing.T) {
	fc := newFakeController()
	started := make(chan struct{}, 10)
	fc.set(func(f *fakeController) {
		f.wait = func(ctx context.Context, timeout time.Duration) (WaitResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			return WaitResult{}, ctx.Err()
		}
	})
	_, c := serveWith(t, fc, Options{MaxConns: 3})
	ctxs := make([]context.CancelFunc, 3)
	var held sync.WaitGroup
	for i := range ctxs {
		ctx, cancel := context.WithCancel(context.Background())
		ctxs[i] = cancel
		held.Go(func() { c.Wait(ctx, time.Hour) })
		<-started
	}
	errc := make(chan error, 1)
	go func() { _, err := c.Status(context.Background()); errc <- err }()
	select {
	case err := <-errc:
		t.Fatalf("status with every connection busy answered at once (%v), want it to wait for one", err)
	case <-time.After(300 * time.Millisecond):
	}
	ctxs[0]()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("status once a connection was free: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("status not answered 10 s after a connection was freed")
	}
	for _, cancel := range ctxs {
		cancel()
	}
	held.Wait()
}

// wholeBackend's EachGroup tells entered its threshold, then blocks until
// release sends or is closed.
type wholeBackend struct {
	*fakeController
	entered chan float64
	release chan struct{}
}

func (b *wholeBackend) EachGroup(_ context.Context, o index.GroupOptions, _ func(index.Group) error) error {
	b.entered <- o.Threshold
	<-b.release
	return nil
}

// TestWholeIndexRequests: groups and dupes have slots of their own, with a
// short queue, and take none of the queries'; an identical request that
// arrives while one is queued shares its computation.
func TestWholeIndexRequests(t *testing.T) {
	wb := &wholeBackend{fakeController: newFakeController(),
		entered: make(chan float64, 10), release: make(chan struct{})}
	sock, c := serveWith(t, wb, Options{MaxConcurrent: 1, MaxWhole: 1, MaxWholeQueued: 1, WholeWait: 5 * time.Second, MaxWholePerUser: 1})
	get := func(q string) string { return "GET /v1/groups?" + q + " HTTP/1.1\r\nHost: sifd\r\n\r\n" }
	answers := make(chan rawResponse, 10)
	go func() { answers <- rawDo(t, sock, get("threshold=30")) }()
	if thr := <-wb.entered; thr != 0.3 {
		t.Fatalf("first groups computed with threshold %v", thr)
	}
	// A query and a status are answered while it computes, though there is
	// only one slot for them.
	if _, err := c.Status(context.Background()); err != nil {
		t.Errorf("status while groups computes: %v", err)
	}
	if _, err := c.Similar(context.Background(), ipc.NewSimilarRequest("", &fingerprint.Sketch{Params: wb.params, Features: []fingerprint.Feature{{Hash: 1, Count: 1}}})); err != nil {
		t.Errorf("similar while groups computes: %v", err)
	}
	// A second groups queues; a third, identical, joins it.
	for range 2 {
		go func() { answers <- rawDo(t, sock, get("threshold=40")) }()
	}
	time.Sleep(100 * time.Millisecond)
	// The queue is full: a dupes is refused at once.
	r := rawDo(t, sock, "GET /v1/dupes HTTP/1.1\r\nHost: sifd\r\n\r\n")
	if r.status != http.StatusServiceUnavailable || r.err == nil || r.err.Code != ipc.CodeBusy || !strings.Contains(r.err.Message, "1 whole-index requests (groups, dupes) in progress") {
		t.Errorf("dupes with a groups computing and one queued: %d %+v, want 503 busy naming whole-index requests", r.status, r.err)
	}
	within(t, "a busy dupes", time.Second, r.took)
	wb.release <- struct{}{}
	if thr := <-wb.entered; thr != 0.4 {
		t.Errorf("second groups computed with threshold %v, want 0.4", thr)
	}
	wb.release <- struct{}{}
	for range 3 {
		if r := <-answers; r.status != http.StatusOK {
			t.Errorf("a groups: %d %+v", r.status, r.err)
		}
	}
	select {
	case thr := <-wb.entered:
		t.Errorf("a third computation (threshold %v) for two identical requests", thr)
	case <-time.After(100 * time.Millisecond):
	}
	close(wb.release)
	if _, err := c.Dupes(context.Background(), ""); err != nil {
		t.Errorf("dupes once the groups are done: %v", err)
	}
}

// TestWholeIndexWaitBounded: a whole-index request queued for longer than
// WholeWait is answered busy.
func TestWholeIndexWaitBounded(t *testing.T) {
	wb := &wholeBackend{fakeController: newFakeController(),
		entered: make(chan float64, 10), release: make(chan struct{})}
	_, c := serveWith(t, wb, Options{WholeWait: 300 * time.Millisecond})
	var held sync.WaitGroup
	defer held.Wait()
	defer close(wb.release)
	held.Go(func() { c.Groups(context.Background(), ipc.GroupsOptions{}) })
	<-wb.entered
	start := time.Now()
	var e *ipc.Error
	if _, err := c.Dupes(context.Background(), ""); !errors.As(err, &e) || e.Code != ipc.CodeBusy || !strings.Contains(e.Message, "none ended within 300ms") {
		t.Errorf("dupes while groups computes for longer than WholeWait: %v, want busy", err)
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("refused after %s, before WholeWait", took)
	}
}
