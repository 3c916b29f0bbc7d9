package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// doneAfter is a context that is done once it has been looked at (Err)
// more than looks times: a query given it stops only if it looks at its
// context again while it works, not just when it starts.
type doneAfter struct {
	context.Context
	looks atomic.Int64
	once  sync.Once
	done  chan struct{}
}

func newDoneAfter(looks int64) *doneAfter {
	c := &doneAfter{Context: context.Background(), done: make(chan struct{})}
	c.looks.Store(looks)
	return c
}

func (c *doneAfter) Done() <-chan struct{} { return c.done }

func (c *doneAfter) Err() error {
	if c.looks.Add(-1) < 0 {
		c.once.Do(func() { close(c.done) })
		return context.Canceled
	}
	return nil
}

// cancelFixture is an index of clusters of similar files, with an
// identical copy in each: every query kind has work to do.
const (
	cancelClusters = 40
	cancelPerGroup = 25
)

func cancelIndex(t *testing.T) (*index.Index, *fingerprint.Sketch) {
	t.Helper()
	ix := openMem(t, nil, manber)
	rng := rand.New(rand.NewPCG(19, 7))
	var query []fingerprint.Feature
	for c := range cancelClusters {
		for i := range cancelPerGroup {
			// 30 of the cluster's 60 fingerprints; the first two files
			// are identical.
			label, picks := fmt.Sprintf("c%d-%d", c, i), rng.Perm(60)[:30]
			if i < 2 {
				label, picks = fmt.Sprintf("c%d-0", c), rng.Perm(30)
			}
			var fs []fingerprint.Feature
			for _, k := range picks {
				fs = append(fs, fingerprint.Feature{Hash: poolHash(c*100 + k), Count: 1})
			}
			sk := sketchOf(manber, label, 30*256, fs...)
			if _, err := ix.Put(metaFor(fmt.Sprintf("/d%02d/f%02d", c, i), sk, rng), sk); err != nil {
				t.Fatal(err)
			}
		}
		for k := range 60 {
			query = append(query, fingerprint.Feature{Hash: poolHash(c*100 + k), Count: 1})
		}
	}
	return ix, sketchOf(manber, "", int64(len(query))*256, query...)
}

// cancelQueries runs each query kind of the index with ctx and returns its
// error, and how much it found.
func cancelQueries(ix *index.Index, q *fingerprint.Sketch) map[string]func(ctx context.Context) (int, error) {
	return map[string]func(ctx context.Context) (int, error){
		"Similar": func(ctx context.Context) (int, error) {
			res, err := ix.Similar(ctx, index.Query{Sketch: q}, index.QueryOptions{Threshold: 1e-9, MinFeatures: 1})
			if err != nil {
				return 0, err
			}
			return len(res.Matches), nil
		},
		"Groups": func(ctx context.Context) (int, error) {
			gs, err := ix.Groups(ctx, index.GroupOptions{})
			return len(gs), err
		},
		"EachGroup": func(ctx context.Context) (int, error) {
			n := 0
			err := ix.EachGroup(ctx, index.GroupOptions{}, func(index.Group) error { n++; return nil })
			return n, err
		},
		"Dupes": func(ctx context.Context) (int, error) {
			ds, err := ix.Dupes(ctx, "")
			return len(ds), err
		},
		"DirTotals": func(ctx context.Context) (int, error) {
			ts, err := ix.DirTotals(ctx, []string{"/d00", "/d01", "/"}, nil)
			if err != nil {
				return 0, err
			}
			return int(ts[2].Files), nil
		},
	}
}

// TestQueriesStopWhenCanceled: every query of the index fails with
// context.Canceled when its context is done before it starts, and when it
// is done while the query works (a context that is done after its first
// look), where with a live context the same query finds what the index
// holds.
func TestQueriesStopWhenCanceled(t *testing.T) {
	ix, q := cancelIndex(t)
	want := map[string]int{
		"Similar":   cancelClusters * cancelPerGroup,
		"Groups":    cancelClusters,
		"EachGroup": cancelClusters,
		"Dupes":     cancelClusters,
		"DirTotals": cancelClusters * cancelPerGroup,
	}
	for name, run := range cancelQueries(ix, q) {
		t.Run(name, func(t *testing.T) {
			if n, err := run(context.Background()); err != nil || n != want[name] {
				t.Fatalf("live context: found %d, err %v; want %d", n, err, want[name])
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if n, err := run(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("canceled before it starts: found %d, err %v; want context.Canceled", n, err)
			}
			if n, err := run(newDoneAfter(1)); !errors.Is(err, context.Canceled) {
				t.Errorf("canceled while it works: found %d, err %v; want context.Canceled", n, err)
			}
		})
	}
}

// TestSimilarStopsBetweenCandidates cancels a query from its Visible
// filter, on the first candidate it judges: it stops there, rather than
// reading the records of the other thousand.
func TestSimilarStopsBetweenCandidates(t *testing.T) {
	ix, q := cancelIndex(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	_, err := ix.Similar(ctx, index.Query{Sketch: q}, index.QueryOptions{Threshold: 1e-9, MinFeatures: 1,
		Visible: func(*index.FileMeta) bool { calls++; cancel(); return true }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if calls > 2 { // a content and its copy
		t.Errorf("Visible called %d times after the query was canceled on its first call", calls)
	}
}

// TestGroupsStopWhileSelecting cancels a groups run from its Visible
// filter, called once per file while the files are selected, before any
// pair is counted: it stops within a few hundred files, and yields no
// group.
func TestGroupsStopWhileSelecting(t *testing.T) {
	ix, _ := cancelIndex(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls, groups := 0, 0
	err := ix.EachGroup(ctx, index.GroupOptions{Visible: func(*index.FileMeta) bool { calls++; cancel(); return true }},
		func(index.Group) error { groups++; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if groups != 0 || calls >= cancelClusters*cancelPerGroup {
		t.Errorf("canceled on the first file: Visible called %d times of %d files, %d groups yielded; want fewer, and none",
			calls, cancelClusters*cancelPerGroup, groups)
	}
}

// TestEachGroupStopsBetweenGroups cancels a groups run from its callback,
// after the first group: no other group is yielded.
func TestEachGroupStopsBetweenGroups(t *testing.T) {
	ix, _ := cancelIndex(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	groups := 0
	err := ix.EachGroup(ctx, index.GroupOptions{}, func(index.Group) error { groups++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || groups != 1 {
		t.Fatalf("%d groups yielded, err %v; want 1, context.Canceled", groups, err)
	}
}
