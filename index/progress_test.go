package index_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// A Groups run keeps its Progress current: the step it is at while it
// selects the files (seen from Visible, called then) and while it lists
// the groups (seen from fn), with the part of the listing done; a reader
// on another goroutine may look at any time (run with -race).
func TestGroupsProgress(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ix := openMem(t, nil, manber)
	for i := range 30 { // pairs of near copies: a group each
		sk := randSketch(rng, manber, 20+rng.IntN(20), 600)
		near := sketchOf(manber, fmt.Sprint(i), sk.Size, sk.Features[1:]...)
		for j, s := range []*fingerprint.Sketch{sk, near} {
			if _, err := ix.Put(metaFor(fmt.Sprintf("/t/%03d-%d", i, j), s, rng), s); err != nil {
				t.Fatal(err)
			}
		}
	}
	var pr index.Progress
	if step, done, _ := pr.Step(); step != "" || done != -1 {
		t.Errorf("before a run: step %q, done %v; want none, -1", step, done)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a status request beside the run
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				pr.Step()
			}
		}
	}()
	var selecting []string
	var dones []float64
	n := 0
	restore := index.SetGroupPairBudget(40) // several passes
	defer restore()
	err := ix.EachGroup(context.Background(), index.GroupOptions{
		Threshold: 0.3,
		Progress:  &pr,
		Visible: func(*index.FileMeta) bool {
			step, _, _ := pr.Step()
			selecting = append(selecting, step)
			return true
		},
	}, func(index.Group) error {
		step, done, since := pr.Step()
		if step != "listing the groups" || since.IsZero() {
			t.Errorf("group %d: step %q (since %v), want listing the groups", n, step, since)
		}
		dones = append(dones, done)
		n++
		return nil
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(selecting) == 0 || selecting[0] != "selecting the files" {
		t.Errorf("steps while selecting: %q", selecting)
	}
	if n < 2 {
		t.Fatalf("%d groups; the test wants several", n)
	}
	for i, d := range dones {
		if want := float64(i) / float64(n); d < want-1e-6 || d > want+1e-6 {
			t.Errorf("listing group %d of %d: done %v, want %v", i, n, d, want)
		}
	}
}
