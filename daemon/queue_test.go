package daemon

import (
	"context"
	"fmt"
	"testing"
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
