package daemon

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// waitTestDaemon returns a daemon with one polled root, an empty index
// in memory and no running parts: the test plays the scanner.
func waitTestDaemon(t *testing.T) (*Daemon, *rootState) {
	t.Helper()
	d := &Daemon{track: newTracker(), live: newScanner(true), bulk: newScanner(false), log: discardLogger()}
	ix, err := index.Open("/db", &index.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	d.faults.init("/db", 0, d.log, &d.errs)
	d.ix = &ixHandle{faults: &d.faults}
	d.ix.swap(ix)
	r := newRootState(context.Background(), t.TempDir(), "config")
	r.polled = true
	d.roots = []*rootState{r}
	return d, r
}

// endQueuedScans ends the bulk scans queued, as the scanner does once it
// has run them.
func endQueuedScans(d *Daemon) int {
	d.bulk.mu.Lock()
	q := d.bulk.queue
	d.bulk.queue = nil
	d.bulk.mu.Unlock()
	for _, s := range q {
		s.finish(d.track)
	}
	return len(q)
}

// A Wait that arrives before a root's first scan is queued does nothing
// with the root until it has begun (a cookie written before the root's
// watches would never be seen), then waits for that scan; the root shows
// as scanning until the scan has ended. In a synctest bubble: "still
// waiting" is checked once every goroutine is blocked, without sleeping.
func TestWaitCoversFirstScan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, r := waitTestDaemon(t)
		if st := r.status(); st.State != ipc.RootScanning {
			t.Errorf("root not started yet: state %q, want %q", st.State, ipc.RootScanning)
		}
		done := make(chan error, 1)
		go func() {
			_, err := d.Wait(context.Background(), 10*time.Second)
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Wait returned (%v) before the root's first scan was queued", err)
		default:
		}
		if n := d.bulk.size(); n != 0 {
			t.Fatalf("Wait queued %d scans before the root had begun", n)
		}

		// startRoot: the first scan is queued, then the root has begun.
		d.requestScan(r, r.path, false, "start")
		close(r.begun)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Wait returned (%v) before the first scan ended", err)
		default:
		}
		if st := r.status(); st.State != ipc.RootScanning {
			t.Errorf("first scan queued: state %q, want %q", st.State, ipc.RootScanning)
		}

		// Wait's own rescan of the polled root is merged into the queued one.
		if n := endQueuedScans(d); n != 1 {
			t.Errorf("%d scans queued, want the first scan with Wait's merged into it", n)
		}
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Wait: %v", err)
			}
		default:
			t.Fatal("Wait did not return once the scans ended")
		}
		if st := r.status(); st.State != ipc.RootPolling {
			t.Errorf("after the scan: state %q, want %q", st.State, ipc.RootPolling)
		}
	})
}

// Wait times out, on the virtual clock, while work it covers is open.
func TestWaitTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, r := waitTestDaemon(t)
		close(r.begun)
		start := time.Now()
		_, err := d.Wait(context.Background(), 3*time.Second)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait with its scan never run: %v, want a timeout", err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("timed out after %v, want 3s", took)
		}
		endQueuedScans(d)
	})
}

// Changes kept while index writes are on hold count as not done: Wait
// returns once the hold is lifted, woken by it, not by polling.
func TestWaitForHeldChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, r := waitTestDaemon(t)
		d.faults.init("", 0, discardLogger(), &d.errs)
		close(r.begun)
		d.faults.onHoldB.Store(true)
		d.faults.hold("/kept")
		done := make(chan error, 1)
		go func() {
			_, err := d.Wait(context.Background(), time.Hour)
			done <- err
		}()
		synctest.Wait()
		endQueuedScans(d) // Wait's rescan of the polled root
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Wait returned (%v) while changes were kept", err)
		default:
		}
		start := time.Now()
		d.faults.resume.Lock()
		d.faults.mu.Lock()
		d.faults.heldPaths = make(map[string]struct{})
		d.faults.liftLocked()
		d.faults.mu.Unlock()
		d.faults.resume.Unlock()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Wait did not return once the hold was lifted")
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("Wait took %v of virtual time after the lift: it polls", took)
		}
	})
}

// Full scans requested keep the root scanning until each has ended; scans
// of a directory below the root do not.
func TestQueuedFullScanShowsScanning(t *testing.T) {
	d, r := waitTestDaemon(t)
	r.polled = false
	close(r.begun)
	if st := r.status(); st.State != ipc.RootWatching {
		t.Fatalf("idle root: state %q, want %q", st.State, ipc.RootWatching)
	}
	d.requestScan(r, r.path+"/sub", false, "new directory")
	if st := r.status(); st.State != ipc.RootWatching {
		t.Errorf("a subdirectory's scan queued: state %q, want %q", st.State, ipc.RootWatching)
	}
	d.requestScan(r, r.path, false, "events lost")
	d.requestScan(r, r.path, false, "rescan asked for") // merged
	if st := r.status(); st.State != ipc.RootScanning {
		t.Errorf("reconcile queued: state %q, want %q", st.State, ipc.RootScanning)
	}
	endQueuedScans(d)
	if st := r.status(); st.State != ipc.RootWatching {
		t.Errorf("scans ended: state %q, want %q", st.State, ipc.RootWatching)
	}
	closed := d.track.advance()
	if e, _ := d.track.appliedEpoch(); e != closed {
		t.Errorf("applied epoch %d after closing %d: units of work still registered", e, closed)
	}
}
