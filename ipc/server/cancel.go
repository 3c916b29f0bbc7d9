package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/sif-dev/sif/ipc"
)

// Cancellation. A request's context is done when its client hangs up
// (net/http watches the connection once the body is read whole; limit
// lifts the body's read deadline so that the watch does not end with it)
// or when the daemon stops (Serve's context). Every handler passes it down
// to the work: the index's queries (index.Querier), the check of a query's
// candidates, which reads each through ipc.ContextReader, and the estimate
// of each basis candidate. Work for a client that has gone stops within a
// read of a candidate (64 KiB; one read to its end runs up to
// MaxCheckSize) or a few hundred keys of the index, and nothing is
// written back: there is nobody to read it (see gone). A whole-index
// answer shared by several clients stops once every one of them has gone
// (see flights).

// canceled reports whether err is a request's context being done: its
// client went away, or the daemon is stopping. (Request contexts have no
// deadline.)
func canceled(err error) bool { return errors.Is(err, context.Canceled) }

// stopping reports whether the server is stopping (Serve's context is
// done): requests then end with 503 unavailable rather than in silence.
func (s *Server) stopping() bool {
	return s.base != nil && s.base.Err() != nil
}

// stopped answers a request canceled because the daemon stops.
func stopped(w http.ResponseWriter) {
	writeError(w, http.StatusServiceUnavailable, ipc.CodeUnavailable, "request canceled: the daemon is shutting down")
}

// leave counts a client of f out, when its request's context is done;
// once none is left, the answer's computation is canceled, and a flight
// still pending is forgotten, so that no request joins it any more.
func (fs *flights) leave(f *flight) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f.left--; f.left > 0 {
		return
	}
	f.cancel()
	if fs.pending[f.key] == f {
		delete(fs.pending, f.key)
	}
}
