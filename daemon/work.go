package daemon

import (
	"context"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
)

// The daemon's work is to bring single paths up to date with the disk. A
// path reaches a worker in an item, from one of two lanes: live changes
// (settled watcher events and the files of newly appeared directories) and
// the files found by scans of whole roots. Workers take live items first,
// so a change made while a large first scan runs is applied within the
// settle delay, not after the scan's backlog. Both lanes are bounded
// channels: a walk that finds files faster than the workers read them
// blocks (back-pressure), and so does the settler when live changes pile
// up, while it goes on absorbing new events in its map.

// item is one path to bring up to date.
type item struct {
	path string
	// info is the path's lstat from the walk that found it, or nil, in
	// which case the worker looks itself. Only the first attempt uses it.
	info fs.FileInfo
	t    ticket
}

// ticket says what to release once an item's path has been dealt with.
type ticket struct {
	epoch uint64   // tracker epoch of the change, 0 for none
	scan  *scanRun // the scan that queued the item, if any
}

// waitEpoch is the epoch that work continuing this ticket's (a retry) must
// be registered at, so that waiters on it keep waiting.
func (t ticket) waitEpoch() uint64 {
	if t.epoch != 0 {
		return t.epoch
	}
	if t.scan != nil {
		return t.scan.epoch
	}
	return 0
}

func (t ticket) release(tr *tracker) {
	if t.epoch != 0 {
		tr.done(t.epoch)
	}
	if t.scan != nil {
		t.scan.itemDone()
	}
}

// tracker counts outstanding work per epoch, so that a caller can wait
// until everything caused by changes made before some moment is done
// (sifctl wait). Each unit of work (a pending settled path, a queued scan,
// an item) is registered at the epoch current when it was caused and
// released when it is done; advance closes the current epoch.
type tracker struct {
	mu    sync.Mutex
	epoch uint64
	open  map[uint64]int
	// changed is closed and replaced whenever work is released.
	changed chan struct{}
}

func newTracker() *tracker {
	return &tracker{epoch: 1, open: make(map[uint64]int), changed: make(chan struct{})}
}

// begin registers one unit of work at the current epoch and returns it.
func (t *tracker) begin() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open[t.epoch]++
	return t.epoch
}

// add registers one more unit at epoch e.
func (t *tracker) add(e uint64) {
	if e == 0 {
		return
	}
	t.mu.Lock()
	t.open[e]++
	t.mu.Unlock()
}

// done releases one unit of epoch e.
func (t *tracker) done(e uint64) {
	if e == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[e]--; t.open[e] <= 0 {
		delete(t.open, e)
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// advance closes the current epoch and returns it.
func (t *tracker) advance() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.epoch++
	return t.epoch - 1
}

// outstanding returns the number of open units at or before epoch e, and a
// channel closed at the next release.
func (t *tracker) outstanding(e uint64) (int, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for ep, c := range t.open {
		if ep <= e {
			n += c
		}
	}
	return n, t.changed
}

// wait returns when no unit at or before epoch e is open, or ctx is done.
func (t *tracker) wait(ctx context.Context, e uint64) error {
	for {
		n, ch := t.outstanding(e)
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// claims serialise the work on each path: one worker at a time brings a
// path up to date. A worker that finds the path claimed hands its ticket to
// the claimant and marks the path to be looked at again, so the last look
// always follows the last change, and two reads of one file can never
// commit out of order.
type claims struct {
	mu   sync.Mutex
	busy map[string]*claim
}

type claim struct {
	again   bool
	tickets []ticket
}

// take claims path for the caller, or, if another worker holds it, hands t
// over and returns false.
func (c *claims) take(path string, t ticket) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy == nil {
		c.busy = make(map[string]*claim)
	}
	if cl := c.busy[path]; cl != nil {
		cl.again = true
		cl.tickets = append(cl.tickets, t)
		return false
	}
	c.busy[path] = &claim{}
	return true
}

// finish is called by the claimant when it is done with path. If the path
// was marked meanwhile, it stays claimed and finish returns again = true:
// the caller must look at it once more. Otherwise the claim ends and the
// tickets handed over are returned for release.
func (c *claims) finish(path string) (again bool, handed []ticket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.busy[path]
	if cl.again {
		cl.again = false
		return true, nil
	}
	delete(c.busy, path)
	return false, cl.tickets
}

// markUnder marks every claimed path at or below dir (a directory whose
// records were just removed) to be looked at again by its claimant.
func (c *claims) markUnder(dir string) {
	prefix := dirPrefix(dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, cl := range c.busy {
		if p == dir || strings.HasPrefix(p, prefix) {
			cl.again = true
		}
	}
}

// lanes are the two bounded queues between producers and workers.
type lanes struct {
	live chan item
	bulk chan item
	busy atomic.Int64 // workers handling an item
}

func newLanes(workers int) *lanes {
	return &lanes{
		live: make(chan item, 1024),
		bulk: make(chan item, 4*workers),
	}
}

// next returns the next item, live ones first, or false when ctx is done.
func (l *lanes) next(ctx context.Context) (item, bool) {
	select {
	case it := <-l.live:
		return it, true
	default:
	}
	select {
	case it := <-l.live:
		return it, true
	case it := <-l.bulk:
		return it, true
	case <-ctx.Done():
		return item{}, false
	}
}

// push queues it on the live or bulk lane, blocking while the lane is
// full; it returns false if ctx is done first.
func (l *lanes) push(ctx context.Context, live bool, it item) bool {
	ch := l.bulk
	if live {
		ch = l.live
	}
	select {
	case ch <- it:
		return true
	case <-ctx.Done():
		return false
	}
}
