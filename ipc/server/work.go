package server

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// works are the long requests running that their clients named
// (request_id), with how far each has come, for GET /v1/work.
type works struct {
	m sync.Map // request id → *workItem
}

type workItem struct {
	start time.Time
	pr    *index.Progress
}

// track reads the request_id of r: with none, it returns a nil Progress
// and a no-op end; with a valid one, a Progress that GET /v1/work reports
// on until end is called; with a bad one it answers 400 and returns false.
// An id already running is not taken over: the new request is not
// tracked.
func (ws *works) track(w http.ResponseWriter, r *http.Request) (pr *index.Progress, end func(), ok bool) {
	id := r.URL.Query().Get("request_id")
	if id == "" {
		return nil, func() {}, true
	}
	if !ipc.ValidRequestID(id) {
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, fmt.Sprintf("request_id %q: want 1 to 64 letters, digits and dashes", id))
		return nil, nil, false
	}
	it := &workItem{start: received(r), pr: new(index.Progress)}
	if _, taken := ws.m.LoadOrStore(id, it); taken {
		return nil, func() {}, true
	}
	return it.pr, func() { ws.m.CompareAndDelete(id, it) }, true
}

// work answers GET /v1/work?id=ID: how far the request named ID has come,
// 404 not_found for one that is not running. Anyone who may connect may
// ask: an id is random, and the answer names no file.
func (s *Server) work(w http.ResponseWriter, r *http.Request, _ *caller) {
	id := r.URL.Query().Get("id")
	v, ok := s.works.m.Load(id)
	if !ok {
		writeError(w, http.StatusNotFound, ipc.CodeNotFound, fmt.Sprintf("id %q: no such request running", id))
		return
	}
	it := v.(*workItem)
	step, done, since := it.pr.Step()
	out := ipc.Work{ID: id, Step: step, Done: done, ElapsedNs: time.Since(it.start).Nanoseconds()}
	if !since.IsZero() {
		out.StepElapsedNs = time.Since(since).Nanoseconds()
	}
	writeJSON(w, out)
}
