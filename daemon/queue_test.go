package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sif-dev/sif/watcher"
)

// Workers take live items before bulk ones: with both lanes full, every
// live item comes out of next before any bulk item, in the order each lane
// was filled. (Were next to pick among ready lanes at random, as a single
// select does, a bulk item would come out among the first few: the
// chance that 200 live items all come first is 2⁻²⁰⁰.)
func TestLanesLiveBeforeBulk(t *testing.T) {
	const nLive, nBulk = 200, bulkLane
	l := newLanes()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Bulk first: what was queued earlier must not matter.
	for i := range nBulk {
		if !l.push(ctx, false, item{path: fmt.Sprintf("/bulk/%d", i)}) {
			t.Fatal("push on the bulk lane refused")
		}
	}
	for i := range nLive {
		if !l.push(ctx, true, item{path: fmt.Sprintf("/live/%d", i)}) {
			t.Fatal("push on the live lane refused")
		}
	}
	for i := range nLive + nBulk {
		want := fmt.Sprintf("/live/%d", i)
		if i >= nLive {
			want = fmt.Sprintf("/bulk/%d", i-nLive)
		}
		it, ok := l.next(ctx)
		if !ok {
			t.Fatalf("item %d: next returned nothing with items queued", i)
		}
		if it.path != want {
			t.Fatalf("item %d is %s, want %s: live items come out before bulk ones, each lane in order", i, it.path, want)
		}
		// A live item that arrives while the bulk lane is being worked
		// through is taken next.
		if i == nLive+10 {
			l.push(ctx, true, item{path: "/live/late"})
			if it, _ := l.next(ctx); it.path != "/live/late" {
				t.Fatalf("after a live item arrived, next gave %s, want /live/late", it.path)
			}
		}
	}
	cancel()
	if it, ok := l.next(ctx); ok {
		t.Errorf("next on empty lanes with ctx done gave %+v", it)
	}
}

// A change that settles while a scan's files wait for the workers is
// applied before them: with the one worker busy and a rescan's new files
// queued, changed files handed on by the settler are each brought up to
// date before any of the files still queued. In a synctest bubble: the
// files are queued, and the worker held, once every goroutine is blocked.
func TestWorkersTakeChangesBeforeScans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		const nBulk, nLive = 100, 20
		files := map[string][]byte{}
		for i := range nLive {
			files[filepath.Join(root, fmt.Sprintf("live-%02d.txt", i))] = words(uint64(i), 200)
		}
		writeFiles(t, files)
		d, _ := bubbleDaemon(t, Config{Roots: []string{root}, Workers: 1})

		var mu sync.Mutex
		var order []string
		hold := make(chan struct{})
		held := false
		testHookIndexFile = func(path string) {
			mu.Lock()
			order = append(order, filepath.Base(path))
			first := !held
			held = true
			mu.Unlock()
			if first {
				<-hold
			}
		}
		t.Cleanup(func() { testHookIndexFile = nil })

		// A rescan finds new files: the worker takes the first and is
		// held; the others wait on the bulk lane.
		files = map[string][]byte{}
		for i := range nBulk {
			files[filepath.Join(root, fmt.Sprintf("bulk-%03d.txt", i))] = words(uint64(1000+i), 200)
		}
		writeFiles(t, files)
		if _, err := d.Rescan(root); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := len(d.lanes.bulk); got != nBulk-1 {
			t.Fatalf("%d files on the bulk lane, want %d", got, nBulk-1)
		}
		// Meanwhile files change and settle.
		for i := range nLive {
			p := filepath.Join(root, fmt.Sprintf("live-%02d.txt", i))
			if err := os.WriteFile(p, words(uint64(500+i), 200), 0o644); err != nil {
				t.Fatal(err)
			}
			d.settled(context.Background(), watcher.Settled{Path: p, First: time.Now()})
		}
		close(hold)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		if len(order) != nBulk+nLive {
			t.Fatalf("%d files brought up to date, want %d: %q", len(order), nBulk+nLive, order)
		}
		if !strings.HasPrefix(order[0], "bulk-") {
			t.Fatalf("the worker was held on %s, want a file of the rescan", order[0])
		}
		for i, p := range order[1 : 1+nLive] {
			if !strings.HasPrefix(p, "live-") {
				t.Fatalf("file %d brought up to date is %s: a scan's file before a settled change (order %q)", i+1, p, order)
			}
		}
	})
}
