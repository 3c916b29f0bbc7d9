package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Queries go first: while the daemon answers a query (similar, basis,
// SimiHash's find), the workers take no new file of a scan, and a worker
// reading a large file for a scan stops between its pieces, so that the
// query has the processors to itself but for the file pieces in hand;
// the scan takes the time between queries. Live changes are not held:
// they are few and their freshness is promised. A worker waits at most
// maxQueryYield at a time, so that a daemon answering queries without a
// pause still scans, if slowly. Long answers (groups, dupes) do not hold
// the scan: a client asking for them in a loop would stop it for good.

// maxQueryYield is the longest a scan worker waits for queries at once.
var maxQueryYield = 250 * time.Millisecond

// queryFirst counts the queries being answered and lets scan work wait
// for them.
type queryFirst struct {
	mu     sync.Mutex
	active int
	idle   chan struct{}  // closed when active falls to 0; nil while 0
	yields *atomic.Uint64 // times a worker waited (the status's counter)
}

// enter counts a query in until the function it returns is called.
func (q *queryFirst) enter() (exit func()) {
	q.mu.Lock()
	if q.active == 0 {
		q.idle = make(chan struct{})
	}
	q.active++
	q.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			if q.active--; q.active == 0 {
				close(q.idle)
				q.idle = nil
			}
			q.mu.Unlock()
		})
	}
}

// yield returns at once when no query is being answered, else when none
// is, when maxQueryYield has passed, or when ctx is done.
func (q *queryFirst) yield(ctx context.Context) {
	q.mu.Lock()
	idle := q.idle
	q.mu.Unlock()
	if idle == nil {
		return
	}
	if q.yields != nil {
		q.yields.Add(1)
	}
	t := time.NewTimer(maxQueryYield)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
	}
}
