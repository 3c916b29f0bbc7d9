package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// Backend is what a Server answers from, by role. Query is required;
// Control and Content may be nil.
type Backend struct {
	// Query is the index (index.Querier, which *index.Index implements):
	// it answers /v1/info, /v1/similar, /v1/basis, /v1/groups and
	// /v1/dupes.
	Query index.Querier
	// Control runs the daemon: it answers /v1/status, /v1/roots,
	// /v1/rescan and /v1/wait. Without it those routes answer 404
	// not_found ("not supported by this daemon").
	Control Controller
	// Content reads the current bytes of indexed files, so that a query's
	// best candidates are checked against them (see ContentOpener).
	// Without it, matches keep the index's estimates.
	Content ContentOpener
	// Fleet is the daemon's link to the fleet index: it answers
	// /v1/fleet/check, /v1/fleet/forget and /v1/fleet/hosts, and the
	// fleet's part of /v1/similar, /v1/basis, /v1/dupes and
	// /v1/dirs/totals. Without it those routes, and those parts, answer
	// 404 no_fleet.
	Fleet Fleet
}

// Controller is the daemon's side of the control routes. It returns
// domain values; the server checks requests, filters what a caller may
// see and encodes the answers.
//
// Paths given to a Controller are absolute and lexically clean; the server
// checks that before calling it. Its methods are called concurrently, from
// the goroutines serving requests.
type Controller interface {
	// Status reports what the daemon is doing, with nothing left out: the
	// server redacts it for a caller who does not see every file.
	Status() ipc.Status
	// Roots reports every root, in the order the daemon keeps them.
	Roots() []ipc.RootStatus
	// AddRoot starts watching and indexing path and remembers it across
	// restarts. An error wrapping ErrBadRoot is the caller's fault (not a
	// directory, already a root, inside another root, ...) and is reported
	// as 400 bad_request with its message.
	AddRoot(path string) error
	// RemoveRoot stops watching path, drops its files from the index and
	// forgets it. Errors wrapping ErrBadRoot are reported as for AddRoot.
	RemoveRoot(path string) error
	// Rescan queues a reconcile of path, a root or a directory under one,
	// or of every root when path is "", and returns the directories
	// queued. Errors wrapping ErrBadRoot are reported as for AddRoot.
	Rescan(path string) ([]string, error)
	// Wait returns once every change made before the call has been applied
	// to the index, or after timeout with an error wrapping
	// context.DeadlineExceeded, or when ctx is done (the client went away,
	// or the daemon is stopping).
	Wait(ctx context.Context, timeout time.Duration) (WaitResult, error)
}

// WaitResult is how a Controller's Wait synchronised with the disk.
type WaitResult struct {
	// Cookies is the number of roots synchronised with a cookie file.
	Cookies int
	// Rescanned are the roots rescanned instead (no change events, or not
	// writable by the daemon).
	Rescanned []string
}

// ErrBadRoot marks a Controller error caused by the path a client named
// rather than by the daemon; wrap it with a message that says what is wrong.
var ErrBadRoot = errors.New("bad root")

// Options configure a Server. The zero value means the defaults; so
// does a zero or negative limit. The limits keep a client, careless or
// hostile, from holding the daemon's memory, goroutines or request slots
// for longer than the timeouts.
type Options struct {
	Version string
	Logger  *slog.Logger // nil discards

	// MaxBody caps a request body in bytes: a larger one is answered 413
	// too_large. Default DefaultMaxBody (64 MiB).
	MaxBody int64
	// Access says who may see and change what; nil means the process's
	// own user is the owner, with no operator group, on a shared socket.
	Access *Access
	// MaxFeatures caps the fingerprints of one query (413 too_large).
	// Default DefaultMaxFeatures (1,048,576).
	MaxFeatures int
	// MaxBodyInFlight caps the bytes of request bodies being read or
	// served at once, which bounds the memory queries take. A body is read
	// whole before its request takes a slot, and counts as it arrives, in
	// pieces of at most 1 MiB; a body that finds no room waits up to
	// QueueWait, then is answered 503 busy. It is at least MaxBody; default
	// twice MaxBody.
	MaxBodyInFlight int64
	// MaxConcurrent caps the requests in progress other than waits and
	// whole-index ones. A request that finds them all taken waits for one,
	// first come first served, for up to QueueWait, behind at most
	// MaxQueued others; beyond either it is answered 503 busy with a
	// Retry-After header. Defaults DefaultMaxConcurrent (16),
	// DefaultMaxQueued (64) and DefaultQueueWait (1 s).
	MaxConcurrent int
	MaxQueued     int
	QueueWait     time.Duration
	// MaxWhole caps the whole-index requests in progress (GET /v1/groups
	// and /v1/dupes, which read the whole index), with a queue of
	// MaxWholeQueued waiting up to WholeWait; they take no slot of
	// MaxConcurrent. An identical request of a caller with the same
	// credentials that arrives while one is queued shares its answer.
	// Defaults 2 (one user may hold one of them), 4 and 10 s.
	MaxWhole       int
	MaxWholeQueued int
	WholeWait      time.Duration
	// MaxWaits caps the POST /v1/wait requests in progress; one more is
	// answered 503 busy at once. Default DefaultMaxWaits (64).
	MaxWaits int
	// MaxConns caps the open connections: to make room for a new one, the
	// connection idle longest is closed. Default DefaultMaxConns (128).
	MaxConns int
	// Each user's share (see shares), so that one user, however many
	// requests they send, cannot take the daemon from the others: at
	// most MaxPerUser of the MaxConcurrent slots [4], MaxWholePerUser of
	// the MaxWhole [1], MaxWaitsPerUser of the MaxWaits [16],
	// MaxConnsPerUser of the MaxConns [32] and MaxBodyPerUser bytes of
	// the MaxBodyInFlight [half of it, at least MaxBody]. A user's
	// requests beyond their slots wait in a queue of their own, for up to
	// the same QueueWait or WholeWait in all; a connection beyond their
	// share closes their own idlest connection, or failing that its
	// request waits, within QueueWait, for one of theirs to close or fall
	// idle, and is then answered 503 busy and closed. A user is a uid
	// (peer credentials).
	MaxPerUser      int
	MaxWholePerUser int
	MaxWaitsPerUser int
	MaxConnsPerUser int
	MaxBodyPerUser  int64
	// HeaderTimeout bounds the reading of a request's header, from the
	// connection's opening or the request's first byte; BodyTimeout the
	// reading of its body; WriteTimeout the writing of each piece of a
	// response from when it is sent (a client that stops reading is cut
	// off; an answer not streamed is one piece); IdleTimeout how
	// long a connection is kept open between requests. Defaults 10 s, 30 s,
	// 30 s and 60 s.
	HeaderTimeout time.Duration
	BodyTimeout   time.Duration
	WriteTimeout  time.Duration
	IdleTimeout   time.Duration
	// MaxHeaderBytes caps a request's header (431). Default 64 KiB.
	MaxHeaderBytes int
	// RequestTimeout bounds the work of a request other than a wait or a
	// whole-index one, from when it takes its slot: past it, the work
	// stops and the answer is 504 timeout. Default
	// DefaultRequestTimeout (1 minute).
	RequestTimeout time.Duration
}

// Server serves the API for one Backend.
type Server struct {
	q       index.Querier
	ctl     Controller    // nil: the control routes answer 404
	fleet   Fleet         // nil: the fleet routes answer 404 no_fleet
	content ContentOpener // nil: matches are not checked
	opts    Options
	access  Access
	log     *slog.Logger
	mux     *http.ServeMux
	lim     *limiter
	conns   *connLimiter    // set by Serve
	base    context.Context // Serve's; nil when not serving (see stopping)
	works   works           // the named long requests running (GET /v1/work)
}

// New returns a server answering from b. It panics if b.Query is nil.
func New(b Backend, opts Options) *Server {
	if b.Query == nil {
		panic("server.New: Backend.Query is nil")
	}
	opts = opts.withDefaults()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{q: b.Query, ctl: b.Control, content: b.Content, fleet: b.Fleet, opts: opts, log: log, mux: http.NewServeMux(), lim: newLimiter(opts)}
	if opts.Access != nil {
		s.access = *opts.Access
	} else {
		s.access = Access{Owner: uint32(os.Geteuid())}
	}
	for _, rt := range s.routes() {
		s.mux.HandleFunc(rt.pattern, s.handle(rt))
	}
	s.mux.HandleFunc("/", s.noRoute)
	return s
}

// noRoute answers a request no route takes: 405 method_not_allowed, with
// the methods the path takes in Allow, when the path has routes for other
// methods; else 404 not_found.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := *r
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		writeError(w, http.StatusNotFound, ipc.CodeNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, http.StatusMethodNotAllowed, ipc.CodeMethod, fmt.Sprintf("%s %s: method not allowed; want %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Server", "sifd/"+s.opts.Version)
	s.limit(w, r, s.mux)
}

// Serve answers requests on ln until ctx is done, then stops accepting,
// cancels the requests in flight (their contexts derive from ctx: the
// queries stop and answer 503 unavailable, see cancel.go), waits for them
// for up to five seconds, and returns nil. It closes ln. At most MaxConns
// connections are open at once (see Options).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	cl := newConnLimiter(ln, s.opts.MaxConns, s.opts.MaxConnsPerUser, s.log)
	ln = cl
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.opts.HeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		// No ReadTimeout or WriteTimeout: they would cut off a wait that
		// rightly takes up to MaxWait. The body's and the response's
		// deadlines are set per request instead (see limit).
		ConnState:   cl.track,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return connContext(s.connContext(ctx, c), c)
		},
	}
	s.conns, s.base = cl, ctx
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: serve: %w", err)
	}
	return nil
}

func (s *Server) info(w http.ResponseWriter, r *http.Request, c *caller) {
	info := ipc.Info{Version: s.opts.Version, Params: s.q.Params(), SimiHash: s.simiHashFinder() != nil}
	if c.all { // the totals count every file
		st, err := s.q.Stats()
		if err != nil {
			s.fail(w, err)
			return
		}
		info.Index = statsOf(st)
	}
	writeJSON(w, info)
}

func statsOf(st index.Stats) ipc.IndexStats {
	return ipc.IndexStats{Files: st.Files, Bytes: st.Bytes, Contents: st.Contents, Postings: st.Postings, Fingerprints: st.Fingerprints, DiskBytes: st.DiskBytes}
}

func (s *Server) similar(w http.ResponseWriter, r *http.Request, c *caller, req *ipc.SimilarRequest) {
	switch req.By {
	case ipc.BySimiHash:
		s.similarBySimiHash(w, r, c, req)
		return
	case "", ipc.ByManber:
	default:
		s.badQuery(w, fmt.Errorf("by %q: want %q (the default) or %q", req.By, ipc.ByManber, ipc.BySimiHash))
		return
	}
	if req.Tolerances != nil {
		s.badQuery(w, fmt.Errorf("tolerances: only for by %q", ipc.BySimiHash))
		return
	}
	start := received(r)
	q, opts, err := s.parseSimilar(req)
	var eq *checkSide
	if err == nil && !req.Fast {
		eq, err = checkQuery(req.Size, req.Content, req.Windows, s.opts.MaxFeatures)
	}
	if err != nil {
		s.badQuery(w, err)
		return
	}
	if !req.Fleet && !s.checkPrefix(w, c, opts.PathPrefix) {
		return
	}
	if req.Fleet && !s.mayAskFleet(w, c) {
		return
	}
	fleetOpts := opts
	if v := c.view(); v != nil {
		opts.Visible = visibleTo(v)
	}
	limit := opts.Limit
	if eq != nil {
		opts.Limit = 0 // the check may reorder; the limit applies after it
		if s.content != nil {
			opts.WeakShared = CheckWeakShared // weak candidates are checked, or dropped
		}
	}
	res, err := s.q.Similar(r.Context(), q, opts)
	if err != nil {
		s.fail(w, err)
		return
	}
	var measured, dropped int
	var checkedMs []checked
	total := res.Total
	if eq != nil {
		checkedMs, measured, dropped, err = s.check(r.Context(), eq, q.Path, res.Matches, opts.Threshold, res.Template)
		eq.release()
		if err != nil {
			s.fail(w, err)
			return
		}
		total -= len(res.Matches) - len(checkedMs) // those the check dropped
		if limit > 0 && len(checkedMs) > limit {
			checkedMs = checkedMs[:limit]
		}
	} else {
		for _, m := range res.Matches {
			checkedMs = append(checkedMs, checked{Match: m, measure: ipc.MeasureEstimated})
		}
	}
	maxDF := opts.MaxDF
	if maxDF == 0 {
		maxDF = index.DefaultMaxDF
	}
	minF := opts.MinFeatures
	if minF == 0 {
		minF = index.DefaultMinFeatures
	}
	out := ipc.SimilarResponse{
		Matches:         make([]ipc.Match, 0, len(res.Matches)),
		Fingerprints:    res.QueryFeatures,
		Skipped:         res.Skipped,
		MaxDF:           maxDF,
		TooFew:          res.TooFew && (eq == nil || res.QueryFeatures == res.Skipped),
		MinFingerprints: minF,
		Candidates:      res.Candidates,
		Template:        res.Template,
		Total:           total,
		Checked:         measured,
		Dropped:         dropped,
	}
	if req.ListCommon {
		for _, f := range q.Sketch.Features {
			if res.SkippedHash(f.Hash) {
				out.Common = append(out.Common, fmt.Sprintf("%016x", f.Hash))
			}
		}
	}
	for _, m := range checkedMs {
		mo := matchOf(m.Match)
		mo.Measure, mo.Changed = m.measure, m.changed
		out.Matches = append(out.Matches, mo)
	}
	if req.Fleet {
		s.addFleet(r.Context(), &out, q, fleetOpts, limit)
	}
	out.ElapsedNs = time.Since(start).Nanoseconds()
	writeJSON(w, out)
}

// badQuery answers a query the daemon cannot take: 409 for fingerprints
// made with other parameters, 413 for one over a limit, else 400.
func (s *Server) badQuery(w http.ResponseWriter, err error) {
	var pe *paramsError
	var tl *tooLargeError
	switch {
	case errors.As(err, &pe):
		writeError(w, http.StatusConflict, ipc.CodeParamsMismatch, err.Error())
	case errors.As(err, &tl):
		writeError(w, http.StatusRequestEntityTooLarge, ipc.CodeTooLarge, err.Error())
	default:
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, err.Error())
	}
}

type paramsError struct{ got, want fingerprint.Params }

func (e *paramsError) Error() string {
	return fmt.Sprintf("params: the query was fingerprinted with %s but the index uses %s; ask /v1/info for the parameters", e.got, e.want)
}

func (s *Server) parseSimilar(req *ipc.SimilarRequest) (index.Query, index.QueryOptions, error) {
	var q index.Query
	var o index.QueryOptions
	if req.Params == (fingerprint.Params{}) {
		return q, o, errParamsMissing
	}
	want := s.q.Params()
	got, err := req.Params.Normalize()
	if err != nil {
		return q, o, fmt.Errorf("params: %w", err)
	}
	if got != want {
		return q, o, &paramsError{got: got, want: want}
	}
	path, strong, feats, err := req.Decoded()
	if err != nil {
		return q, o, err
	}
	if want.KnowsLengths() {
		for i, f := range feats {
			if f.Len == 0 {
				return q, o, fmt.Errorf("features[%d].len: must be at least 1 for scheme %s", i, want.Scheme)
			}
		}
	}
	threshold := index.DefaultThreshold
	if req.Threshold != nil {
		threshold = *req.Threshold / 100
	}
	switch {
	case threshold < 0 || threshold > 1 || math.IsNaN(threshold):
		return q, o, fmt.Errorf("threshold %v: want a percentage from 0 to 100", *req.Threshold)
	case req.Limit < 0:
		return q, o, fmt.Errorf("limit %d: must not be negative", req.Limit)
	case req.SizeRatio != 0 && req.SizeRatio < 1:
		return q, o, fmt.Errorf("size_ratio %v: want 0 (any size) or a factor of at least 1", req.SizeRatio)
	case req.MaxDF < -1:
		return q, o, fmt.Errorf("max_df %d: want -1 (no cap), 0 (default) or a count", req.MaxDF)
	}
	if threshold == 0 {
		threshold = math.SmallestNonzeroFloat64 // index.QueryOptions reads 0 as the default
	}
	prefix, err := absPath("path_prefix", req.PathPrefix)
	if err != nil {
		return q, o, err
	}
	q = index.Query{Path: path, Sketch: &fingerprint.Sketch{
		Summary:  fingerprint.Summary{Size: req.Size, Strong: strong, Type: req.Type},
		Params:   want,
		Features: feats,
	}}
	o = index.QueryOptions{
		Threshold:  threshold,
		Limit:      req.Limit,
		SizeRatio:  req.SizeRatio,
		SameExt:    req.SameExt,
		SameType:   req.SameType,
		PathPrefix: prefix,
		MaxDF:      req.MaxDF,
	}
	return q, o, nil
}

func matchOf(m index.Match) ipc.Match {
	p, raw := ipc.PathFields(m.Path)
	out := ipc.Match{
		Path:               p,
		PathRaw:            raw,
		Size:               m.FileMeta.Size,
		Containment:        pct(m.Containment),
		ReverseContainment: pct(m.ReverseContainment),
		Resemblance:        pct(m.Resemblance),
		Identical:          m.Identical,
		Type:               m.Type.String(),
		MtimeNs:            m.MtimeNs,
		Template:           m.Template,
	}
	if m.SharedBytes >= 0 {
		b := m.SharedBytes
		out.SharedBytes = &b
	}
	return out
}

// pct converts a share in 0..1 to a percentage rounded to 0.01.
func pct(x float64) float64 { return math.Round(x*10000) / 100 }

func (s *Server) status(w http.ResponseWriter, r *http.Request, c *caller) {
	st := s.ctl.Status()
	if v := c.view(); v != nil {
		st = redactStatus(st, v)
	}
	writeJSON(w, st)
}

// decode reads the request body, one JSON value and nothing after it, into
// v, refusing unknown fields. On failure it answers and returns false: 413
// too_large for a body over MaxBody or a request over its other limits
// (see checkLimits), 408 timeout for a body not received within BodyTimeout,
// else 400 bad_request.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	// limit caps the body at MaxBody; a Server's handler is only reached
	// through it.
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Read to the end, which also lifts the body's read deadline.
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the JSON value")
			if terr != nil && !isSyntaxError(terr) {
				err = terr
			}
		}
	}
	if err != nil {
		if bodyError(w, err, &s.opts) {
			return false
		}
		msg := "decoding request body: " + err.Error()
		if errors.Is(err, io.EOF) {
			msg = "decoding request body: empty; want a JSON object"
		}
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, msg)
		return false
	}
	if err := checkLimits(v, &s.opts); err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, ipc.CodeTooLarge, err.Error())
		return false
	}
	return true
}

func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// controlled reports whether the backend has a Controller, and answers
// 404 when it has none.
func (s *Server) controlled(w http.ResponseWriter, r *http.Request) bool {
	if s.ctl == nil {
		notSupported(w, r)
		return false
	}
	return true
}

// notSupported answers 404 for a route this daemon's backend cannot serve.
func notSupported(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, ipc.CodeNotFound, fmt.Sprintf("%s %s: not supported by this daemon", r.Method, r.URL.Path))
}

// reqPath decodes the path of a request (field names the JSON field, for
// errors) and checks it with absPath.
func reqPath(field, display, raw string) (string, error) {
	p, err := ipc.JoinPath(display, raw)
	if err != nil {
		return "", err // names path_raw
	}
	return absPath(field, p)
}

// rootsResponse wraps roots, with [] rather than null for none.
func rootsResponse(roots []ipc.RootStatus) ipc.RootsResponse {
	if roots == nil {
		roots = []ipc.RootStatus{}
	}
	return ipc.RootsResponse{Roots: roots}
}

func (s *Server) roots(w http.ResponseWriter, r *http.Request, who *caller) {
	writeJSON(w, s.rootsFor(who, s.ctl.Roots()))
}

// rootsFor answers a roots request: every root for a caller who sees every
// file, else those it can list, without their file counts.
func (s *Server) rootsFor(who *caller, roots []ipc.RootStatus) ipc.RootsResponse {
	if v := who.view(); v != nil {
		roots = redactRoots(roots, v)
	}
	return rootsResponse(roots)
}

func (s *Server) changeRoots(w http.ResponseWriter, r *http.Request, who *caller, req *ipc.RootsRequest) {
	c := s.ctl
	var change func(string) error
	switch req.Action {
	case "add":
		change = c.AddRoot
	case "remove":
		change = c.RemoveRoot
	case "":
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, `action: required; want "add" or "remove"`)
		return
	default:
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, fmt.Sprintf(`action %q: want "add" or "remove"`, req.Action))
		return
	}
	path, err := reqPath("path", req.Path, req.PathRaw)
	if err == nil && path == "" {
		err = errors.New("path: required; want the root's absolute path")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, err.Error())
		return
	}
	if !s.mayTouch(w, who, path) {
		return
	}
	if err := change(path); err != nil {
		s.failRoot(w, err)
		return
	}
	writeJSON(w, s.rootsFor(who, c.Roots()))
}

func (s *Server) rescan(w http.ResponseWriter, r *http.Request, who *caller, req *ipc.RescanRequest) {
	c := s.ctl
	path, err := reqPath("path", req.Path, req.PathRaw)
	if err != nil {
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, err.Error())
		return
	}
	if path != "" && !s.mayTouch(w, who, path) {
		return
	}
	if path == "" && !who.all {
		// Every root, as far as this caller can see them.
		var queued []ipc.FilePath
		v := who.view()
		for _, root := range c.Roots() {
			if !v.CanList(root.Path) {
				continue
			}
			dirs, err := c.Rescan(root.Path)
			if err != nil {
				s.failRoot(w, err)
				return
			}
			for _, d := range dirs {
				queued = append(queued, ipc.NewFilePath(d))
			}
		}
		writeJSON(w, ipc.RescanResponse{Queued: append(make([]ipc.FilePath, 0, len(queued)), queued...)})
		return
	}
	dirs, err := c.Rescan(path)
	if err != nil {
		s.failRoot(w, err)
		return
	}
	out := ipc.RescanResponse{Queued: make([]ipc.FilePath, 0, len(dirs))}
	for _, d := range dirs {
		out.Queued = append(out.Queued, ipc.NewFilePath(d))
	}
	writeJSON(w, out)
}

// wait holds the request until the backend has caught up with the disk. It
// passes on the request's context, so a client that hangs up stops the
// wait, as does the daemon stopping.
func (s *Server) wait(w http.ResponseWriter, r *http.Request, who *caller, req *ipc.WaitRequest) {
	start := received(r)
	c := s.ctl
	timeout := ipc.DefaultWait
	switch {
	case req.TimeoutMs < 0:
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest,
			fmt.Sprintf("timeout_ms %d: must not be negative (0 means %s)", req.TimeoutMs, ipc.DefaultWait))
		return
	case req.TimeoutMs > ipc.MaxWait.Milliseconds(): // compared before converting, which could overflow
		timeout = ipc.MaxWait
	case req.TimeoutMs > 0:
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	res, err := c.Wait(r.Context(), timeout)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, ipc.CodeTimeout, fmt.Sprintf(
			"changes were still being applied after waiting %s; see /v1/status for the queue", timeout))
		return
	case errors.Is(err, context.Canceled):
		// Either the client hung up, and nobody reads this, or the daemon
		// is stopping.
		s.log.Debug("wait canceled", "err", err)
		writeError(w, http.StatusServiceUnavailable, ipc.CodeUnavailable, "wait canceled: the daemon is shutting down")
		return
	case err != nil:
		s.failRoot(w, err)
		return
	}
	resp := ipc.WaitResponse{Cookies: res.Cookies}
	v := who.view()
	for _, p := range res.Rescanned {
		if v == nil || v.CanList(p) {
			resp.Rescanned = append(resp.Rescanned, ipc.NewFilePath(p))
		}
	}
	resp.ElapsedNs = time.Since(start).Nanoseconds()
	writeJSON(w, resp)
}

// mayTouch answers 403 and returns false when a caller who does not see
// every file names a directory it cannot list itself: nobody makes the
// daemon index, rescan or reveal a directory they cannot read.
func (s *Server) mayTouch(w http.ResponseWriter, who *caller, dir string) bool {
	if v := who.view(); v != nil && !v.CanList(dir) {
		writeError(w, http.StatusForbidden, ipc.CodeForbidden,
			fmt.Sprintf("%s: you (uid %d) cannot read this directory, so sifd will not index or rescan it for you", dir, who.cred.UID))
		return false
	}
	return true
}

// failRoot reports an error from a Controller: the client's fault when it
// wraps ErrBadRoot, else as fail does.
func (s *Server) failRoot(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrBadRoot) {
		// What is wrong with the path, without the marker's own words.
		msg := strings.TrimPrefix(err.Error(), ErrBadRoot.Error()+": ")
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, msg)
		return
	}
	s.fail(w, err)
}

// fail reports an error from the backend. A request canceled (see
// cancel.go) is answered 503 unavailable when the daemon is stopping, and
// not at all when its client went away.
func (s *Server) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, ipc.CodeTimeout, fmt.Sprintf("the request took more than %s, the most this daemon spends on one; it was stopped", s.opts.RequestTimeout))
	case canceled(err) && !s.stopping():
		s.log.Debug("request canceled: the client went away", "err", err)
	case canceled(err):
		stopped(w)
	case errors.Is(err, index.ErrBadQuery):
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, err.Error())
	case errors.Is(err, index.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, ipc.CodeUnavailable, "the daemon is shutting down")
	default:
		s.log.Error("request failed", "err", err)
		writeError(w, http.StatusInternalServerError, ipc.CodeInternal, err.Error())
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := ipc.MarshalJSONLine(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, ipc.CodeInternal, "encoding response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// errorBody is the body of an error answer (see package ipc).
type errorBody struct {
	Error *ipc.Error `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code ipc.Code, msg string) {
	b, _ := ipc.MarshalJSONLine(errorBody{Error: &ipc.Error{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
