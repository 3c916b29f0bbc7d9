package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/sif-dev/sif/ipc"
)

// Fleet is the daemon's side of the fleet routes: its link to the fleet
// index (package daemon/fleet). Its methods are called concurrently.
type Fleet interface {
	// Check compares this host's rows in the fleet with its index.
	Check(ctx context.Context) (*ipc.FleetCheck, error)
	// Forget removes host from the fleet; an error wrapping ErrNoHost
	// says there is no such host.
	Forget(ctx context.Context, host string) (*ipc.FleetForgetResponse, error)
}

// ErrNoHost is wrapped by Fleet.Forget's error for a host the fleet does
// not know; it is answered 404 not_found.
var ErrNoHost = errors.New("no such host in the fleet")

// noFleet answers 404 no_fleet for a fleet route on a daemon without one.
func (s *Server) noFleet(w http.ResponseWriter) bool {
	if s.fleet != nil {
		return false
	}
	writeError(w, http.StatusNotFound, ipc.CodeNoFleet, "this sifd has no fleet: add a [fleet] table to its configuration (see the operator's guide)")
	return true
}

// fleetFailed answers an error of the fleet database.
func (s *Server) fleetFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrNoHost) {
		writeError(w, http.StatusNotFound, ipc.CodeNotFound, err.Error())
		return
	}
	s.log.Warn("fleet request failed", "err", err)
	writeError(w, http.StatusServiceUnavailable, ipc.CodeFleetDown, "fleet unavailable: "+err.Error())
}

func (s *Server) fleetCheck(w http.ResponseWriter, r *http.Request, _ *caller) {
	if s.noFleet(w) {
		return
	}
	rep, err := s.fleet.Check(r.Context())
	if err != nil {
		s.fleetFailed(w, err)
		return
	}
	writeJSON(w, rep)
}

func (s *Server) fleetForget(w http.ResponseWriter, r *http.Request, _ *caller, req *ipc.FleetForgetRequest) {
	if s.noFleet(w) {
		return
	}
	host := strings.TrimSpace(req.Host)
	if host == "" {
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, "host: empty: name the host to forget")
		return
	}
	out, err := s.fleet.Forget(r.Context(), host)
	if err != nil {
		s.fleetFailed(w, err)
		return
	}
	writeJSON(w, out)
}
