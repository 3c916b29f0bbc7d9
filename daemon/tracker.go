package daemon

import (
	"context"
	"sync"
)

// tracker counts outstanding work per epoch, so that a caller can wait
// until everything caused by changes made before some moment is done
// (sifctl wait). Each unit of work (a settling path, a queued scan, an
// item) is registered at the epoch current when it was caused and
// released when it is done; advance closes the current epoch.
//
// The applied epoch is the last one with no unit open at or before it.
// Work continuing older work (a retry, a scan taking over a burst) is
// registered at the older epoch while that work still holds its unit, so
// the applied epoch only grows; waiters are woken when it does, not at
// every release.
type tracker struct {
	mu    sync.Mutex
	epoch uint64         // the current epoch, open to new work
	open  map[uint64]int // epoch → units open
	// applied is the applied epoch; advanced is closed and replaced when
	// it grows.
	applied  uint64
	advanced chan struct{}
}

func newTracker() *tracker {
	return &tracker{epoch: 1, open: make(map[uint64]int), advanced: make(chan struct{})}
}

// begin registers one unit of work at the current epoch and returns it.
func (t *tracker) begin() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open[t.epoch]++
	return t.epoch
}

// add registers one more unit at epoch e, which must not be applied yet:
// the caller holds a unit at e, or e is the current epoch.
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
	if t.open[e]--; t.open[e] > 0 {
		return
	}
	delete(t.open, e)
	t.update()
}

// advance closes the current epoch and returns it.
func (t *tracker) advance() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.epoch++
	t.update()
	return t.epoch - 1
}

// update recomputes the applied epoch, and wakes the waiters if it grew;
// t.mu is held.
func (t *tracker) update() {
	applied := t.epoch - 1 // the current epoch is never applied
	for e := range t.open {
		applied = min(applied, e-1)
	}
	if applied > t.applied {
		t.applied = applied
		close(t.advanced)
		t.advanced = make(chan struct{})
	}
}

// appliedEpoch returns the applied epoch, and a channel closed when it
// grows.
func (t *tracker) appliedEpoch() (uint64, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applied, t.advanced
}

// wait returns when no unit at or before epoch e is open, or ctx is done.
func (t *tracker) wait(ctx context.Context, e uint64) error {
	for {
		applied, ch := t.appliedEpoch()
		if applied >= e {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
