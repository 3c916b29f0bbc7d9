package watcher

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"
)

// settleRig runs a Settler on a fake clock and records what it emits, with
// the fake time of each emission and its tag.
type settleRig struct {
	t     *testing.T
	clock *FakeClock
	s     *Settler
	out   chan emitted
	start time.Time
}

type emitted struct {
	path string
	at   time.Duration // since the rig's start
	tag  uint64
}

func newSettleRig(t *testing.T, delay, maxDelay time.Duration) *settleRig {
	return newSettleRigOpts(t, SettleOptions{Delay: delay, MaxDelay: maxDelay})
}

func newSettleRigOpts(t *testing.T, o SettleOptions) *settleRig {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &settleRig{t: t, clock: NewFakeClock(start), out: make(chan emitted, 10000), start: start}
	o.Clock = r.clock
	r.s = NewSettler(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- r.s.Run(ctx, func(s Settled) {
			p := s.Path
			if s.Dir {
				p += "/ (dir)"
			}
			r.out <- emitted{p, r.clock.Now().Sub(start), s.Tag}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
	r.idle()
	return r
}

// idle waits (in real time, briefly) until Run has nothing to do before
// the fake clock moves: no path pending, or its timer armed.
func (r *settleRig) idle() {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if r.s.Pending() == 0 || r.clock.Timers() == 1 {
			// Give a wake-up that is in flight the chance to re-arm.
			time.Sleep(time.Millisecond)
			if r.s.Pending() == 0 || r.clock.Timers() == 1 {
				return
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	r.t.Fatalf("settler not idle: %d pending, %d timers", r.s.Pending(), r.clock.Timers())
}

// touch touches paths with tag 0.
func (r *settleRig) touch(paths ...string) { r.touchTag(0, paths...) }

func (r *settleRig) touchTag(tag uint64, paths ...string) {
	for _, p := range paths {
		r.s.Touch(p, tag, Changed)
	}
	r.idle()
}

func (r *settleRig) advance(d time.Duration) {
	r.clock.Advance(d)
	r.idle()
}

// drain returns what has been emitted so far.
func (r *settleRig) drain() []emitted {
	var got []emitted
	for {
		select {
		case e := <-r.out:
			got = append(got, e)
		default:
			return got
		}
	}
}

func TestSettleQuietPath(t *testing.T) {
	r := newSettleRig(t, 500*time.Millisecond, 10*time.Second)
	r.touch("/a")
	r.advance(499 * time.Millisecond)
	if got := r.drain(); len(got) != 0 {
		t.Fatalf("emitted before the delay: %v", got)
	}
	r.advance(time.Millisecond)
	if got := r.drain(); len(got) != 1 || got[0] != (emitted{"/a", 500 * time.Millisecond, 0}) {
		t.Fatalf("got %v, want /a at 500ms", got)
	}
	if r.s.Pending() != 0 {
		t.Errorf("%d still pending", r.s.Pending())
	}
}

// A burst of touches (a save: write, write, rename) is one emission, a delay
// after the last touch.
func TestSettleBurstIsOne(t *testing.T) {
	r := newSettleRig(t, 500*time.Millisecond, 10*time.Second)
	for range 5 {
		r.touch("/f")
		r.advance(100 * time.Millisecond)
	}
	// Last touch at 400ms: due at 900ms.
	r.advance(399 * time.Millisecond) // now 899ms
	if got := r.drain(); len(got) != 0 {
		t.Fatalf("emitted early: %v", got)
	}
	r.advance(time.Millisecond)
	if got := r.drain(); len(got) != 1 || got[0] != (emitted{"/f", 900 * time.Millisecond, 0}) {
		t.Fatalf("got %v, want one /f at 900ms", got)
	}
}

// A path that never goes quiet is still handed on, MaxDelay after the first
// touch of each burst.
func TestSettleMaxDelay(t *testing.T) {
	r := newSettleRig(t, 500*time.Millisecond, 2*time.Second)
	var got []emitted
	for range 50 { // a touch every 100ms for 5s
		r.touch("/log")
		r.advance(100 * time.Millisecond)
		got = append(got, r.drain()...)
	}
	for range 10 {
		r.advance(100 * time.Millisecond)
		got = append(got, r.drain()...)
	}
	// Bursts start at 0, 2s (the touch right after the first emission) and
	// 4s; the last goes quiet after its touch at 4.9s.
	want := []emitted{{"/log", 2 * time.Second, 0}, {"/log", 4 * time.Second, 0}, {"/log", 5400 * time.Millisecond, 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// Many paths settle independently, each once, in order of their deadlines.
func TestSettleManyPaths(t *testing.T) {
	r := newSettleRig(t, time.Second, 10*time.Second)
	var want []string
	for i := range 1000 {
		p := fmt.Sprintf("/d/%04d", i)
		r.s.Touch(p, 0, Changed)
		r.s.Touch(p, 0, Changed)
		want = append(want, p)
		if i%100 == 99 {
			r.idle()
			r.advance(10 * time.Millisecond)
		}
	}
	r.idle()
	if n := r.s.Pending(); n != 1000 {
		t.Fatalf("%d pending, want 1000", n)
	}
	r.advance(2 * time.Second)
	var got []string
	for _, e := range r.drain() {
		got = append(got, e.path)
	}
	if len(got) != 1000 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %d paths (in touch order: %v), want the 1000 in touch order", len(got), sort.StringsAreSorted(got))
	}
	if len(r.s.queue) > 0 {
		t.Errorf("%d queue entries left", len(r.s.queue))
	}
}

// Superseded queue entries do not pile up while one path is touched
// continuously.
func TestSettleQueueStaysSmall(t *testing.T) {
	clock := NewFakeClock(time.Unix(0, 0))
	s := NewSettler(SettleOptions{Delay: time.Second, MaxDelay: time.Hour, Clock: clock})
	for range 100000 {
		s.Touch("/hot", 0, Changed)
	}
	s.mu.Lock()
	n := len(s.queue)
	s.mu.Unlock()
	if n > 65 {
		t.Errorf("queue holds %d entries for 1 pending path", n)
	}
}

// A burst carries the smallest tag of its touches: a later touch with a
// newer tag leaves it, one with an older tag (a retry of older work)
// lowers it. A touch after the burst was handed on starts a new burst with
// its own tag.
func TestSettleTagIsOldest(t *testing.T) {
	r := newSettleRig(t, 500*time.Millisecond, 2*time.Second)
	r.touchTag(7, "/a")
	r.touchTag(3, "/b")
	r.advance(100 * time.Millisecond)
	r.touchTag(8, "/a") // joins /a's burst
	r.touchTag(9, "/c")
	r.advance(100 * time.Millisecond)
	r.touchTag(1, "/a") // joins /a's burst and lowers its tag
	r.touchTag(5, "/b") // joins /b's burst
	var got []emitted
	for range 10 {
		r.advance(100 * time.Millisecond)
		got = append(got, r.drain()...)
	}
	want := []emitted{{"/c", 600 * time.Millisecond, 9}, {"/a", 700 * time.Millisecond, 1}, {"/b", 700 * time.Millisecond, 3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}

	// A new burst of /a, kept busy past MaxDelay: handed on with the tag of
	// its first touch; the touches after that start the next burst.
	got = nil
	for i := range 40 { // from 1.2s, tags 10..39, a touch every 100ms
		if i < 30 {
			r.touchTag(uint64(10+i), "/a")
		}
		r.advance(100 * time.Millisecond)
		got = append(got, r.drain()...)
	}
	// Bursts start at 1.2s (tag 10) and at 3.2s (tag 30), just after the
	// first was handed on; the second goes quiet after its touch at 4.1s.
	want = []emitted{{"/a", 3200 * time.Millisecond, 10}, {"/a", 4600 * time.Millisecond, 30}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// Touch returns the tag its burst no longer carries, so a caller counting
// work per tag releases exactly one unit per joining touch.
func TestSettleTouchDropsTag(t *testing.T) {
	s := NewSettler(SettleOptions{Clock: NewFakeClock(time.Unix(0, 0))})
	for _, tc := range []struct {
		tag, dropped uint64
	}{{5, 0}, {7, 7}, {3, 5}, {3, 3}, {0, 0}, {4, 4}} {
		if got := s.Touch("/p", tc.tag, Changed); got != tc.dropped {
			t.Errorf("Touch tag %d: dropped %d, want %d", tc.tag, got, tc.dropped)
		}
	}
}

// Each kind settles after its own delay, counted from the burst's last
// touch: a removal a little later than a change (a move's new name is
// handed on before its old one), whatever the burst's earlier touches.
func TestSettleDelayPerKind(t *testing.T) {
	r := newSettleRigOpts(t, SettleOptions{Delay: 400 * time.Millisecond, RemoveDelay: 600 * time.Millisecond, MaxDelay: 10 * time.Second})
	r.s.Touch("/old", 1, Removed)
	r.s.Touch("/new", 1, Changed)
	r.s.Touch("/recreated", 1, Removed)
	r.s.Touch("/recreated", 1, Changed) // removed, then made again: a change
	r.s.Touch("/deleted", 1, Changed)
	r.s.Touch("/deleted", 1, Removed) // written, then removed: a removal
	r.idle()
	var got []emitted
	for range 8 {
		r.advance(100 * time.Millisecond)
		got = append(got, r.drain()...)
	}
	want := []emitted{{"/new", 400 * time.Millisecond, 1}, {"/recreated", 400 * time.Millisecond, 1},
		{"/old", 600 * time.Millisecond, 1}, {"/deleted", 600 * time.Millisecond, 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// The default removal delay: a quarter more, at least 100ms more.
	for delay, want := range map[time.Duration]time.Duration{
		100 * time.Millisecond: 200 * time.Millisecond,
		time.Second:            1250 * time.Millisecond,
	} {
		if got := NewSettler(SettleOptions{Delay: delay}).delays[Removed]; got != want {
			t.Errorf("delay %v: removal delay %v, want %v", delay, got, want)
		}
	}
}

// Past MaxPending paths, a touch of a new path joins its directory's
// burst, handed on as a directory to rescan with the oldest tag of what it
// absorbed; paths already pending go on settling one by one. Past
// MaxPending directories as well, new ones fold into the filesystem root.
// Memory stays bounded whatever the storm.
func TestSettleMaxPendingFoldsIntoDirectories(t *testing.T) {
	r := newSettleRigOpts(t, SettleOptions{Delay: 500 * time.Millisecond, MaxDelay: 10 * time.Second, MaxPending: 3})
	r.touchTag(5, "/r/a/1", "/r/a/2", "/r/b/1") // at the bound
	r.touchTag(6, "/r/a/3", "/r/a/4")           // fold into /r/a
	r.touchTag(2, "/r/a/sub/5")                 // into /r/a, its nearest pending ancestor; lowers its tag
	r.touchTag(7, "/r/a/1")                     // pending already: joins its own burst
	r.touchTag(8, "/r/c/1", "/r/d/1")           // /r/c, /r/d: three directories now
	r.touchTag(9, "/s/e/1", "/t/f/1")           // past both bounds: the root
	if n := r.s.Pending(); n != 3+3+1 {
		t.Errorf("%d pending, want 3 paths, 3 directories and the root", n)
	}
	for i := range 10000 { // a storm: nothing more is kept
		r.s.Touch(fmt.Sprintf("/u/%d/x", i), 10, Changed)
	}
	r.idle()
	if n := r.s.Pending(); n != 7 {
		t.Errorf("%d pending after a storm of 10000 new paths, want 7", n)
	}
	r.advance(time.Second)
	got := r.drain()
	sort.Slice(got, func(i, j int) bool { return got[i].path < got[j].path })
	want := []emitted{
		{"// (dir)", time.Second, 9},
		{"/r/a/ (dir)", time.Second, 2},
		{"/r/a/1", time.Second, 5},
		{"/r/a/2", time.Second, 5},
		{"/r/b/1", time.Second, 5},
		{"/r/c/ (dir)", time.Second, 8},
		{"/r/d/ (dir)", time.Second, 8},
	}
	for i := range want {
		want[i].at = 500 * time.Millisecond // all due at 500ms, seen at the 1s advance
	}
	for i := range got {
		got[i].at = 500 * time.Millisecond
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	if r.s.Pending() != 0 || r.s.nDirs != 0 {
		t.Errorf("after settling: %d pending, %d directories", r.s.Pending(), r.s.nDirs)
	}
	// Once below the bound, paths are kept one by one again.
	r.touchTag(11, "/r/a/1")
	r.advance(time.Second)
	if got := r.drain(); len(got) != 1 || got[0].path != "/r/a/1" {
		t.Errorf("after the storm: %v, want /r/a/1 on its own", got)
	}
}

func TestFakeClockTimers(t *testing.T) {
	c := NewFakeClock(time.Unix(100, 0))
	a, b := c.NewTimer(time.Second), c.NewTimer(2*time.Second)
	c.Advance(time.Second)
	select {
	case at := <-a.C():
		if !at.Equal(time.Unix(101, 0)) {
			t.Errorf("fired at %v", at)
		}
	default:
		t.Fatal("timer due at 1s did not fire")
	}
	if !b.Stop() || b.Stop() {
		t.Error("Stop should report true once, then false")
	}
	c.Advance(time.Hour)
	select {
	case <-b.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	if c.Timers() != 0 {
		t.Errorf("%d timers left", c.Timers())
	}
}
