package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Default shares of one user (see Options).
const (
	// DefaultMaxPerUser is a quarter of DefaultMaxConcurrent: a user who
	// floods the socket leaves three quarters of the slots to the others.
	DefaultMaxPerUser = 4
	// DefaultMaxWholePerUser leaves the other whole-index slot to the
	// others.
	DefaultMaxWholePerUser = 1
	// DefaultMaxWaitsPerUser is a quarter of DefaultMaxWaits.
	DefaultMaxWaitsPerUser = 16
	// DefaultMaxConnsPerUser is a quarter of DefaultMaxConns.
	DefaultMaxConnsPerUser = 32
)

// shares are each user's gates in front of one of the server's gates: a
// user takes a slot of their own before a slot of the server's, so no user
// holds more than their share however many requests they send, and the
// requests of a user whose slots are taken wait in a queue of their own,
// not in the server's. A user's gate is made when they first ask and
// dropped once they hold and wait for none, so shares cost memory only for
// the users with requests in progress. Shares as large as the server's
// gate could not bind: they are nil, and a nil *shares lets every request
// through.
type shares struct {
	slots, queued int
	what          string // what a slot is for, in busy messages
	mu            sync.Mutex
	users         map[string]*share
}

type share struct {
	g    *gate
	refs int // requests holding or waiting for a slot of g
}

// newShares returns shares of slots each, with queues of queued, in front
// of a gate of total slots; nil when slots is not less than total.
func newShares(slots, total, queued int, what string) *shares {
	if slots >= total {
		return nil
	}
	return &shares{slots: slots, queued: queued, what: what, users: map[string]*share{}}
}

// enter takes a slot of who's, waiting up to wait for one (when fewer than
// the queue's length wait already). It returns the share to leave, or nil
// and a busy message.
func (s *shares) enter(ctx context.Context, who string, wait time.Duration) (*share, string) {
	if s == nil {
		return &share{}, ""
	}
	s.mu.Lock()
	sh := s.users[who]
	if sh == nil {
		sh = &share{g: newGate(s.slots, s.queued, wait)}
		s.users[who] = sh
	}
	sh.refs++
	s.mu.Unlock()
	if sh.g.enterWithin(ctx, wait) {
		return sh, ""
	}
	s.drop(sh, who)
	msg := fmt.Sprintf("%d %s of yours (%s) in progress, as many as this daemon serves one user at once", s.slots, s.what, who)
	if s.queued > 0 {
		msg += fmt.Sprintf(", and none ended within %s", wait)
	}
	return nil, msg
}

// leave gives back the slot enter took.
func (s *shares) leave(sh *share, who string) {
	if s == nil {
		return
	}
	sh.g.leave()
	s.drop(sh, who)
}

func (s *shares) drop(sh *share, who string) {
	s.mu.Lock()
	if sh.refs--; sh.refs == 0 && s.users[who] == sh {
		delete(s.users, who)
	}
	s.mu.Unlock()
}

// bodyShares bound the bytes of request bodies each user holds at once;
// with max 0, they do not (a share as large as the server's budget could
// not bind), and each share's sem is nil.
type bodyShares struct {
	max   int64
	mu    sync.Mutex
	users map[string]*bodyShare
}

type bodyShare struct {
	sem  *semaphore.Weighted
	refs int
}

// get returns who's share of body bytes, to be given back with put.
func (b *bodyShares) get(who string) *bodyShare {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.users == nil {
		b.users = map[string]*bodyShare{}
	}
	sh := b.users[who]
	if sh == nil {
		sh = &bodyShare{}
		if b.max > 0 {
			sh.sem = semaphore.NewWeighted(b.max)
		}
		b.users[who] = sh
	}
	sh.refs++
	return sh
}

func (b *bodyShares) put(sh *bodyShare, who string) {
	b.mu.Lock()
	if sh.refs--; sh.refs == 0 && b.users[who] == sh {
		delete(b.users, who)
	}
	b.mu.Unlock()
}

// tryAcquire, acquire and release are sem's, with a nil sem holding
// every amount.
func (sh *bodyShare) tryAcquire(n int64) bool { return sh.sem == nil || sh.sem.TryAcquire(n) }

func (sh *bodyShare) acquire(ctx context.Context, n int64) error {
	if sh.sem == nil {
		return nil
	}
	return sh.sem.Acquire(ctx, n)
}

func (sh *bodyShare) release(n int64) {
	if sh.sem != nil {
		sh.sem.Release(n)
	}
}

// who names the user a caller's share is counted for: their uid, or
// "unknown" on a socket whose peers cannot be told apart.
func (c *caller) who() string {
	if !c.known {
		return "unknown user"
	}
	return fmt.Sprintf("uid %d", c.cred.UID)
}
