package server

import (
	"net/http"
)

// route is one route of the API: its pattern (method and path) and what
// the prologue every route shares (handle) checks before serving it.
type route struct {
	pattern string
	// change names what the route changes, for the 403 answered to a
	// caller who may not change the daemon; "" for a route anyone may ask.
	change string
	// control: the route is answered by the Controller, so a daemon
	// without one answers 404.
	control bool
	serve   handler
}

// handler serves a request once the prologue has passed; c is its caller.
type handler func(w http.ResponseWriter, r *http.Request, c *caller)

// routes lists the routes of the API, each once. ipc/doc.go and
// ipc/API.md list the same (routes_test.go holds them to it).
func (s *Server) routes() []route {
	return []route{
		{pattern: "GET /v1/info", serve: s.info},
		{pattern: "POST /v1/similar", serve: withBody(s, s.similar)},
		{pattern: "POST /v1/basis", serve: withBody(s, s.basis)},
		{pattern: "GET /v1/groups", serve: s.groups},
		{pattern: "GET /v1/dupes", serve: s.dupes},
		{pattern: "POST /v1/dirs/totals", serve: withBody(s, s.dirTotals)},
		{pattern: "GET /v1/status", control: true, serve: s.status},
		{pattern: "GET /v1/work", serve: s.work},
		{pattern: "GET /v1/roots", control: true, serve: s.roots},
		{pattern: "POST /v1/roots", change: "changing the roots", control: true, serve: withBody(s, s.changeRoots)},
		{pattern: "POST /v1/rescan", change: "asking for a rescan", control: true, serve: withBody(s, s.rescan)},
		{pattern: "POST /v1/wait", control: true, serve: withBody(s, s.wait)},
		{pattern: "GET /v1/fleet/check", change: "checking the fleet index", serve: s.fleetCheck},
		{pattern: "POST /v1/fleet/forget", change: "forgetting a fleet host", serve: withBody(s, s.fleetForget)},
		{pattern: "GET /v1/fleet/hosts", serve: s.fleetHosts},
	}
}

// handle is the prologue every route shares, in this order: it identifies
// the caller (403 forbidden when its credentials are unknown on a shared
// socket, see identify), refuses a route's change to a caller who may not
// make it (403 forbidden, see authorize), answers a control route on a
// daemon without a Controller 404 not_found, and then serves.
func (s *Server) handle(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := s.identify(w, r)
		if c == nil {
			return
		}
		if rt.change != "" && !s.authorize(w, c, rt.change) {
			return
		}
		if rt.control && !s.controlled(w, r) {
			return
		}
		rt.serve(w, r, c)
	}
}

// withBody makes a handler of h: it decodes the request's body into a new
// Req (see decode, which answers a body it cannot take) and passes it on.
func withBody[Req any](s *Server, h func(w http.ResponseWriter, r *http.Request, c *caller, req *Req)) handler {
	return func(w http.ResponseWriter, r *http.Request, c *caller) {
		var req Req
		if !s.decode(w, r, &req) {
			return
		}
		h(w, r, c, &req)
	}
}
