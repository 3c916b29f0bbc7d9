package index_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestSimilarVisible checks that a query with Visible answers as the same
// query without it whose matches are then filtered: hidden files are
// neither listed, nor counted, nor take a place under the limit. Copies
// sharing one content are filtered each on its own.
func TestSimilarVisible(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	ix := openMem(t, nil, manber)
	var paths []string
	sketches := map[string]*fingerprint.Sketch{}
	for i := range 120 {
		sk := randSketch(rng, manber, 5+rng.IntN(20), 150)
		if len(paths) > 0 && rng.IntN(3) == 0 {
			sk = sketches[paths[rng.IntN(len(paths))]] // an identical copy, sharing its content
		}
		path := fmt.Sprintf("/%c/%03d", 'a'+rng.IntN(3), i)
		if _, err := ix.Put(metaFor(path, sk, rng), sk); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
		sketches[path] = sk
	}
	hidden := func(p string) bool { return strings.HasPrefix(p, "/b/") || strings.HasSuffix(p, "7") }
	visible := func(m *index.FileMeta) bool { return !hidden(m.Path) }
	checked := 0
	for _, qpath := range paths[:30] {
		q := index.Query{Path: qpath, Sketch: sketches[qpath]}
		for _, limit := range []int{0, 3} {
			all, err := ix.Similar(context.Background(), q, index.QueryOptions{Threshold: 0.05, MaxDF: -1})
			if err != nil {
				t.Fatal(err)
			}
			want := slices.DeleteFunc(slices.Clone(all.Matches), func(m index.Match) bool { return hidden(m.Path) })
			candidates := len(want)
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			got, err := ix.Similar(context.Background(), q, index.QueryOptions{Threshold: 0.05, MaxDF: -1, Limit: limit, Visible: visible})
			if err != nil {
				t.Fatal(err)
			}
			if g, w := matchPaths(got.Matches), matchPaths(want); g != w {
				t.Fatalf("query %s limit %d: visible matches %s, want %s", qpath, limit, g, w)
			}
			if got.Candidates != candidates {
				t.Errorf("query %s: %d candidates reported, want the %d visible ones", qpath, got.Candidates, candidates)
			}
			if len(all.Matches) > len(want) {
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no query had a hidden match: the test shows nothing")
	}
}

func matchPaths(ms []index.Match) string {
	var ps []string
	for _, m := range ms {
		ps = append(ps, m.Path)
	}
	return strings.Join(ps, " ")
}
