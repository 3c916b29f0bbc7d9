package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// simiSet puts n random files (a few of them copies of others) in a new
// index with SimiHash keys and returns it with each file's sketch. With
// equal, most keys are one of three values.
func simiSet(t *testing.T, rng *rand.Rand, n int, equal bool) (*index.Index, map[string]*fingerprint.Sketch) {
	t.Helper()
	on := true
	ix, err := openSimi(t, vfs.NewMem(), &on)
	if err != nil {
		t.Fatal(err)
	}
	sketches := map[string]*fingerprint.Sketch{}
	var paths []string
	for i := range n {
		path := fmt.Sprintf("/r/d%d/f%03d", i%3, i)
		sk := simiSketch(rng, path)
		if equal && rng.IntN(5) > 0 {
			sk.Key = uint32(500 + 30*rng.IntN(3))
		}
		if len(paths) > 0 && rng.IntN(8) == 0 {
			sk = sketches[paths[rng.IntN(len(paths))]]
		}
		if _, err := ix.Put(index.FileMeta{Path: path, Size: sk.Size}, sk); err != nil {
			t.Fatal(err)
		}
		sketches[path] = sk
		paths = append(paths, path)
	}
	mustClean(t, ix)
	return ix, sketches
}

// bruteSimi judges every pair of distinct contents of the files sketches
// holds under prefix, as SimiGroups should, and returns the counts of
// pairs within the key tolerance and size ratio and of similar pairs, and
// the groups as sorted path lists.
func bruteSimi(sketches map[string]*fingerprint.Sketch, prefix string) (close, similar int64, groups []string) {
	tol := fingerprint.DefaultTolerances()
	var contents []*fingerprint.Sketch
	filesOf := map[*fingerprint.Sketch][]string{}
	for p, sk := range sketches {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		if filesOf[sk] == nil {
			contents = append(contents, sk)
		}
		filesOf[sk] = append(filesOf[sk], p)
	}
	parent := make([]int, len(contents))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	linked := make([]bool, len(contents))
	for i, a := range contents {
		for j, b := range contents[:i] {
			v1, v2 := tol.Judge(&a.Summary, &b.Summary), tol.Judge(&b.Summary, &a.Summary)
			if (v1.KeyDistance <= v1.KeyTolerance || v2.KeyDistance <= v2.KeyTolerance) && v1.SizesClose {
				close++
			}
			if v1.Similar || v2.Similar {
				similar++
				parent[find(i)] = find(j)
				linked[i], linked[j] = true, true
			}
		}
	}
	sets := map[int][]string{}
	for i, sk := range contents {
		if linked[i] {
			sets[find(i)] = append(sets[find(i)], filesOf[sk]...)
		}
	}
	for _, s := range sets {
		slices.Sort(s)
		groups = append(groups, strings.Join(s, " "))
	}
	slices.Sort(groups)
	return close, similar, groups
}

// TestSimiGroupsBruteForce checks SimiGroups' comparisons, similar pairs
// and groups against every pair judged, on random sets, with keys spread
// and with many equal keys, whole and under a prefix; and each member's
// distances to its group's first member, which has the least key.
func TestSimiGroupsBruteForce(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 29))
			ix, sketches := simiSet(t, rng, 150, seed%2 == 1)
			for _, prefix := range []string{"", "/r/d1/"} {
				var got []string
				st, err := ix.SimiGroups(context.Background(), index.SimiGroupOptions{PathPrefix: prefix}, func(g index.SimiGroup) error {
					var ps []string
					first := sketches[g.Members[0].Path]
					for i, m := range g.Members {
						ps = append(ps, m.Path)
						sk := sketches[m.Path]
						v := fingerprint.DefaultTolerances().Judge(&first.Summary, &sk.Summary)
						if m.SumDistance != v.SumDistance || m.KeyDistance != v.KeyDistance || m.Identical != (sk == first && i > 0) || sk.Key < first.Key {
							t.Errorf("member %s of the group of %s: got %+v, want %+v", m.Path, g.Members[0].Path, m, v)
						}
					}
					slices.Sort(ps)
					got = append(got, strings.Join(ps, " "))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(got)
				close, similar, want := bruteSimi(sketches, prefix)
				if !slices.Equal(got, want) {
					t.Fatalf("prefix %q: groups\n%s\nwant\n%s", prefix, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if st.Comparisons != close || st.Similar != similar || st.Overflow != 0 || st.Groups != len(want) {
					t.Fatalf("prefix %q: stats %+v, want %d comparisons, %d similar, %d groups", prefix, st, close, similar, len(want))
				}
				if st.Pairs != int64(st.Contents)*int64(st.Contents-1)/2 || st.Comparisons > st.Pairs || len(want) == 0 {
					t.Fatalf("prefix %q: stats %+v", prefix, st)
				}
			}
		})
	}
}

// TestSimiGroupsWindowCap checks that a set of equal keys fills no more
// than MaxWindow contents, each compared with at most MaxWindow before it,
// and says so in Overflow.
func TestSimiGroupsWindowCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 29))
	on := true
	ix, err := openSimi(t, vfs.NewMem(), &on)
	if err != nil {
		t.Fatal(err)
	}
	const n, window = 300, 20
	for i := range n {
		sk := simiSketch(rng, fmt.Sprint(i))
		sk.Size, sk.Key = 1000, 500
		if _, err := ix.Put(index.FileMeta{Path: fmt.Sprintf("/f%03d", i), Size: sk.Size}, sk); err != nil {
			t.Fatal(err)
		}
	}
	st, err := ix.SimiGroups(context.Background(), index.SimiGroupOptions{MaxWindow: window}, func(index.SimiGroup) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Window != window || st.Overflow != n-window || st.Comparisons > n*window || st.Contents != n {
		t.Fatalf("stats %+v, want a window of %d, %d overflowed, at most %d comparisons", st, window, n-window, n*window)
	}
	whole, err := ix.SimiGroups(context.Background(), index.SimiGroupOptions{}, func(index.SimiGroup) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if whole.Comparisons != n*(n-1)/2 || whole.Overflow != 0 {
		t.Fatalf("without a cap: stats %+v, want every pair compared", whole)
	}
}

// TestSimiGroupsErrors checks the refusals: an index without SimiHash
// keys, bad tolerances and a negative window.
func TestSimiGroupsErrors(t *testing.T) {
	off := false
	ix, err := openSimi(t, vfs.NewMem(), &off)
	if err != nil {
		t.Fatal(err)
	}
	none := func(index.SimiGroup) error { return nil }
	if _, err := ix.SimiGroups(context.Background(), index.SimiGroupOptions{}, none); !errors.Is(err, index.ErrNoSimiHash) {
		t.Fatalf("without SimiHash keys: %v, want ErrNoSimiHash", err)
	}
	on := true
	ix, err = openSimi(t, vfs.NewMem(), &on)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []index.SimiGroupOptions{{MaxWindow: -1}, {Tolerances: fingerprint.Tolerances{SizeRatio: 2}}} {
		if _, err := ix.SimiGroups(context.Background(), o, none); !errors.Is(err, index.ErrBadQuery) {
			t.Fatalf("%+v: %v, want ErrBadQuery", o, err)
		}
	}
}
