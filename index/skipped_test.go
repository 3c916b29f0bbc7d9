package index_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sif-dev/sif/index"
)

// TestSkippedHash: a query's result names the features skipped for their
// document frequency, and only those.
func TestSkippedHash(t *testing.T) {
	ix, err := index.Open(filepath.Join(t.TempDir(), "db"), &index.Options{Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	common := sketchOf(manber, "C", 1000, feats(1, 2, 3, 4, 5, 6)...)
	for _, p := range []string{"/c1", "/c2", "/c3"} {
		if _, err := ix.Put(index.FileMeta{Path: p, Size: common.Size}, common); err != nil {
			t.Fatal(err)
		}
	}
	rare := sketchOf(manber, "R", 1000, feats(7, 8, 9, 10, 11, 12)...)
	if _, err := ix.Put(index.FileMeta{Path: "/r", Size: rare.Size}, rare); err != nil {
		t.Fatal(err)
	}
	q := sketchOf(manber, "", 1000, feats(1, 2, 3, 7, 8, 9, 10)...)
	for _, c := range []struct {
		maxDF   int
		skipped []int
	}{{2, []int{1, 2, 3}}, {3, nil}, {-1, nil}} {
		res, err := ix.Similar(context.Background(), index.Query{Sketch: q}, index.QueryOptions{MaxDF: c.maxDF})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.SkippedKeys) != res.Skipped || res.Skipped != len(c.skipped) {
			t.Errorf("maxdf %d: %d skipped, %d keys; want %d", c.maxDF, res.Skipped, len(res.SkippedKeys), len(c.skipped))
		}
		want := map[int]bool{}
		for _, k := range c.skipped {
			want[k] = true
		}
		for _, k := range []int{1, 2, 3, 4, 7, 8, 9, 10, 13} {
			if got := res.SkippedHash(poolHash(k)); got != want[k] {
				t.Errorf("maxdf %d: SkippedHash(feature %d) = %v, want %v", c.maxDF, k, got, want[k])
			}
		}
	}
}
