package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sif-dev/sif/index"
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
	// Host is this host's name in the fleet.
	Host() string
	// Similar answers q from the fleet: the files of other hosts that
	// match, best first, each with its Host and Measure set. It returns
	// within the fleet's timeout, with an error when the database did not
	// answer.
	Similar(ctx context.Context, q index.Query, opts index.QueryOptions) ([]ipc.Match, error)
	// SimiFind answers q by SimiHash from the fleet: the files of other
	// hosts SimiFind calls similar, nearest first, each with its Host,
	// Measure and SimiHash set. It returns within the fleet's timeout, with
	// an error when the database did not answer.
	SimiFind(ctx context.Context, q index.SimiQuery) ([]ipc.Match, error)
	// Dupes returns the sets of identical files across the fleet (each
	// file with its Host), the most redundant bytes first; with prefix,
	// those with a file of this host under it.
	Dupes(ctx context.Context, prefix string) ([]ipc.DupeSet, error)
	// Hosts returns the hosts of the fleet heard from within its silence,
	// with their published roots, by name.
	Hosts(ctx context.Context) ([]ipc.FleetHost, error)
	// DirTotals returns, for each of dirs (on other hosts) in order, the
	// files and bytes its host published under it, each count stopped
	// after maxFiles (at least 1) files and then Truncated. It returns
	// within the fleet's timeout, with an error when the database did not
	// answer.
	DirTotals(ctx context.Context, dirs []ipc.HostDir, maxFiles int) ([]ipc.DirTotal, error)
}

// ErrNoHost is wrapped by Fleet.Forget's error for a host the fleet does
// not know; it is answered 404 not_found.
var ErrNoHost = errors.New("no such host in the fleet")

// mayAskFleet answers 403 and returns false unless c may ask the fleet,
// and 404 no_fleet when there is none.
func (s *Server) mayAskFleet(w http.ResponseWriter, c *caller) bool {
	if s.noFleet(w) {
		return false
	}
	if c.fleet {
		return true
	}
	msg := fmt.Sprintf("asking the fleet is for root, the daemon's user (uid %d)", s.access.Owner)
	if len(s.access.FleetAskers) > 0 {
		msg += fmt.Sprintf(" or members of the fleet's ask group (gid %d)", s.access.FleetAskers[0])
	}
	msg += fmt.Sprintf("; you are uid %d: a fleet answer names files on other hosts", c.cred.UID)
	writeError(w, http.StatusForbidden, ipc.CodeForbidden, msg)
	return false
}

// addFleet adds to out the fleet's answer to q: other hosts' matches
// merged with this host's (given its name), best first, cut to limit. A
// fleet that does not answer leaves this host's matches, and the error in
// out.FleetError.
func (s *Server) addFleet(ctx context.Context, out *ipc.SimilarResponse, q index.Query, opts index.QueryOptions, limit int) {
	host := s.fleet.Host()
	for i := range out.Matches {
		out.Matches[i].Host = host
	}
	opts.Visible = nil // the trust statement: fleet callers see published files' hosts, paths and sizes
	remote, err := s.fleet.Similar(ctx, q, opts)
	if err != nil {
		s.log.Warn("fleet query failed", "err", err)
		out.FleetError = &ipc.Error{Code: ipc.CodeFleetDown, Message: "fleet unavailable: " + err.Error()}
		return
	}
	out.Matches = append(out.Matches, remote...)
	out.Total += len(remote)
	// A template query's family on other hosts (Match.Template).
	out.Template = out.Template || slices.ContainsFunc(remote, func(m ipc.Match) bool { return m.Template })
	slices.SortStableFunc(out.Matches, func(a, b ipc.Match) int {
		if a.Identical != b.Identical {
			if a.Identical {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.Containment, a.Containment)
	})
	if limit > 0 && len(out.Matches) > limit {
		out.Matches = out.Matches[:limit]
	}
}

// addFleetSimi adds to out the fleet's answer to q by SimiHash: other
// hosts' matches merged with this host's (given its name), nearest first,
// cut to q.Limit. A fleet that does not answer leaves this host's
// matches, and the error in out.FleetError.
func (s *Server) addFleetSimi(ctx context.Context, out *ipc.SimilarResponse, q index.SimiQuery) {
	host := s.fleet.Host()
	for i := range out.Matches {
		out.Matches[i].Host = host
	}
	q.Visible = nil // the trust statement, as in addFleet
	remote, err := s.fleet.SimiFind(ctx, q)
	if err != nil {
		s.log.Warn("fleet query failed", "err", err)
		out.FleetError = &ipc.Error{Code: ipc.CodeFleetDown, Message: "fleet unavailable: " + err.Error()}
		return
	}
	out.Matches = append(out.Matches, remote...)
	out.Total += len(remote)
	slices.SortStableFunc(out.Matches, func(a, b ipc.Match) int {
		return cmp.Compare(a.SimiHash.SumDistance, b.SimiHash.SumDistance)
	})
	if q.Limit > 0 && len(out.Matches) > q.Limit {
		out.Matches = out.Matches[:q.Limit]
	}
}

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

// fleetHosts answers GET /v1/fleet/hosts: this host's name, and the hosts
// of the fleet with their published roots; a database that fails leaves
// the name and the error in fleet_error.
func (s *Server) fleetHosts(w http.ResponseWriter, r *http.Request, c *caller) {
	if !s.mayAskFleet(w, c) {
		return
	}
	out := ipc.FleetHostsResponse{Host: s.fleet.Host(), Hosts: []ipc.FleetHost{}}
	hosts, err := s.fleet.Hosts(r.Context())
	if err != nil {
		s.log.Warn("fleet hosts failed", "err", err)
		out.FleetError = &ipc.Error{Code: ipc.CodeFleetDown, Message: "fleet unavailable: " + err.Error()}
	} else if hosts != nil {
		out.Hosts = hosts
	}
	writeJSON(w, out)
}
