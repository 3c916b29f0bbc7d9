package daemon

import (
	"context"
	"io/fs"
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
	// walked says a scan's walk found a regular file at path: counted in
	// its root's progress, and, with info nil (a fresh scan's walk, which
	// does not stat), opened without an lstat first.
	walked bool
	t      ticket
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

// lanes are the two bounded queues between producers and workers.
type lanes struct {
	live chan item
	bulk chan item
	busy atomic.Int64 // workers handling an item
}

// bulkLane is the capacity of the bulk lane. A walk lists files in bursts
// of a directory at a time; with room for a few hundred, it runs ahead of
// the workers and blocks now and then, where a lane of a few items woke
// the walk and a worker in turn for every file: the first scan of the
// module tree took 0.97× the CPU and 0.95× the time to ready with 256
// than with 8 (medians of 11, run for run; 1024 did no better).
const bulkLane = 256

func newLanes() *lanes {
	return &lanes{
		live: make(chan item, 1024),
		bulk: make(chan item, bulkLane),
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
