package ipc

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimiter is a listener that keeps at most max connections open. When
// a connection arrives while max are open, the one that has waited longest
// without a request in progress (idle between requests, or still sending
// its first request's header) is closed to make room; when every open
// connection has a request in progress, the new one waits, unserved and
// costing one socket, until one of them ends, and further ones wait in the
// kernel's listen queue. So idle connections, however many, cost at most
// max goroutines and buffers, and cannot keep a new client out.
//
// Its track method must be the http.Server's ConnState hook.
type connLimiter struct {
	net.Listener
	max int
	log *slog.Logger

	mu    sync.Mutex
	conns map[net.Conn]*connInfo // open connections accepted here
	freed chan struct{}          // signalled when a connection closes
	done  chan struct{}          // closed by Close
	once  sync.Once
}

type connInfo struct {
	state    http.ConnState
	since    time.Time // of the last state change
	evicting bool      // closed by Accept to make room; not yet seen closed
}

func newConnLimiter(ln net.Listener, max int, log *slog.Logger) *connLimiter {
	return &connLimiter{
		Listener: ln,
		max:      max,
		log:      log,
		conns:    make(map[net.Conn]*connInfo),
		freed:    make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
}

// Accept returns the next connection once fewer than max are open.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			l.conns[c] = &connInfo{state: http.StateNew, since: time.Now()}
			l.mu.Unlock()
			return c, nil
		}
		victim, info := l.idlestLocked()
		if victim != nil {
			info.evicting = true
		}
		l.mu.Unlock()
		if victim != nil {
			l.log.Debug("closing an idle connection to make room", "open", l.max, "state", info.state.String(), "for", time.Since(info.since).Round(time.Millisecond))
			victim.Close()
		}
		select {
		case <-l.freed:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// idlestLocked returns the connection that has been new or idle longest,
// or nil if every connection has a request in progress.
func (l *connLimiter) idlestLocked() (net.Conn, *connInfo) {
	var victim net.Conn
	var vi *connInfo
	for c, ci := range l.conns {
		if ci.evicting || (ci.state != http.StateNew && ci.state != http.StateIdle) {
			continue
		}
		if vi == nil || ci.since.Before(vi.since) {
			victim, vi = c, ci
		}
	}
	return victim, vi
}

// track follows the state of the connections; see http.Server.ConnState.
func (l *connLimiter) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ci, ok := l.conns[c]
	if !ok {
		return
	}
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
		select {
		case l.freed <- struct{}{}:
		default:
		}
	default:
		ci.state, ci.since = st, time.Now()
	}
}

// open returns the number of open connections.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Close closes the listener and makes a waiting Accept return.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}
