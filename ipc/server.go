package ipc

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// Backend is what the server needs from the daemon: an index to query and
// a status report.
type Backend interface {
	index.Querier
	Status() Status
}

// ServerOptions configure a Server. The zero value means the defaults.
type ServerOptions struct {
	Version string
	Logger  *slog.Logger // nil discards
	// MaxBody caps a request body in bytes; 0 means 64 MiB.
	MaxBody int64
}

// Server serves the API for one Backend.
type Server struct {
	b    Backend
	opts ServerOptions
	log  *slog.Logger
	mux  *http.ServeMux
}

// NewServer returns a server for b.
func NewServer(b Backend, opts ServerOptions) *Server {
	if opts.MaxBody == 0 {
		opts.MaxBody = 64 << 20
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{b: b, opts: opts, log: log, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /v1/info", s.info)
	s.mux.HandleFunc("POST /v1/similar", s.similar)
	s.mux.HandleFunc("GET /v1/groups", s.groups)
	s.mux.HandleFunc("GET /v1/dupes", s.dupes)
	s.mux.HandleFunc("GET /v1/status", s.status)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	return s
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Server", "sifd/"+s.opts.Version)
	s.mux.ServeHTTP(w, r)
}

// Serve answers requests on ln until ctx is done, then stops accepting,
// lets requests in flight finish for up to five seconds, and returns nil.
// It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("ipc: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("ipc: serve: %w", err)
	}
	return nil
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	st, err := s.b.Stats()
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, Info{Version: s.opts.Version, Params: s.b.Params(), Index: statsOf(st)})
}

func statsOf(st index.Stats) IndexStats {
	return IndexStats{Files: st.Files, Bytes: st.Bytes, Postings: st.Features, Fingerprints: st.Fingerprints, DiskBytes: st.DiskBytes}
}

func (s *Server) similar(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req SimilarRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, s.opts.MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "decoding request body: "+err.Error())
		return
	}
	q, opts, err := s.parseSimilar(&req)
	if err != nil {
		var pe *paramsError
		if errors.As(err, &pe) {
			writeError(w, http.StatusConflict, CodeParamsMismatch, err.Error())
			return
		}
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	res, err := s.b.Similar(q, opts)
	if err != nil {
		s.fail(w, err)
		return
	}
	maxDF := opts.MaxDF
	if maxDF == 0 {
		maxDF = index.DefaultMaxDF
	}
	minF := opts.MinFeatures
	if minF == 0 {
		minF = index.DefaultMinFeatures
	}
	out := SimilarResponse{
		Matches:         make([]Match, 0, len(res.Matches)),
		Fingerprints:    res.QueryFeatures,
		Skipped:         res.Skipped,
		MaxDF:           maxDF,
		TooFew:          res.TooFew,
		MinFingerprints: minF,
		Candidates:      res.Candidates,
	}
	for _, m := range res.Matches {
		out.Matches = append(out.Matches, matchOf(m))
	}
	out.ElapsedNs = time.Since(start).Nanoseconds()
	writeJSON(w, out)
}

type paramsError struct{ got, want fingerprint.Params }

func (e *paramsError) Error() string {
	return fmt.Sprintf("params: the query was fingerprinted with %s but the index uses %s; ask /v1/info for the parameters", e.got, e.want)
}

func (s *Server) parseSimilar(req *SimilarRequest) (index.Query, index.QueryOptions, error) {
	var q index.Query
	var o index.QueryOptions
	want := s.b.Params()
	got, err := req.Params.Normalize()
	if err != nil {
		return q, o, fmt.Errorf("params: %w", err)
	}
	if got != want {
		return q, o, &paramsError{got: got, want: want}
	}
	path, err := JoinPath(req.Path, req.PathRaw)
	if err != nil {
		return q, o, err
	}
	if req.Size < 0 {
		return q, o, fmt.Errorf("size %d: must not be negative", req.Size)
	}
	var strong [32]byte
	if len(req.Strong) != 64 {
		return q, o, fmt.Errorf("strong %q: want 64 hex digits (SHA-256)", req.Strong)
	}
	if _, err := hex.Decode(strong[:], []byte(req.Strong)); err != nil {
		return q, o, fmt.Errorf("strong %q: want 64 hex digits (SHA-256)", req.Strong)
	}
	feats, err := DecodeFeatures(req.Features)
	if err != nil {
		return q, o, err
	}
	for i := 1; i < len(feats); i++ {
		if feats[i].Hash <= feats[i-1].Hash {
			return q, o, fmt.Errorf("features[%d]: hashes must be sorted and distinct", i)
		}
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
		PathPrefix: req.PathPrefix,
		MaxDF:      req.MaxDF,
	}
	return q, o, nil
}

func matchOf(m index.Match) Match {
	p, raw := PathFields(m.Path)
	out := Match{
		Path:               p,
		PathRaw:            raw,
		Size:               m.FileMeta.Size,
		Containment:        pct(m.Containment),
		ReverseContainment: pct(m.ReverseContainment),
		Resemblance:        pct(m.Resemblance),
		Identical:          m.Identical,
		Type:               m.Type.String(),
		MtimeNs:            m.MtimeNs,
	}
	if m.SharedBytes >= 0 {
		b := m.SharedBytes
		out.SharedBytes = &b
	}
	return out
}

// pct converts a share in 0..1 to a percentage rounded to 0.01.
func pct(x float64) float64 { return math.Round(x*10000) / 100 }

func (s *Server) groups(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	q := r.URL.Query()
	opts := index.GroupOptions{SameType: q.Get("all_types") == "", PathPrefix: q.Get("prefix")}
	thr := 25.0
	if v := q.Get("threshold"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 100 {
			writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("threshold %q: want a percentage above 0, at most 100", v))
			return
		}
		thr = f
	}
	opts.Threshold = thr / 100
	if v := q.Get("max_df"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 {
			writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("max_df %q: want -1 (no cap), 0 (default) or a count", v))
			return
		}
		opts.MaxDF = n
	}
	if v := q.Get("min_shared"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("min_shared %q: want a count of at least 1", v))
			return
		}
		opts.MinShared = n
	}
	gs, err := s.b.Groups(opts)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := GroupsResponse{Threshold: thr, Groups: make([]Group, 0, len(gs))}
	for _, g := range gs {
		wg := Group{Reference: groupFile(g.Reference), Members: make([]GroupFile, 0, len(g.Members))}
		for _, m := range g.Members {
			wg.Members = append(wg.Members, groupFile(m))
		}
		out.Groups = append(out.Groups, wg)
	}
	out.ElapsedNs = time.Since(start).Nanoseconds()
	writeJSON(w, out)
}

func groupFile(m index.GroupMember) GroupFile {
	p, raw := PathFields(m.Path)
	g := GroupFile{Path: p, PathRaw: raw, Size: m.FileMeta.Size, Percent: pct(m.Percent)}
	if m.Via != "" {
		v := NewFilePath(m.Via)
		g.Via = &v
	}
	for _, c := range m.Copies {
		g.Copies = append(g.Copies, NewFilePath(c))
	}
	return g
}

func (s *Server) dupes(w http.ResponseWriter, r *http.Request) {
	sets, err := s.b.Dupes(r.URL.Query().Get("prefix"))
	if err != nil {
		s.fail(w, err)
		return
	}
	out := DupesResponse{Sets: make([]DupeSet, 0, len(sets))}
	for _, d := range sets {
		set := DupeSet{Size: d.Size, Strong: hex.EncodeToString(d.Strong[:])}
		for _, p := range d.Paths {
			set.Files = append(set.Files, NewFilePath(p))
		}
		out.Sets = append(out.Sets, set)
	}
	writeJSON(w, out)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, s.b.Status())
}

// fail reports an error from the backend.
func (s *Server) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, index.ErrBadQuery):
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
	case errors.Is(err, index.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "the daemon is shutting down")
	default:
		s.log.Error("request failed", "err", err)
		writeError(w, http.StatusInternalServerError, CodeInternal, err.Error())
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := MarshalJSONLine(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, CodeInternal, "encoding response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, code Code, msg string) {
	b, _ := MarshalJSONLine(errorBody{Error: &Error{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
