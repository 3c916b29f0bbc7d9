package daemon

import (
	"testing"
	"testing/synctest"
	"time"
)

// Lost events reconcile the root at once; overflows that repeat back off,
// each reconcile waiting twice as long as the one before, up to
// maxOverflowBackoff; an overflow while one is due adds nothing; after a
// quiet spell the next is at once again. On synctest's clock: no sleeping.
func TestOverflowBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, r := waitTestDaemon(t)
		r.polled = false
		close(r.begun)
		// queuedAfter reports how long after now the reconcile is queued.
		queuedAfter := func() time.Duration {
			t.Helper()
			start := time.Now()
			for range 3600 {
				synctest.Wait()
				if d.bulk.size() > 0 {
					if n := endQueuedScans(d); n != 1 {
						t.Fatalf("%d reconciles queued, want 1", n)
					}
					synctest.Wait()
					return time.Since(start)
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Fatal("no reconcile queued")
			return 0
		}
		d.overflow(r.path)
		if got := queuedAfter(); got != 0 {
			t.Errorf("first overflow: reconcile after %v, want at once", got)
		}
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
		for _, w := range want {
			d.overflow(r.path)
			d.overflow(r.path) // due already: nothing more
			if got := queuedAfter(); got != w {
				t.Errorf("repeated overflow: reconcile after %v, want %v", got, w)
			}
		}
		for range 20 {
			d.overflow(r.path)
			queuedAfter()
		}
		if r.backoff != maxOverflowBackoff {
			t.Errorf("back-off %v after many overflows, want the cap %v", r.backoff, maxOverflowBackoff)
		}
		time.Sleep(2*maxOverflowBackoff + time.Second)
		d.overflow(r.path)
		if got := queuedAfter(); got != 0 {
			t.Errorf("overflow after a quiet spell: reconcile after %v, want at once", got)
		}
	})
}
