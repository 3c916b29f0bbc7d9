package ipc

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/semaphore"
)

// Default limits of a Server; see ServerOptions.
const (
	// DefaultMaxBody holds a query of DefaultMaxFeatures fingerprints
	// (about 48 bytes of JSON each) with room to spare.
	DefaultMaxBody = 64 << 20
	// DefaultMaxFeatures covers a file of the default --max-size (256 MiB)
	// under the default scheme (about one fingerprint per 380 bytes, some
	// 700,000) and under chunks with 256-byte chunks (about 1,000,000).
	DefaultMaxFeatures   = 1 << 20
	DefaultMaxConcurrent = 16
	DefaultMaxWaits      = 64
	DefaultMaxConns      = 128
	DefaultHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout   = 30 * time.Second
	DefaultWriteTimeout  = 30 * time.Second
	DefaultIdleTimeout   = 60 * time.Second
	DefaultMaxHeaderSize = 64 << 10
)

// retryAfter is what a busy answer tells the client to wait, in seconds.
const retryAfter = 1

// withDefaults returns o with every zero or negative limit set to its
// default.
func (o ServerOptions) withDefaults() ServerOptions {
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
	def(&o.MaxWaits, DefaultMaxWaits)
	def(&o.MaxConns, DefaultMaxConns)
	def(&o.MaxHeaderBytes, DefaultMaxHeaderSize)
	defDur(&o.HeaderTimeout, DefaultHeaderTimeout)
	defDur(&o.BodyTimeout, DefaultBodyTimeout)
	defDur(&o.WriteTimeout, DefaultWriteTimeout)
	defDur(&o.IdleTimeout, DefaultIdleTimeout)
	return o
}

// limiter holds the server's request slots.
type limiter struct {
	queries chan struct{}       // one per request in progress, other than waits
	waits   chan struct{}       // one per POST /v1/wait in progress
	bodies  *semaphore.Weighted // bytes of request bodies that may be held at once
}

func newLimiter(o ServerOptions) *limiter {
	return &limiter{
		queries: make(chan struct{}, o.MaxConcurrent),
		waits:   make(chan struct{}, o.MaxWaits),
		bodies:  semaphore.NewWeighted(o.MaxBodyInFlight),
	}
}

// limit serves r with next within the server's limits: it refuses a body
// larger than MaxBody (413 too_large) and a request beyond MaxConcurrent,
// MaxWaits or MaxBodyInFlight (503 busy, at once), gives the body
// BodyTimeout to arrive, and the response WriteTimeout from its first byte.
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
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, tooLargeBody(s.opts.MaxBody))
		return
	}
	slots, what := s.lim.queries, "requests"
	if r.Method == http.MethodPost && r.URL.Path == "/v1/wait" {
		slots, what = s.lim.waits, "waits"
	}
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	default:
		busy(w, fmt.Sprintf("%d %s in progress, as many as this daemon serves at once", cap(slots), what))
		return
	}
	if r.ContentLength != 0 {
		weight := r.ContentLength
		if weight < 0 { // unknown until read: it may take up to MaxBody
			weight = s.opts.MaxBody
		}
		if !s.lim.bodies.TryAcquire(weight) {
			busy(w, fmt.Sprintf("request bodies of %d bytes in progress, as much as this daemon holds at once", s.opts.MaxBodyInFlight))
			return
		}
		defer s.lim.bodies.Release(weight)
		r.Body = &deadlineBody{ReadCloser: http.MaxBytesReader(w, r.Body, s.opts.MaxBody), rc: rc}
	}
	next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, timeout: s.opts.WriteTimeout}, r)
}

func busy(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
	writeError(w, http.StatusServiceUnavailable, CodeBusy, fmt.Sprintf("busy: %s; retry after %ds", msg, retryAfter))
}

func tooLargeBody(max int64) string {
	return fmt.Sprintf("request body: larger than %d bytes, the most this daemon accepts", max)
}

// deadlineBody lifts the body's read deadline once the body has been read
// to its end, so that the server's watch for a client hanging up (which
// cancels the request's context) does not see a deadline go by while a
// long request, such as a wait, is in progress.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// deadlineWriter gives the response timeout to be written from its first
// byte, so that a client that stops reading frees its request slot while
// a request that takes long to compute still gets its answer.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	started bool
}

func (w *deadlineWriter) start() {
	if !w.started {
		w.started = true
		w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.start()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// limited is implemented by requests with limits beyond the body's size.
type limited interface {
	checkLimits(o *ServerOptions) error
}

func (r *SimilarRequest) checkLimits(o *ServerOptions) error {
	if len(r.Features) > o.MaxFeatures {
		return fmt.Errorf("features: %d fingerprints, more than the %d this daemon accepts in one query", len(r.Features), o.MaxFeatures)
	}
	return nil
}

// bodyError answers a failure to read a request body, if it is one, and
// reports whether it did.
func bodyError(w http.ResponseWriter, err error, o *ServerOptions) bool {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, tooLargeBody(mbe.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeError(w, http.StatusRequestTimeout, CodeTimeout, fmt.Sprintf("request body: not received within %s", o.BodyTimeout))
	default:
		return false
	}
	return true
}
