package daemon

import (
	"context"
	"testing"
	"testing/synctest"
)

// waitDone starts tr.wait(e) and returns a func reporting, once every
// goroutine of the bubble is blocked, whether it has returned.
func waitDone(t *testing.T, tr *tracker, e uint64) func() bool {
	done := make(chan error, 1)
	go func() { done <- tr.wait(context.Background(), e) }()
	return func() bool {
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("wait %d: %v", e, err)
			}
			return true
		default:
			return false
		}
	}
}

// A wait on a closed epoch returns once every unit at or before it is
// released, and not before; units of later epochs do not hold it up.
func TestTrackerWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTracker()
		a, b := tr.begin(), tr.begin()
		if a != 1 || b != 1 {
			t.Fatalf("epochs %d, %d; want 1", a, b)
		}
		e := tr.advance()
		later := tr.begin() // epoch 2: not waited for
		returned := waitDone(t, tr, e)
		if returned() {
			t.Fatal("wait returned with two units open")
		}
		tr.done(a)
		if returned() {
			t.Fatal("wait returned with one unit open")
		}
		tr.done(b)
		if !returned() {
			t.Fatal("wait did not return once its epoch's units were released")
		}
		// The current epoch is never applied, even with nothing open.
		tr.done(later)
		returned = waitDone(t, tr, tr.epoch)
		if returned() {
			t.Fatal("wait on the current epoch returned before it was closed")
		}
		tr.advance()
		if !returned() {
			t.Fatal("wait did not return once its epoch was closed with nothing open")
		}
	})
}

// Work continuing older work (a retry) is registered at the older epoch
// while that work still holds it: waiters on it keep waiting.
func TestTrackerRetryKeepsOldEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTracker()
		first := tr.begin()
		tr.advance()
		tr.advance()
		returned := waitDone(t, tr, first)
		tr.add(first) // the retry, before the first attempt lets go
		tr.done(first)
		if returned() {
			t.Fatal("wait returned while the retry was pending")
		}
		tr.done(first)
		if !returned() {
			t.Fatal("wait did not return after the retry")
		}
	})
}

// Waiters are woken when the applied epoch grows, not at every release.
func TestTrackerSignalsOnlyProgress(t *testing.T) {
	tr := newTracker()
	x, y := tr.begin(), tr.begin()
	tr.advance()
	applied, ch := tr.appliedEpoch()
	if applied != 0 {
		t.Fatalf("applied %d, want 0", applied)
	}
	tr.done(x)
	if isClosed(ch) {
		t.Error("a release that applies nothing woke the waiters")
	}
	tr.done(y)
	if !isClosed(ch) {
		t.Error("the applied epoch grew without waking the waiters")
	}
	if applied, _ := tr.appliedEpoch(); applied != 1 {
		t.Errorf("applied %d, want 1", applied)
	}
}
