package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// waitTestDaemon returns a daemon with one polled root and no running
// parts: the test plays the scanner.
func waitTestDaemon(t *testing.T) (*Daemon, *rootState) {
	t.Helper()
	d := &Daemon{track: newTracker(), live: newScanner(true), bulk: newScanner(false)}
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
// as scanning until the scan has ended.
func TestWaitCoversFirstScan(t *testing.T) {
	d, r := waitTestDaemon(t)
	if st := r.status(); st.State != ipc.RootScanning {
		t.Errorf("root not started yet: state %q, want %q", st.State, ipc.RootScanning)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Wait(context.Background(), 10*time.Second)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Wait returned (%v) before the root's first scan was queued", err)
	case <-time.After(50 * time.Millisecond):
	}
	if n := d.bulk.size(); n != 0 {
		t.Fatalf("Wait queued %d scans before the root had begun", n)
	}

	// startRoot: the first scan is queued, then the root has begun.
	d.requestScan(r, r.path, false, "start")
	close(r.begun)
	select {
	case err := <-done:
		t.Fatalf("Wait returned (%v) before the first scan ended", err)
	case <-time.After(50 * time.Millisecond):
	}
	if st := r.status(); st.State != ipc.RootScanning {
		t.Errorf("first scan queued: state %q, want %q", st.State, ipc.RootScanning)
	}

	// Wait's own rescan of the polled root is merged into the queued one.
	if n := endQueuedScans(d); n != 1 {
		t.Errorf("%d scans queued, want the first scan with Wait's merged into it", n)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once the scans ended")
	}
	if st := r.status(); st.State != ipc.RootPolling {
		t.Errorf("after the scan: state %q, want %q", st.State, ipc.RootPolling)
	}
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
	if n, _ := d.track.outstanding(d.track.advance()); n != 0 {
		t.Errorf("%d units of work still registered", n)
	}
}
