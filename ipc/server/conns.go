package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sif-dev/sif/ipc/peer"
)

// connLimiter is a listener that keeps at most max connections open. When
// a connection arrives while max are open, the one that has waited longest
// without a request in progress (idle between requests, or still sending
// its first request's header) is closed to make room, or failing that the
// one that has been sending its request's body longest; when every open
// connection has a request being served, the new one waits, unserved and
// costing one socket, until one of them ends, and further ones wait in the
// kernel's listen queue. So idle and slow connections, however many, cost
// at most max goroutines and buffers, and cannot keep a new client out.
//
// Each user (uid, from the peer credentials, learned once per connection)
// keeps at most perUser of them: a new connection of a user who has
// perUser open closes that user's own idlest one, as above, but not one
// that connected less than newGrace ago and has not yet sent its request
// (its client is about to); failing that it is let in marked over its
// share, and its request waits for room in the share (admit): one of the
// user's connections closing or falling idle, which it then closes. So
// one user's connections, however many, cannot make another's wait, and
// many clients of one user, each on a connection of its own, take turns
// instead of closing each other's fresh connections in a storm.
//
// Its track method must be the http.Server's ConnState hook.
type connLimiter struct {
	net.Listener
	max     int
	perUser int
	log     *slog.Logger

	mu    sync.Mutex
	conns map[net.Conn]*connInfo // open connections accepted here
	users map[string]int         // per user, their open connections not being evicted
	// evicting counts the conns closed by Accept to make room, not yet
	// seen closed by track.
	evicting int
	freed    chan struct{} // signalled when a connection closes
	// room, made by a connection waiting in admit, is closed when a
	// connection closes or falls idle: when it may find room.
	room chan struct{}
	done chan struct{} // closed by Close
	once sync.Once
}

// peerCred learns a connection's peer credentials (a variable for tests,
// which tell users apart by their sockets' names).
var peerCred = peer.FromConn

type connInfo struct {
	state    http.ConnState
	since    time.Time // of the last state change, or of the body's start
	body     bool      // its request's body is being read (see readingBody)
	evicting bool      // closed by Accept to make room; not yet seen closed
	who      string    // the user, see caller.who
	cred     peer.Cred // the peer's credentials, unless credErr
	credErr  error
	over     bool // let in beyond its user's share, not counted in it until admitted
}

// newGrace is how long a new connection that has not sent its request is
// kept from being closed for another of its user's.
const newGrace = time.Second

func newConnLimiter(ln net.Listener, maxConns, perUser int, log *slog.Logger) *connLimiter {
	return &connLimiter{
		Listener: ln,
		max:      maxConns,
		perUser:  max(perUser, 1),
		log:      log,
		conns:    make(map[net.Conn]*connInfo),
		users:    make(map[string]int),
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
	ci := &connInfo{state: http.StateNew}
	ci.cred, ci.credErr = peerCred(c)
	ci.who = "unknown user"
	if ci.credErr == nil {
		ci.who = fmt.Sprintf("uid %d", ci.cred.UID)
	}
	for {
		l.mu.Lock()
		var victim net.Conn
		var info *connInfo
		ci.over = false
		why := "to make room"
		if l.users[ci.who] >= l.perUser {
			if victim, info = l.idlestLocked(ci.who, nil); victim == nil {
				ci.over = true
			}
			why = "for another of its user's, at their share"
		}
		// Connections closed to make room hold no socket any more, only
		// a goroutine about to end: they do not count.
		if victim == nil && len(l.conns)-l.evicting < l.max {
			ci.since = time.Now()
			l.conns[c] = ci
			if !ci.over {
				l.users[ci.who]++
			}
			l.mu.Unlock()
			if ci.over {
				l.log.Debug("a connection beyond its user's share", "user", ci.who, "share", l.perUser)
			}
			return c, nil
		}
		if victim == nil {
			victim, info = l.idlestLocked("", nil)
		}
		var was connInfo // a copy: track changes info once mu is released
		open := 0
		if victim != nil {
			l.evictLocked(info)
			was = *info
			open = len(l.conns) - l.evicting
		}
		l.mu.Unlock()
		if victim != nil {
			l.log.Debug("closing a connection "+why, "open", open, "user", was.who, "state", was.state.String(), "body", was.body, "for", time.Since(was.since).Round(time.Millisecond))
			victim.Close()
			continue
		}
		select {
		case <-l.freed:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// idlestLocked returns the connection (of user who, unless who is "")
// that has been new or idle longest, else the one that has been sending
// its request's body longest, or nil if every such connection has a
// request being served. For one user's, it leaves out a connection not
// yet counted in the share (over), one younger than newGrace that has not
// sent its request, and not.
func (l *connLimiter) idlestLocked(who string, not net.Conn) (net.Conn, *connInfo) {
	var victim net.Conn
	var vi *connInfo
	young := time.Now().Add(-newGrace)
	for _, body := range []bool{false, true} {
		for c, ci := range l.conns {
			idle := ci.state == http.StateNew || ci.state == http.StateIdle
			if ci.evicting || (!body && !idle) || (body && !ci.body) || c == not {
				continue
			}
			if who != "" && (ci.who != who || ci.over || ci.state == http.StateNew && ci.since.After(young)) {
				continue
			}
			if vi == nil || ci.since.Before(vi.since) {
				victim, vi = c, ci
			}
		}
		if vi != nil {
			break
		}
	}
	return victim, vi
}

// evictLocked marks ci as being closed to make room.
func (l *connLimiter) evictLocked(ci *connInfo) {
	ci.evicting = true
	l.evicting++
	if ci.over {
		return
	}
	if l.users[ci.who]--; l.users[ci.who] <= 0 {
		delete(l.users, ci.who)
	}
}

// admit waits, for at most wait, until the connection c, let in over its
// user's share, finds room in it: fewer of the user's connections open,
// or one of them idle, which it closes. It reports whether c was admitted
// (true at once for a connection within its share), with ctx done or the
// time up it returns false.
func (l *connLimiter) admit(ctx context.Context, c net.Conn, wait time.Duration) bool {
	if c == nil {
		return true
	}
	var t *time.Timer
	for {
		l.mu.Lock()
		ci, ok := l.conns[c]
		if !ok || !ci.over {
			l.mu.Unlock()
			return true
		}
		var victim net.Conn
		if l.users[ci.who] >= l.perUser {
			var vi *connInfo
			if victim, vi = l.idlestLocked(ci.who, c); victim != nil {
				l.evictLocked(vi)
			}
		}
		if l.users[ci.who] < l.perUser || victim != nil {
			ci.over = false
			l.users[ci.who]++
			l.mu.Unlock()
			if victim != nil {
				l.log.Debug("closing a connection for another of its user's, at their share", "user", ci.who)
				victim.Close()
			}
			return true
		}
		if l.room == nil {
			l.room = make(chan struct{})
		}
		room := l.room
		l.mu.Unlock()
		if t == nil {
			t = time.NewTimer(wait)
			defer t.Stop()
		}
		select {
		case <-room:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// readingBody records that the request in progress on c is reading its
// body (on), or is done with it.
func (l *connLimiter) readingBody(c net.Conn, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ci, ok := l.conns[c]; ok {
		ci.body = on
		if on {
			ci.since = time.Now()
		}
	}
}

type connKey struct{}

// connContext records the connection in its context, for readingBody.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// connOf returns the connection r came on, or nil.
func connOf(r *http.Request) net.Conn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return c
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
		switch {
		case ci.evicting:
			l.evicting--
		case !ci.over:
			if l.users[ci.who]--; l.users[ci.who] <= 0 {
				delete(l.users, ci.who)
			}
		}
		delete(l.conns, c)
		select {
		case l.freed <- struct{}{}:
		default:
		}
		l.roomLocked()
	default:
		ci.state, ci.since, ci.body = st, time.Now(), false
		if st == http.StateIdle {
			l.roomLocked()
		}
	}
}

// roomLocked wakes the connections waiting in admit.
func (l *connLimiter) roomLocked() {
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
}

// credOf returns the peer credentials Accept learned for c, or the error
// that kept it from learning them; ok is false for a connection it did
// not accept.
func (l *connLimiter) credOf(c net.Conn) (cred peer.Cred, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ci, ok := l.conns[c]
	if !ok {
		return peer.Cred{}, false, nil
	}
	return ci.cred, true, ci.credErr
}

// Close closes the listener and makes a waiting Accept return.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}
