package daemon

import (
	"context"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Queries go first. A query (similar, basis, SimiHash's find) being
// answered holds one of the threads the Go runtime runs at once
// (GOMAXPROCS, the processors); a scan worker holds one while it works on
// a scan's file. A worker takes no new file of a scan, and a worker
// reading a large file stops between its pieces, while the queries and
// the other scanning workers hold every thread; so a query has a thread
// to itself but for the file pieces in hand, and the scan takes the
// threads no query uses (with one query on two, one worker scans).
//
// On Linux the workers' threads also run at the lowest CPU and I/O
// priorities, and the runtime has one thread more per worker
// (priority_linux.go): the kernel then hands a processor to a query's
// thread the moment it wakes, taking it from the scan rather than waiting
// for a piece's end, and gives the scan every cycle the queries leave, so
// the gate above holds the scan only when the queries fill the machine.
// Long answers (groups, dupes) run there between the two: below the
// queries, which a user or a sync tool waits on file by file, above the
// scan.
//
// Live changes are not held: they are few and their freshness is
// promised. A worker waits at most maxQueryYield at a time, so that a
// daemon answering queries without a pause still scans, if slowly. Long
// answers (groups, dupes) do not hold the scan: a client asking for them
// in a loop would stop it for good.

// maxQueryYield is the longest a scan worker waits for queries at once.
var maxQueryYield = 250 * time.Millisecond

// queryFirst counts the queries being answered and the workers scanning,
// and lets scan work wait while they hold every processor.
type queryFirst struct {
	cores int // threads to share (GOMAXPROCS); at least 1

	mu       sync.Mutex
	active   int            // queries being answered
	scanning int            // workers at work on a scan's file
	changed  chan struct{}  // closed when active or scanning falls
	yields   *atomic.Uint64 // times a worker waited (the status's counter)
}

// enter counts a query in until the function it returns is called.
func (q *queryFirst) enter() (exit func()) {
	q.mu.Lock()
	q.active++
	q.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			q.active--
			q.fellLocked()
			q.mu.Unlock()
		})
	}
}

// fellLocked wakes the workers waiting for a processor.
func (q *queryFirst) fellLocked() {
	if q.changed != nil {
		close(q.changed)
		q.changed = nil
	}
}

// fullLocked reports whether queries and scanning workers, with one more
// worker, would be more than the processors, with a query among them.
func (q *queryFirst) fullLocked() bool {
	return q.active > 0 && q.active+q.scanning >= max(q.cores, 1)
}

// scan waits, as yield does, for a processor for a scan's file, and
// counts the worker as scanning until the function it returns is called.
func (q *queryFirst) scan(ctx context.Context) (done func()) {
	q.wait(ctx)
	return func() {
		q.mu.Lock()
		q.scanning--
		q.fellLocked()
		q.mu.Unlock()
	}
}

// yield is called by a scanning worker between the pieces of a file: it
// returns at once unless queries and the other scanning workers hold
// every processor, else when they no longer do, when maxQueryYield has
// passed, or when ctx is done.
func (q *queryFirst) yield(ctx context.Context) {
	q.mu.Lock()
	q.scanning--
	q.mu.Unlock()
	q.wait(ctx)
}

// wait returns once a processor is free for one more scanning worker (or
// after maxQueryYield, or when ctx is done), counting the worker in.
func (q *queryFirst) wait(ctx context.Context) {
	var t *time.Timer
	var deadline time.Time
	for {
		q.mu.Lock()
		if !q.fullLocked() || t != nil && !time.Now().Before(deadline) || ctx.Err() != nil {
			q.scanning++
			q.mu.Unlock()
			if t != nil {
				t.Stop()
			}
			return
		}
		if q.changed == nil {
			q.changed = make(chan struct{})
		}
		changed := q.changed
		q.mu.Unlock()
		if t == nil {
			if q.yields != nil {
				q.yields.Add(1)
			}
			deadline = time.Now().Add(maxQueryYield)
			t = time.NewTimer(maxQueryYield)
		}
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// processors is how many threads the Go runtime runs at once when the
// process starts (GOMAXPROCS: the processors, or the CPU quota): those
// the queries and the scan share.
var processors = runtime.GOMAXPROCS(0)

var addProcsOnce sync.Once

// addProcs gives the Go runtime one more thread per worker, once per
// process, where the workers' threads run at a lower priority: else
// workers holding every thread would keep a query's goroutine from
// running at all, and the kernel, which would prefer it, never sees it.
// GOMAXPROCS set in the environment is left as it is.
func addProcs(workers int) {
	if !lowPriorityWorkers || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	addProcsOnce.Do(func() { runtime.GOMAXPROCS(processors + workers) })
}
