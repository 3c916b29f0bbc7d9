package index_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// MetasAfter read in batches of every size gives the records under a
// prefix in path order, each exactly as Files gives it; Paths gives the
// paths of a range, keys only. Paths are put in an order other than path
// order (file ids out of path order), with names that sort around the
// separator ("a.txt" before "a/", "a0" after), and records outside the
// prefix on both sides.
func TestMetasAfterAndPaths(t *testing.T) {
	p := fingerprint.DefaultParams()
	ix := openMem(t, nil, p)
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []string{
		"/r", "/r.txt", "/r/a", "/r/a.txt", "/r/a/x", "/r/a/y/z", "/r/a-b", "/r/a0", "/r/b", "/r/\xff",
		"/q/before", "/s/after", "/r0/sibling",
	}
	for i := range 40 {
		paths = append(paths, fmt.Sprintf("/r/d%d/f%03d", i%3, rng.IntN(1000)))
	}
	paths = slices.Compact(paths)
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	metas := map[string]index.FileMeta{}
	for i, path := range paths {
		sk := sketchOf(p, fmt.Sprintf("content %d", i%7), 100+int64(i), fingerprint.Feature{Hash: topHash(uint64(i%7) + 1)})
		m := metaFor(path, sk, rng)
		if _, err := ix.Put(m, sk); err != nil {
			t.Fatal(err)
		}
		metas[path] = m
	}
	for _, prefix := range []string{"/r/", "/r/a/", "/", "/none/"} {
		var want []index.FileMeta
		if err := ix.Files(prefix, func(rec index.FileRecord) error { want = append(want, rec.FileMeta); return nil }); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 7, 1000} {
			var got []index.FileMeta
			after := ""
			for {
				batch, err := ix.MetasAfter(prefix, after, n, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(batch) > n {
					t.Fatalf("prefix %q, batches of %d: a batch of %d", prefix, n, len(batch))
				}
				if len(batch) == 0 {
					break
				}
				got = append(got, batch...)
				after = batch[len(batch)-1].Path
			}
			if !slices.Equal(got, want) {
				t.Errorf("prefix %q in batches of %d:\n got %v\nwant %v", prefix, n, got, want)
			}
			for _, m := range got {
				if m != metas[m.Path] {
					t.Errorf("%q: %+v, put %+v", m.Path, m, metas[m.Path])
				}
			}
		}
	}
	// after before the prefix, or a path not indexed: the next ones.
	got, err := ix.MetasAfter("/r/", "/a", 1, nil)
	if err != nil || len(got) != 1 || got[0].Path != "/r/a" {
		t.Errorf("MetasAfter(/r/, /a): %v %v, want /r/a", got, err)
	}
	got, err = ix.MetasAfter("/r/", "/r/a.zzz", 1, nil)
	if err != nil || len(got) != 1 || got[0].Path != "/r/a/x" {
		t.Errorf("MetasAfter(/r/, /r/a.zzz): %v %v, want /r/a/x", got, err)
	}

	sorted := slices.Sorted(func(yield func(string) bool) {
		for _, p := range paths {
			if !yield(p) {
				return
			}
		}
	})
	for _, c := range []struct{ lo, hi string }{{"", ""}, {"", "/r/"}, {"/r/", "/r0"}, {"/r0", ""}, {"/s", "/r"}} {
		var want []string
		for _, p := range sorted {
			if p >= c.lo && (c.hi == "" || p < c.hi) {
				want = append(want, p)
			}
		}
		var got []string
		if err := ix.Paths(c.lo, c.hi, func(p string) error { got = append(got, p); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Paths(%q, %q) = %q, want %q", c.lo, c.hi, got, want)
		}
	}
	stop := errors.New("stop")
	if err := ix.Paths("", "", func(string) error { return stop }); err != stop {
		t.Errorf("Paths returned %v, want fn's error unwrapped", err)
	}
	ix.Close()
	if _, err := ix.MetasAfter("/", "", 1, nil); !errors.Is(err, index.ErrClosed) {
		t.Errorf("MetasAfter on a closed index: %v, want ErrClosed", err)
	}
	if err := ix.Paths("", "", func(string) error { return nil }); !errors.Is(err, index.ErrClosed) {
		t.Errorf("Paths on a closed index: %v, want ErrClosed", err)
	}
}
