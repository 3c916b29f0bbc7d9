package watcher

import (
	"container/heap"
	"context"
	"path/filepath"
	"sync"
	"time"
)

// SettleOptions configure a Settler. The zero value means the defaults.
type SettleOptions struct {
	// Delay is how long a path must be quiet after a change before it is
	// handed on; 0 means DefaultSettleDelay.
	Delay time.Duration
	// RemoveDelay is how long a path must be quiet after a removal; 0
	// means a quarter more than Delay, at least 100ms more: when a file
	// or directory is moved, its new name is handed on first, so the
	// receiver can move its record instead of reading it again.
	RemoveDelay time.Duration
	// MaxDelay bounds how long a path that keeps changing waits after its
	// first change; 0 means DefaultMaxSettleDelay. It is at least Delay
	// and RemoveDelay.
	MaxDelay time.Duration
	// MaxPending bounds the paths pending one by one; 0 means
	// DefaultMaxPending. Past it, a touch of a path not pending is folded
	// into its directory, handed on as a directory to rescan (see
	// Settled.Dir), so a storm of changes costs bounded memory.
	MaxPending int
	// Clock is the time source; nil means the real clock.
	Clock Clock
}

// Defaults for SettleOptions.
const (
	DefaultSettleDelay    = 500 * time.Millisecond
	DefaultMaxSettleDelay = 10 * time.Second
	DefaultMaxPending     = 50000
)

// SettleKind says what a touch reports; each kind has its settle delay.
type SettleKind uint8

const (
	// Changed: the path was created or written (SettleOptions.Delay).
	Changed SettleKind = iota
	// Removed: the path was removed or renamed away
	// (SettleOptions.RemoveDelay).
	Removed
	numSettleKinds
)

// Settled is a burst handed on by Run.
type Settled struct {
	// Path is the path touched. With Dir, it is a directory: more paths
	// were touched than MaxPending allows, and those not kept one by one
	// are somewhere below it (a descendant at any depth, when directories
	// too were past the bound); the receiver rescans it.
	Path string
	Dir  bool
	// Tag is the smallest non-zero tag of the burst's touches (0 if all
	// were 0).
	Tag uint64
	// First is when the burst's first touch was.
	First time.Time
}

// Settler absorbs bursts of changes per path: a path touched many times is
// handed on once, when it has been quiet for the settle delay of its last
// touch's kind, or at the latest MaxDelay after the first touch of the
// burst while it keeps changing. An editor's write-temp-then-rename save,
// or a log file being appended to, thus costs one fingerprinting per delay
// rather than one per event.
//
// Every touch carries a tag; a burst carries the smallest non-zero tag of
// its touches and hands it on with the path. With a tag that grows over
// time (an epoch), the receiver knows when every change touched before
// some moment has been handed on: when no pending burst has an older tag.
//
// Its memory is bounded, as syncthing's watch aggregator's: past
// MaxPending paths, new ones are folded into a pending directory, handed
// on for a rescan (Settled.Dir).
//
// Touch is cheap and never blocks, so the goroutine reading filesystem
// events can call it; Run hands settled paths on from its own goroutine.
type Settler struct {
	delays     [numSettleKinds]time.Duration
	maxDelay   time.Duration
	maxPending int
	clock      Clock

	mu      sync.Mutex
	pending map[string]*burst // by path; directory bursts under dirKey
	nDirs   int               // directory bursts in pending
	queue   deadlines         // lazily updated: entries whose gen is stale are skipped
	seq     uint64            // orders equal deadlines by touch
	handing int               // paths settled, taken off pending, not yet emitted
	wake    chan struct{}
}

// burst is the state of one pending path or directory.
type burst struct {
	first, last time.Time
	kind        SettleKind // of the last touch
	dir         bool
	tag         uint64 // smallest non-zero
	gen         uint64 // bumped by every touch
}

// dirKey is the pending key of a directory burst: a path ending in a NUL
// byte, which no path holds, so a directory burst and a path burst of the
// same name are apart.
func dirKey(dir string) string { return dir + "\x00" }

// NewSettler returns a Settler; call Run to start handing paths on.
func NewSettler(o SettleOptions) *Settler {
	if o.Delay <= 0 {
		o.Delay = DefaultSettleDelay
	}
	if o.RemoveDelay <= 0 {
		o.RemoveDelay = o.Delay + max(o.Delay/4, 100*time.Millisecond)
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxSettleDelay
	}
	o.MaxDelay = max(o.MaxDelay, o.Delay, o.RemoveDelay)
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	s := &Settler{
		maxDelay: o.MaxDelay, maxPending: o.MaxPending, clock: o.Clock,
		pending: make(map[string]*burst),
		wake:    make(chan struct{}, 1),
	}
	s.delays[Changed], s.delays[Removed] = o.Delay, o.RemoveDelay
	return s
}

// Touch records a touch of kind to path. If path is pending, the touch
// joins its burst; else it starts one, unless MaxPending paths are pending
// already: then it joins the burst of its directory (or of the nearest
// ancestor directory pending, or, directories too being past the bound, of
// the parent of a pending one), handed on for a rescan.
//
// The burst joined keeps the smaller of its tag and tag (0 counting as
// none). Touch returns the tag that is no longer carried: 0 when the touch
// started a burst, else the larger of the two. A caller that counts work
// per tag registers a unit at tag before the touch and releases one at the
// returned tag after it. Safe for concurrent use.
func (s *Settler) Touch(path string, tag uint64, kind SettleKind) (dropped uint64) {
	now := s.clock.Now()
	s.mu.Lock()
	key := path
	b := s.pending[key]
	if b == nil && len(s.pending)-s.nDirs >= s.maxPending {
		key, b = s.fold(path)
	}
	if b == nil {
		b = &burst{first: now, tag: tag, dir: key != path}
		s.pending[key] = b
		if b.dir {
			s.nDirs++
		}
	} else {
		dropped = tag
		if tag != 0 && (b.tag == 0 || tag < b.tag) {
			dropped, b.tag = b.tag, tag
		}
	}
	b.last, b.kind = now, kind
	if b.dir {
		b.kind = Changed // a rescan finds removals as well as changes
	}
	b.gen++
	s.seq++
	heap.Push(&s.queue, deadline{at: s.due(b), key: key, gen: b.gen, seq: s.seq})
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
	return dropped
}

// fold returns the key and the burst (nil: to be made) of the directory
// that a path touched past MaxPending joins: the nearest ancestor with a
// pending directory burst; else its parent while fewer than MaxPending
// directories are pending; else the filesystem root (one more burst at
// most per volume). s.mu is held.
func (s *Settler) fold(path string) (string, *burst) {
	top := path
	for a := filepath.Dir(path); ; a = filepath.Dir(a) {
		if b := s.pending[dirKey(a)]; b != nil {
			return dirKey(a), b
		}
		top = a
		if filepath.Dir(a) == a {
			break
		}
	}
	if s.nDirs < s.maxPending {
		return dirKey(filepath.Dir(path)), nil
	}
	return dirKey(top), nil
}

// Pending returns the number of paths touched and not yet handed on:
// waiting to settle, or settled and waiting for emit to return.
func (s *Settler) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) + s.handing
}

// Run calls emit for every burst as it settles, in order of settling
// (bursts due at the same instant in the order of their last touch),
// until ctx is done; then it returns ctx.Err(). Bursts still pending are
// not emitted. emit is called from Run's goroutine and may block: touches
// are still recorded meanwhile, and a path touched once its burst has been
// taken off for emitting starts a new burst.
func (s *Settler) Run(ctx context.Context, emit func(Settled)) error {
	for {
		var ready []Settled
		s.mu.Lock()
		now := s.clock.Now()
		var next time.Time
		for len(s.queue) > 0 {
			d := s.queue[0]
			b := s.pending[d.key]
			if b == nil || b.gen != d.gen {
				heap.Pop(&s.queue) // superseded
				continue
			}
			if d.at.After(now) {
				next = d.at
				break
			}
			heap.Pop(&s.queue)
			delete(s.pending, d.key)
			path := d.key
			if b.dir {
				s.nDirs--
				path = path[:len(path)-1]
			}
			ready = append(ready, Settled{Path: path, Dir: b.dir, Tag: b.tag, First: b.first})
		}
		s.handing = len(ready)
		s.mu.Unlock()
		for _, r := range ready {
			emit(r)
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

// due is when b settles: the delay of its last touch's kind after that
// touch, or MaxDelay after its first, whichever comes first.
func (s *Settler) due(b *burst) time.Time {
	quiet, bound := b.last.Add(s.delays[b.kind]), b.first.Add(s.maxDelay)
	if bound.Before(quiet) {
		return bound
	}
	return quiet
}

// rebuild drops superseded queue entries; s.mu is held.
func (s *Settler) rebuild() {
	live := s.queue[:0]
	for _, d := range s.queue {
		if b := s.pending[d.key]; b != nil && b.gen == d.gen {
			live = append(live, d)
		}
	}
	s.queue = live
	heap.Init(&s.queue)
}

type deadline struct {
	at  time.Time
	key string // of pending
	gen uint64
	seq uint64
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
