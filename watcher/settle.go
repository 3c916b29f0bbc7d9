package watcher

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// SettleOptions configure a Settler. The zero value means the defaults.
type SettleOptions struct {
	// Delay is how long a path must be quiet before it is handed on; 0
	// means DefaultSettleDelay.
	Delay time.Duration
	// MaxDelay bounds how long a path that keeps changing waits after its
	// first change; 0 means DefaultMaxSettleDelay. It is at least Delay.
	MaxDelay time.Duration
	// Clock is the time source; nil means the real clock.
	Clock Clock
}

// Defaults for SettleOptions.
const (
	DefaultSettleDelay    = 500 * time.Millisecond
	DefaultMaxSettleDelay = 10 * time.Second
)

// Settler absorbs bursts of changes per path: a path touched many times is
// handed on once, when it has been quiet for the settle delay, or at the
// latest MaxDelay after the first touch of the burst while it keeps
// changing. An editor's write-temp-then-rename save, or a log file being
// appended to, thus costs one fingerprinting per delay rather than one per
// event.
//
// Every touch carries a tag, which the burst keeps from its first touch and
// hands on with the path. With a tag that grows over time (an epoch), the
// receiver knows when every change touched before some moment has been
// handed on: when no pending burst has an older tag.
//
// Touch is cheap and never blocks, so the goroutine reading filesystem
// events can call it; Run hands settled paths on from its own goroutine.
type Settler struct {
	delay, maxDelay time.Duration
	clock           Clock

	mu      sync.Mutex
	pending map[string]*burst
	queue   deadlines // lazily updated: entries whose gen is stale are skipped
	seq     uint64    // orders equal deadlines by touch
	handing int       // paths settled, taken off pending, not yet emitted
	wake    chan struct{}
}

// burst is the state of one pending path.
type burst struct {
	first, last time.Time
	tag         uint64 // of the first touch
	gen         uint64 // bumped by every touch
}

// NewSettler returns a Settler; call Run to start handing paths on.
func NewSettler(o SettleOptions) *Settler {
	if o.Delay <= 0 {
		o.Delay = DefaultSettleDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxSettleDelay
	}
	o.MaxDelay = max(o.MaxDelay, o.Delay)
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	return &Settler{
		delay: o.Delay, maxDelay: o.MaxDelay, clock: o.Clock,
		pending: make(map[string]*burst),
		wake:    make(chan struct{}, 1),
	}
}

// Touch records a change to path. If path is pending, the change joins its
// burst, which keeps the tag it has; else it starts a burst tagged tag.
// Safe for concurrent use.
func (s *Settler) Touch(path string, tag uint64) {
	now := s.clock.Now()
	s.mu.Lock()
	b := s.pending[path]
	if b == nil {
		b = &burst{first: now, tag: tag}
		s.pending[path] = b
	}
	b.last = now
	b.gen++
	s.seq++
	heap.Push(&s.queue, deadline{at: s.due(b), path: path, gen: b.gen, seq: s.seq})
	// Entries superseded by later touches pile up in a busy burst; rebuild
	// the queue from the pending paths when they dominate it.
	if len(s.queue) > 64 && len(s.queue) > 4*len(s.pending) {
		s.rebuild()
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Pending returns the number of paths touched and not yet handed on:
// waiting to settle, or settled and waiting for emit to return.
func (s *Settler) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) + s.handing
}

// Run calls emit for every path as it settles, with the tag of its burst,
// in order of settling (paths due at the same instant in the order of their
// last touch), until ctx is done; then it returns ctx.Err(). Paths still
// pending are not emitted. emit is called from Run's goroutine and may
// block: touches are still recorded meanwhile, and a path touched once its
// burst has been taken off for emitting starts a new burst.
func (s *Settler) Run(ctx context.Context, emit func(path string, tag uint64)) error {
	type settled struct {
		path string
		tag  uint64
	}
	for {
		var ready []settled
		s.mu.Lock()
		now := s.clock.Now()
		var next time.Time
		for len(s.queue) > 0 {
			d := s.queue[0]
			b := s.pending[d.path]
			if b == nil || b.gen != d.gen {
				heap.Pop(&s.queue) // superseded
				continue
			}
			if d.at.After(now) {
				next = d.at
				break
			}
			heap.Pop(&s.queue)
			delete(s.pending, d.path)
			ready = append(ready, settled{d.path, b.tag})
		}
		s.handing = len(ready)
		s.mu.Unlock()
		for _, r := range ready {
			emit(r.path, r.tag)
			s.mu.Lock()
			s.handing--
			s.mu.Unlock()
		}
		if len(ready) > 0 {
			continue // emitting took time: look again before sleeping
		}
		var timerC <-chan time.Time
		var t Timer
		if !next.IsZero() {
			t = s.clock.NewTimer(next.Sub(now))
			timerC = t.C()
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return ctx.Err()
		case <-s.wake:
		case <-timerC:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// due is when b settles: a delay after its last touch, or MaxDelay after
// its first, whichever comes first.
func (s *Settler) due(b *burst) time.Time {
	quiet, bound := b.last.Add(s.delay), b.first.Add(s.maxDelay)
	if bound.Before(quiet) {
		return bound
	}
	return quiet
}

// rebuild drops superseded queue entries; s.mu is held.
func (s *Settler) rebuild() {
	live := s.queue[:0]
	for _, d := range s.queue {
		if b := s.pending[d.path]; b != nil && b.gen == d.gen {
			live = append(live, d)
		}
	}
	s.queue = live
	heap.Init(&s.queue)
}

type deadline struct {
	at   time.Time
	path string
	gen  uint64
	seq  uint64
}

// deadlines is a min-heap by time.
type deadlines []deadline

func (d deadlines) Len() int { return len(d) }
func (d deadlines) Less(i, j int) bool {
	if !d[i].at.Equal(d[j].at) {
		return d[i].at.Before(d[j].at)
	}
	return d[i].seq < d[j].seq
}
func (d deadlines) Swap(i, j int) { d[i], d[j] = d[j], d[i] }
func (d *deadlines) Push(x any)   { *d = append(*d, x.(deadline)) }
func (d *deadlines) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}
