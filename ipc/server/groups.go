package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// groups answers GET /v1/groups, streamed: each group is encoded and sent
// as the index yields it (index.Querier.EachGroup, which lists them in
// their final order holding only sort keys), so neither the answer nor its
// JSON is ever held whole. The bytes are those of one ipc.GroupsResponse
// encoded at once, elapsed_ns last, so a client that reads the whole
// answer sees no difference. The status is sent with the first piece:
// errors before it get their status and code as usual; an error after it
// cuts the connection, so a client cannot take a truncated answer for a
// whole one.
func (s *Server) groups(w http.ResponseWriter, r *http.Request, c *caller) {
	switch by := r.URL.Query().Get("by"); by {
	case "", ipc.ByManber:
	case ipc.BySimiHash:
		s.groupsBySimiHash(w, r, c)
		return
	default:
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, fmt.Sprintf("by %q: want %q (the default) or %q", by, ipc.ByManber, ipc.BySimiHash))
		return
	}
	start := received(r)
	opts, thr, ok := groupOptions(w, r)
	if !ok || !s.checkPrefix(w, c, opts.PathPrefix) {
		return
	}
	if v := c.view(); v != nil {
		opts.Visible = visibleTo(v)
	}
	pr, end, ok := s.works.track(w, r)
	if !ok {
		return
	}
	defer end()
	opts.Progress = pr
	st := newStream(w)
	st.buf = append(st.buf, `{"threshold":`...)
	st.buf = strconv.AppendFloat(st.buf, thr, 'f', -1, 64)
	st.buf = append(st.buf, `,"groups":[`...)
	n := 0
	err := s.q.EachGroup(r.Context(), opts, func(g index.Group) error {
		b, err := json.Marshal(wireGroup(g))
		if err != nil {
			return fmt.Errorf("encoding group of %s: %w", g.Reference.Path, err)
		}
		if n > 0 {
			st.buf = append(st.buf, ',')
		}
		n++
		st.buf = append(st.buf, b...)
		return st.maybeFlush()
	})
	// The work is done once the groups are made: a client that has read
	// the answer's end finds it no more.
	end()
	if err == nil {
		st.buf = append(st.buf, `],"elapsed_ns":`...)
		st.buf = strconv.AppendInt(st.buf, time.Since(start).Nanoseconds(), 10)
		st.buf = append(st.buf, "}\n"...)
		err = st.flush()
	}
	switch {
	case err == nil:
	case st.err != nil:
		// The client went away (or stopped reading): nobody to tell.
		s.log.Debug("groups answer not taken", "groups", n, "err", st.err)
	case !st.sent:
		s.fail(w, err)
	default:
		s.abortStream(st, w, fmt.Errorf("groups answer cut short after %d groups: %w", n, err))
	}
}

// abortStream ends a streamed answer that failed: with its status and
// code when nothing was sent yet, else by cutting the connection, so that
// the client cannot take what it got for the whole answer.
func (s *Server) abortStream(st *stream, w http.ResponseWriter, err error) {
	if !st.sent {
		s.fail(w, err)
		return
	}
	if canceled(err) {
		s.log.Debug("answer cut short", "err", err)
	} else {
		s.log.Error("answer cut short", "err", err)
	}
	panic(http.ErrAbortHandler)
}

// groupOptions reads the parameters of a groups request, answering 400
// and returning false when one is wrong. thr is the threshold in percent.
func groupOptions(w http.ResponseWriter, r *http.Request) (opts index.GroupOptions, thr float64, ok bool) {
	q := r.URL.Query()
	opts = index.GroupOptions{SameType: q.Get("all_types") == "", Links: q.Has("links")}
	var err error
	if opts.PathPrefix, err = absPath("prefix", q.Get("prefix")); err != nil {
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, err.Error())
		return opts, 0, false
	}
	thr = 25.0
	if v := q.Get("threshold"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 100) { // NaN too
			writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, fmt.Sprintf("threshold %q: want a percentage above 0, at most 100", v))
			return opts, 0, false
		}
		thr = f
	}
	opts.Threshold = thr / 100
	if v := q.Get("max_df"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 {
			writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, fmt.Sprintf("max_df %q: want -1 (no cap), 0 (default) or a count", v))
			return opts, 0, false
		}
		opts.MaxDF = n
	}
	if v := q.Get("min_shared"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, fmt.Sprintf("min_shared %q: want a count of at least 1", v))
			return opts, 0, false
		}
		opts.MinShared = n
	}
	return opts, thr, true
}

func wireGroup(g index.Group) ipc.Group {
	wg := ipc.Group{Reference: groupFile(g.Reference), Members: make([]ipc.GroupFile, 0, len(g.Members))}
	for _, m := range g.Members {
		wg.Members = append(wg.Members, groupFile(m))
	}
	for _, l := range g.Links {
		wg.Links = append(wg.Links, ipc.GroupLink{A: l.A, B: l.B, AInB: pct(l.AInB), BInA: pct(l.BInA)})
	}
	return wg
}

func groupFile(m index.GroupMember) ipc.GroupFile {
	p, raw := ipc.PathFields(m.Path)
	g := ipc.GroupFile{Path: p, PathRaw: raw, Size: m.FileMeta.Size, Percent: pct(m.Percent), Template: m.Template}
	if m.Via != "" {
		v := ipc.NewFilePath(m.Via)
		g.Via = &v
	}
	for _, c := range m.Copies {
		g.Copies = append(g.Copies, ipc.NewFilePath(c))
	}
	return g
}

// Pieces of a streamed answer: one is sent once it holds streamPiece
// bytes, or once streamEvery has passed since the last, so a client sees
// a slow answer as it comes.
const (
	streamPiece = 32 << 10
	streamEvery = 100 * time.Millisecond
)

// stream sends a JSON answer in pieces: the caller appends to buf and
// calls maybeFlush after each item, and flush at the end. The status (200)
// and Content-Type go with the first piece.
type stream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	buf  []byte
	last time.Time
	sent bool  // a piece was sent: the status is committed
	err  error // the client's side failed
}

func newStream(w http.ResponseWriter) *stream {
	return &stream{w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, streamPiece+streamPiece/4), last: time.Now()}
}

func (st *stream) maybeFlush() error {
	if len(st.buf) >= streamPiece || time.Since(st.last) >= streamEvery {
		return st.flush()
	}
	return nil
}

// flush sends what buf holds.
func (st *stream) flush() error {
	if st.err != nil {
		return st.err
	}
	if !st.sent {
		st.sent = true
		st.w.Header().Set("Content-Type", "application/json")
		st.w.WriteHeader(http.StatusOK)
	}
	if _, err := st.w.Write(st.buf); err != nil {
		st.err = err
		return err
	}
	st.buf, st.last = st.buf[:0], time.Now()
	if err := st.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		st.err = err
		return err
	}
	return nil
}
