package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/sif-dev/sif/ipc"
)

// Default limits of a Server; see Options.
const (
	// DefaultMaxBody holds a query of DefaultMaxFeatures fingerprints
	// (about 48 bytes of JSON each) with room to spare.
	DefaultMaxBody = 64 << 20
	// DefaultMaxFeatures covers a file of the default --max-size (256 MiB)
	// under the default scheme (about one fingerprint per 380 bytes, some
	// 700,000) and under chunks with 256-byte chunks (about 1,000,000).
	DefaultMaxFeatures   = 1 << 20
	DefaultMaxConcurrent = 16
	DefaultMaxQueued     = 64
	DefaultQueueWait     = time.Second
	DefaultMaxWhole      = 2
	DefaultMaxWholeQueue = 4
	DefaultWholeWait     = 10 * time.Second
	DefaultMaxWaits      = 64
	DefaultMaxConns      = 128
	DefaultHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout   = 30 * time.Second
	DefaultWriteTimeout  = 30 * time.Second
	DefaultIdleTimeout   = 60 * time.Second
	DefaultMaxHeaderSize = 64 << 10
	// DefaultRequestTimeout bounds the time a query takes once it has a
	// slot: about forty times what the heaviest one the other limits let
	// through costs on a small machine (a million fingerprints, 1.5 s).
	DefaultRequestTimeout = time.Minute
)

// retryAfter is what a busy answer tells the client to wait, in seconds.
const retryAfter = 1

// Sizes of the pieces a request body is read into: a body is charged to
// MaxBodyInFlight one piece at a time, as it arrives, so a client that
// announces a large body and sends it slowly holds about what it sent.
const (
	firstPiece = 16 << 10
	maxPiece   = 1 << 20
)

// withDefaults returns o with every zero or negative limit set to its
// default.
func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxBodyInFlight < o.MaxBody {
		o.MaxBodyInFlight = 2 * o.MaxBody
	}
	def(&o.MaxFeatures, DefaultMaxFeatures)
	def(&o.MaxConcurrent, DefaultMaxConcurrent)
	def(&o.MaxQueued, DefaultMaxQueued)
	def(&o.MaxWhole, DefaultMaxWhole)
	def(&o.MaxWholeQueued, DefaultMaxWholeQueue)
	def(&o.MaxWaits, DefaultMaxWaits)
	def(&o.MaxConns, DefaultMaxConns)
	def(&o.MaxPerUser, DefaultMaxPerUser)
	def(&o.MaxWholePerUser, DefaultMaxWholePerUser)
	def(&o.MaxWaitsPerUser, DefaultMaxWaitsPerUser)
	def(&o.MaxConnsPerUser, DefaultMaxConnsPerUser)
	o.MaxPerUser = min(o.MaxPerUser, o.MaxConcurrent)
	o.MaxWholePerUser = min(o.MaxWholePerUser, o.MaxWhole)
	o.MaxWaitsPerUser = min(o.MaxWaitsPerUser, o.MaxWaits)
	o.MaxConnsPerUser = min(o.MaxConnsPerUser, o.MaxConns)
	if o.MaxBodyPerUser <= 0 {
		o.MaxBodyPerUser = o.MaxBodyInFlight / 2
	}
	o.MaxBodyPerUser = min(max(o.MaxBodyPerUser, o.MaxBody), o.MaxBodyInFlight)
	if o.MaxBodyPerUser >= o.MaxBodyInFlight {
		o.MaxBodyPerUser = 0 // cannot bind: no share
	}
	def(&o.MaxHeaderBytes, DefaultMaxHeaderSize)
	defDur(&o.QueueWait, DefaultQueueWait)
	defDur(&o.WholeWait, DefaultWholeWait)
	defDur(&o.HeaderTimeout, DefaultHeaderTimeout)
	defDur(&o.BodyTimeout, DefaultBodyTimeout)
	defDur(&o.WriteTimeout, DefaultWriteTimeout)
	defDur(&o.IdleTimeout, DefaultIdleTimeout)
	defDur(&o.RequestTimeout, DefaultRequestTimeout)
	return o
}

// limiter holds the server's request slots, and each user's share of
// them (see shares).
type limiter struct {
	queries *gate               // requests other than waits and whole-index ones
	whole   *gate               // whole-index requests (see isWhole)
	waits   *gate               // POST /v1/wait; no queue
	bodies  *semaphore.Weighted // bytes of request bodies that may be held at once
	flights flights             // whole-index requests waiting for a slot

	userQueries *shares
	userWhole   *shares
	userWaits   *shares
	userBodies  bodyShares
}

func newLimiter(o Options) *limiter {
	return &limiter{
		queries:     newGate(o.MaxConcurrent, o.MaxQueued, o.QueueWait),
		whole:       newGate(o.MaxWhole, o.MaxWholeQueued, o.WholeWait),
		waits:       newGate(o.MaxWaits, 0, 0),
		bodies:      semaphore.NewWeighted(o.MaxBodyInFlight),
		flights:     flights{pending: map[string]*flight{}},
		userQueries: newShares(o.MaxPerUser, o.MaxConcurrent, o.MaxQueued, "requests"),
		userWhole:   newShares(o.MaxWholePerUser, o.MaxWhole, o.MaxWholeQueued, "whole-index requests (groups, dupes)"),
		userWaits:   newShares(o.MaxWaitsPerUser, o.MaxWaits, 0, "waits"),
		userBodies:  bodyShares{max: o.MaxBodyPerUser},
	}
}

// isWhole reports whether r asks about the whole index at once (GET
// /v1/groups and /v1/dupes): requests that cost orders of magnitude more
// than a query, served by slots of their own.
func isWhole(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/v1/groups" || r.URL.Path == "/v1/dupes")
}

// gate is a set of slots with a bounded queue in front of it.
type gate struct {
	slots     chan struct{}
	maxQueued int64
	wait      time.Duration
	queued    atomic.Int64
}

func newGate(slots, queued int, wait time.Duration) *gate {
	return &gate{slots: make(chan struct{}, slots), maxQueued: int64(queued), wait: wait}
}

// enter takes a slot, waiting for one for at most g.wait, first come first
// served, when there are fewer than maxQueued waiting already. It reports
// whether it took one; the caller gives it back with leave.
func (g *gate) enter(ctx context.Context) bool { return g.enterWithin(ctx, g.wait) }

// enterWithin is enter waiting at most wait.
func (g *gate) enterWithin(ctx context.Context, wait time.Duration) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	if g.queued.Add(1) > g.maxQueued {
		g.queued.Add(-1)
		return false
	}
	defer g.queued.Add(-1)
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (g *gate) leave() { <-g.slots }

// busyMsg says why g refused a request of the kind what.
func (g *gate) busyMsg(what string) string {
	if g.maxQueued == 0 {
		return fmt.Sprintf("%d %s in progress, as many as this daemon serves at once", cap(g.slots), what)
	}
	return fmt.Sprintf("%d %s in progress, as many as this daemon serves at once, and none ended within %s", cap(g.slots), what, g.wait)
}

type receivedKey struct{}

// received returns when the request r was received whole (its body read),
// for the elapsed time of an answer; now for a request that did not come
// through limit.
func received(r *http.Request) time.Time {
	if t, ok := r.Context().Value(receivedKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

// limit serves r with next within the server's limits. It refuses a body
// larger than MaxBody (413 too_large) and gives it BodyTimeout to arrive
// (408 timeout); it reads the body whole before the request takes a slot,
// charging it to MaxBodyInFlight as it arrives, so a slow client holds no
// slot. It then takes a slot: of MaxWhole for a whole-index request, of
// MaxWaits for a wait, else of MaxConcurrent, waiting in a queue of
// bounded length and for a bounded time (none for waits); beyond either,
// the answer is 503 busy. Each piece of the response must be taken within
// WriteTimeout from when it is sent (see deadlineWriter).
func (s *Server) limit(w http.ResponseWriter, r *http.Request, next http.Handler) {
	rc := http.NewResponseController(w)
	// Deadlines cannot be set on every ResponseWriter (a test's recorder);
	// there is nothing to bound then.
	if r.ContentLength != 0 {
		// Set first, so that even a body left unread by an early answer
		// is discarded within the deadline.
		rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	}
	rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout)) // covers a "100 Continue"
	if r.ContentLength > s.opts.MaxBody {
		writeError(w, http.StatusRequestEntityTooLarge, ipc.CodeTooLarge, tooLargeBody(s.opts.MaxBody))
		return
	}
	c := s.callerOf(r)
	who := c.who()
	if s.conns != nil && !s.conns.admit(r.Context(), connOf(r), s.opts.QueueWait) {
		w.Header().Set("Connection", "close")
		busy(w, fmt.Sprintf("%d connections of yours (%s) open, as many as this daemon keeps for one user", s.opts.MaxConnsPerUser, who))
		return
	}
	if r.ContentLength != 0 {
		conn := connOf(r)
		if s.conns != nil && conn != nil {
			s.conns.readingBody(conn, true)
		}
		mine := s.lim.userBodies.get(who)
		body, charged, ok := s.readBody(w, r, mine, who)
		if s.conns != nil && conn != nil {
			s.conns.readingBody(conn, false)
		}
		if !ok {
			s.lim.userBodies.put(mine, who)
			return
		}
		defer s.lim.userBodies.put(mine, who)
		defer mine.release(charged)
		defer s.lim.bodies.Release(charged)
		// Lift the read deadline, so that the server's watch for a client
		// hanging up (which cancels the request's context) does not see it
		// go by while a long request, such as a wait, is in progress.
		rc.SetReadDeadline(time.Time{})
		r.Body = body
	}
	r = r.WithContext(context.WithValue(r.Context(), receivedKey{}, time.Now()))
	w = &deadlineWriter{ResponseWriter: w, rc: rc, timeout: s.opts.WriteTimeout}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/wait":
		mine, msg := s.lim.userWaits.enter(r.Context(), who, 0)
		if mine == nil {
			busy(w, msg)
			return
		}
		defer s.lim.userWaits.leave(mine, who)
		if !s.lim.waits.enter(r.Context()) {
			busy(w, s.lim.waits.busyMsg("waits"))
			return
		}
		defer s.lim.waits.leave()
	case isWhole(r):
		s.serveWhole(w, r, next)
		return
	default:
		// The user's own slot first, then one of the server's, all
		// within one QueueWait.
		deadline := time.Now().Add(s.opts.QueueWait)
		mine, msg := s.lim.userQueries.enter(r.Context(), who, s.opts.QueueWait)
		if mine == nil {
			busy(w, msg)
			return
		}
		defer s.lim.userQueries.leave(mine, who)
		if !s.lim.queries.enterWithin(r.Context(), time.Until(deadline)) {
			busy(w, s.lim.queries.busyMsg("requests"))
			return
		}
		defer s.lim.queries.leave()
		// Work that runs past RequestTimeout is stopped as if its client
		// had hung up, and answered 504 (see fail).
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
	}
	next.ServeHTTP(w, r)
}

// readBody reads r's body whole, at most MaxBody bytes within BodyTimeout,
// charging it to the user's share (mine, of MaxBodyPerUser) and to
// MaxBodyInFlight a piece at a time as it arrives; a body that finds
// either spent waits up to QueueWait for room, then is answered busy. It
// returns the body and the bytes charged to each, which the caller
// releases once the request is served; on failure it has answered and
// returns false, charging nothing.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, mine *bodyShare, who string) (io.ReadCloser, int64, bool) {
	src := http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
	var pieces [][]byte
	var charged, read int64
	fail := func() (io.ReadCloser, int64, bool) {
		s.lim.bodies.Release(charged)
		mine.release(charged)
		return nil, 0, false
	}
	next := int64(firstPiece)
	for {
		// What the body may still hold: up to its Content-Length when it
		// has one, else up to MaxBody.
		left := s.opts.MaxBody - read
		if r.ContentLength > 0 {
			left = r.ContentLength - read
		}
		if left <= 0 {
			// Whole, unless more comes: read its end without a charge.
			var one [1]byte
			n, err := src.Read(one[:])
			for n == 0 && err == nil {
				n, err = src.Read(one[:])
			}
			if err == io.EOF && n == 0 {
				break
			}
			if err == nil || err == io.EOF {
				err = errors.New("more data than its length")
			}
			if !bodyError(w, err, &s.opts) {
				writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, "reading request body: "+err.Error())
			}
			return fail()
		}
		n := min(next, left, s.opts.MaxBodyInFlight)
		if s.opts.MaxBodyPerUser > 0 {
			n = min(n, s.opts.MaxBodyPerUser)
		}
		if !mine.tryAcquire(n) {
			ctx, cancel := context.WithTimeout(r.Context(), s.opts.QueueWait)
			err := mine.acquire(ctx, n)
			cancel()
			if err != nil {
				busy(w, fmt.Sprintf("request bodies of yours (%s) of %d bytes being read or served, as much as this daemon holds for one user", who, s.opts.MaxBodyPerUser))
				return fail()
			}
		}
		if !s.lim.bodies.TryAcquire(n) {
			ctx, cancel := context.WithTimeout(r.Context(), s.opts.QueueWait)
			err := s.lim.bodies.Acquire(ctx, n)
			cancel()
			if err != nil {
				mine.release(n)
				busy(w, fmt.Sprintf("request bodies of %d bytes being read or served, as much as this daemon holds at once", s.opts.MaxBodyInFlight))
				return fail()
			}
		}
		charged += n
		p := make([]byte, n)
		m := 0
		var err error
		for m < len(p) && err == nil {
			var k int
			k, err = src.Read(p[m:])
			m += k
		}
		read += int64(m)
		pieces = append(pieces, p[:m])
		if err == io.EOF {
			break
		}
		if err != nil {
			if !bodyError(w, err, &s.opts) {
				writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, "reading request body: "+err.Error())
			}
			return fail()
		}
		next = min(2*next, maxPiece)
	}
	readers := make([]io.Reader, len(pieces))
	for i, p := range pieces {
		readers[i] = bytes.NewReader(p)
	}
	return io.NopCloser(io.MultiReader(readers...)), charged, true
}

// flights are the whole-index requests waiting for a slot, by what they
// ask and who asks it. A request identical to one waiting, from a caller
// with the same credentials, joins it and gets the same answer: the answer
// is computed once, after both arrived, and each piece of it is written to
// every client of the flight as it is made (see tee), so that a streamed
// answer is not held for the clients that joined. (A request is never
// joined to one already being computed, whose answer may predate changes
// the caller waited for.)
type flights struct {
	mu      sync.Mutex
	pending map[string]*flight
}

// flight is one whole-index computation and the requests that share it.
type flight struct {
	key     string
	out     tee           // appended to under flights.mu while pending
	done    chan struct{} // closed once the answer is written
	aborted bool          // the answer was cut short; set before done is closed
	// ctx is the computation's context, canceled once every client has
	// gone: left counts those still there, under flights.mu (see leave).
	ctx    context.Context
	cancel context.CancelFunc
	left   int
}

// serveWhole serves a whole-index request r with next, within MaxWhole,
// sharing the answer with identical requests of the same caller (see
// flights).
func (s *Server) serveWhole(w http.ResponseWriter, r *http.Request, next http.Handler) {
	c := s.callerOf(r)
	key := r.URL.Path + "?" + r.URL.Query().Encode() + "|" + c.key()
	fs := &s.lim.flights
	fs.mu.Lock()
	f, joined := fs.pending[key]
	if !joined {
		f = &flight{key: key, done: make(chan struct{}), out: tee{header: http.Header{}}}
		// The values of the first request (its caller, when it was
		// received), not its cancellation: see leave.
		f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(r.Context()))
		defer f.cancel()
		fs.pending[key] = f
	}
	me := &teeOut{w: w}
	f.out.outs = append(f.out.outs, me)
	f.left++
	fs.mu.Unlock()
	stop := context.AfterFunc(r.Context(), func() { fs.leave(f) })
	defer stop()
	if joined {
		select {
		case <-f.done:
			if f.aborted {
				panic(http.ErrAbortHandler)
			}
		case <-r.Context().Done():
			if stop() { // this return could beat the AfterFunc's start
				fs.leave(f)
			}
			if !s.stopping() { // the client hung up
				me.leave()
				return
			}
			// The daemon stops: the flight, canceled too, ends soon, and
			// its answer (503, or one cut short) is this client's.
			<-f.done
			if f.aborted {
				panic(http.ErrAbortHandler)
			}
		}
		return
	}
	// The requests joined to this one are served whether or not its own
	// client is still there, until every one has gone. The user's own
	// slot first, then one of the server's, all within one WholeWait.
	who := c.who()
	deadline := time.Now().Add(s.opts.WholeWait)
	mine, msg := s.lim.userWhole.enter(f.ctx, who, s.opts.WholeWait)
	ok := mine != nil
	if ok {
		if ok = s.lim.whole.enterWithin(f.ctx, time.Until(deadline)); !ok {
			s.lim.userWhole.leave(mine, who)
			msg = s.lim.whole.busyMsg("whole-index requests (groups, dupes)")
		}
	}
	fs.mu.Lock()
	if fs.pending[key] == f {
		delete(fs.pending, key)
	}
	fs.mu.Unlock()
	if f.ctx.Err() != nil { // every client has gone, or the daemon stops
		if ok {
			s.lim.whole.leave()
			s.lim.userWhole.leave(mine, who)
		}
		if s.stopping() {
			stopped(&f.out)
		}
		close(f.done)
		return
	}
	if !ok {
		busy(&f.out, msg)
		close(f.done)
		return
	}
	defer close(f.done)
	defer s.lim.userWhole.leave(mine, who)
	defer s.lim.whole.leave()
	defer func() {
		if p := recover(); p != nil {
			f.aborted = true
			panic(p)
		}
	}()
	next.ServeHTTP(&f.out, r.WithContext(f.ctx))
}

// tee is a ResponseWriter that writes to the ResponseWriters of every
// client of a flight, from the goroutine serving the flight. A client whose
// writes fail, or who left, is written to no more; once none is left,
// Write and Flush fail, which stops a streamed answer.
type tee struct {
	header http.Header
	status int
	outs   []*teeOut
}

// teeOut is one client of a tee. Its goroutine waits for the flight to be
// done before it returns, unless it leaves first.
type teeOut struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	gone bool // left, or a write failed: not written to any more
}

// leave stops writes to o, waiting for one in progress.
func (o *teeOut) leave() {
	o.mu.Lock()
	o.gone = true
	o.mu.Unlock()
}

// errNoClient fails a write to a tee whose clients are all gone.
var errNoClient = errors.New("server: every client of the answer went away")

// each calls fn with the ResponseWriter of every client still there; a
// client for which fn fails is written to no more. It fails when none is
// left.
func (t *tee) each(fn func(w http.ResponseWriter) error) error {
	left := 0
	for _, o := range t.outs {
		o.mu.Lock()
		if !o.gone {
			if err := fn(o.w); err != nil {
				o.gone = true
			} else {
				left++
			}
		}
		o.mu.Unlock()
	}
	if left == 0 {
		return errNoClient
	}
	return nil
}

func (t *tee) Header() http.Header { return t.header }

func (t *tee) WriteHeader(code int) {
	if t.status != 0 {
		return
	}
	t.status = code
	t.each(func(w http.ResponseWriter) error {
		h := w.Header()
		for k, v := range t.header {
			h[k] = v
		}
		w.WriteHeader(code)
		return nil
	})
}

func (t *tee) Write(b []byte) (int, error) {
	t.WriteHeader(http.StatusOK)
	err := t.each(func(w http.ResponseWriter) error {
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// FlushError sends what every client's writer buffers (see
// http.ResponseController).
func (t *tee) FlushError() error {
	return t.each(func(w http.ResponseWriter) error {
		if err := http.NewResponseController(w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		return nil
	})
}

func busy(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
	writeError(w, http.StatusServiceUnavailable, ipc.CodeBusy, fmt.Sprintf("busy: %s; retry after %ds", msg, retryAfter))
}

func tooLargeBody(max int64) string {
	return fmt.Sprintf("request body: larger than %d bytes, the most this daemon accepts", max)
}

// deadlineWriter gives each piece of a response the response timeout to
// be written, from the moment it is written: a client that stops reading
// frees its request slot, while a request that takes long to compute, or
// an answer streamed in many pieces, still gets through.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *deadlineWriter) extend() {
	w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(b)
}

// FlushError sends what the server buffers, within the timeout.
func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// checkLimits checks the limits of a decoded request beyond its body's
// size: the fingerprints of a query.
func checkLimits(v any, o *Options) error {
	var features []ipc.Feature
	switch r := v.(type) {
	case *ipc.SimilarRequest:
		features = r.Features
	case *ipc.BasisRequest:
		features = r.Features
	}
	if len(features) > o.MaxFeatures {
		return fmt.Errorf("features: %d fingerprints, more than the %d this daemon accepts in one query", len(features), o.MaxFeatures)
	}
	return nil
}

// bodyError answers a failure to read a request body, if it is one, and
// reports whether it did.
func bodyError(w http.ResponseWriter, err error, o *Options) bool {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, ipc.CodeTooLarge, tooLargeBody(mbe.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeError(w, http.StatusRequestTimeout, ipc.CodeTimeout, fmt.Sprintf("request body: not received within %s", o.BodyTimeout))
	default:
		return false
	}
	return true
}

// key names what c may see, for sharing an answer between callers: equal
// keys are callers with the same credentials.
func (c *caller) key() string {
	switch {
	case c.err != nil: // answered with an error of its own
		return fmt.Sprintf("unknown %p", c)
	case c.all:
		return "all"
	}
	return fmt.Sprintf("uid %d gid %d groups %v", c.cred.UID, c.cred.GID, c.cred.Groups)
}
