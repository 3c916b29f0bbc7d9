//go:build unix

package dirsim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// fold runs the aggregation over a query directory of files (relative
// path → size) and pairs, under the root /r, and returns the listed
// directories by path with their containment in percent.
func foldFor(t *testing.T, dir string, files map[string]int64, pairs []dirPair, thr float64) (map[string]float64, *dirQuery) {
	t.Helper()
	q := &dirQuery{dir: dir, top: func(string) string { return "/r" }}
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	slices.Sort(rels)
	for _, rel := range rels {
		q.rels = append(q.rels, rel)
		q.sizes = append(q.sizes, files[rel])
		q.bytes += files[rel]
	}
	for _, p := range pairs {
		q.pairs = append(q.pairs, p)
	}
	got := map[string]float64{}
	for _, c := range q.fold(q.candidates(), thr) {
		got[c.path] = math.Round(q.containment(c)*1000) / 10
	}
	return got, q
}

// pairsOf makes the pairs of a copy of the query files at top: each
// query file (by index into the sorted relative paths) identical to its
// copy, except those given a containment (0..1) in edited.
func pairsOf(rels []string, sizes []int64, top string, edited map[string]float64) []dirPair {
	var out []dirPair
	for i, rel := range rels {
		c, ok := edited[rel]
		if ok && c == 0 {
			continue // missing from the copy
		}
		p := dirPair{f: i, path: top + "/" + rel, shared: float64(sizes[i]), revShared: float64(sizes[i]), identical: true}
		if ok {
			p.shared, p.revShared, p.identical = c*float64(sizes[i]), c*float64(sizes[i]), false
		}
		out = append(out, p)
	}
	return out
}

var proj = map[string]int64{"README": 1000, "src/a.go": 2000, "src/b.go": 3000, "src/x/c.go": 2000, "docs/d.txt": 2000}

func projRels() ([]string, []int64) {
	var rels []string
	for r := range proj {
		rels = append(rels, r)
	}
	slices.Sort(rels)
	var sizes []int64
	for _, r := range rels {
		sizes = append(sizes, proj[r])
	}
	return rels, sizes
}

func want(t *testing.T, got map[string]float64, w map[string]float64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(w) {
		t.Errorf("listed %v, want %v", got, w)
	}
}

// TestFoldCopies: an original and an edited copy under one root are one
// line each, at their tops; their parts (src/, src/x/, docs/) and their
// common ancestors are not listed.
func TestFoldCopies(t *testing.T) {
	rels, sizes := projRels()
	pairs := pairsOf(rels, sizes, "/r/orig", nil)
	pairs = append(pairs, pairsOf(rels, sizes, "/r/backup/old/proj", map[string]float64{"src/b.go": 0.5, "docs/d.txt": 0})...)
	got, q := foldFor(t, "/home/q", proj, pairs, 0.25)
	want(t, got, map[string]float64{"/r/orig": 100, "/r/backup/old/proj": 65})
	c := q.byPath["/r/backup/old/proj"]
	if c.identical != 3 || c.similar != 1 || c.revShared != 6500 {
		t.Errorf("edited copy: %d identical, %d similar, reverse shared %v; want 3, 1, 6500", c.identical, c.similar, c.revShared)
	}
	// A higher threshold drops the edited copy, and does not list its
	// ancestors instead.
	got, _ = foldFor(t, "/home/q", proj, pairs, 0.7)
	want(t, got, map[string]float64{"/r/orig": 100})
}

// TestFoldNested: a copy nested in a copy is listed, and so is the outer
// one; the directory between them is not.
func TestFoldNested(t *testing.T) {
	rels, sizes := projRels()
	pairs := pairsOf(rels, sizes, "/r/c1", nil)
	pairs = append(pairs, pairsOf(rels, sizes, "/r/c1/vendor/c2", nil)...)
	pairs = append(pairs, pairsOf(rels, sizes, "/r/c1/vendor/c2/again/c3", map[string]float64{"README": 0})...)
	got, _ := foldFor(t, "/home/q", proj, pairs, 0.25)
	want(t, got, map[string]float64{"/r/c1": 100, "/r/c1/vendor/c2": 100, "/r/c1/vendor/c2/again/c3": 90})
}

// TestFoldSplit: a directory holding the query's files in two
// subdirectories, neither enough alone, is listed; so are the halves that
// reach the threshold.
func TestFoldSplit(t *testing.T) {
	rels, sizes := projRels()
	var pairs []dirPair
	for i, rel := range rels {
		top := "/r/p/x"
		if strings.HasPrefix(rel, "src/") {
			top = "/r/p/y"
		}
		pairs = append(pairs, dirPair{f: i, path: top + "/" + strings.ReplaceAll(rel, "/", "_"), shared: float64(sizes[i]), revShared: float64(sizes[i]), identical: true})
	}
	got, _ := foldFor(t, "/home/q", proj, pairs, 0.25)
	want(t, got, map[string]float64{"/r/p": 100, "/r/p/x": 30, "/r/p/y": 70})
	got, _ = foldFor(t, "/home/q", proj, pairs, 0.8)
	want(t, got, map[string]float64{"/r/p": 100})
}

// TestFoldQueryInside: the query directory indexed under the root: its
// ancestors and descendants are never candidates.
func TestFoldQueryInside(t *testing.T) {
	rels, sizes := projRels()
	pairs := pairsOf(rels, sizes, "/r/a/q/sub", nil) // inside Q: not a candidate
	pairs = append(pairs, pairsOf(rels, sizes, "/r/a/copy", nil)...)
	got, q := foldFor(t, "/r/a/q", proj, pairs, 0.1)
	want(t, got, map[string]float64{"/r/a/copy": 100})
	for _, d := range []string{"/r", "/r/a", "/r/a/q", "/r/a/q/sub"} {
		if q.byPath[d] != nil {
			t.Errorf("%s is a candidate", d)
		}
	}
}

// TestFoldIdenticalFiles: every query file identical to every file of
// another directory counts each query file once, and each file there once.
func TestFoldIdenticalFiles(t *testing.T) {
	files := map[string]int64{}
	for i := range 5 {
		files[fmt.Sprintf("f%d", i)] = 100
	}
	var pairs []dirPair
	for f := range 5 {
		for g := range 3 {
			pairs = append(pairs, dirPair{f: f, path: fmt.Sprintf("/r/same/g%d", g), shared: 100, revShared: 100, identical: true})
		}
	}
	got, q := foldFor(t, "/home/q", files, pairs, 0.25)
	want(t, got, map[string]float64{"/r/same": 100})
	if c := q.byPath["/r/same"]; c.identical != 5 || c.similar != 0 || c.shared != 500 || c.revShared != 300 {
		t.Errorf("identical files: %+v", c)
	}
}

// TestFoldEmpty: no files, no pairs: nothing listed, nothing divided by
// zero.
func TestFoldEmpty(t *testing.T) {
	got, _ := foldFor(t, "/home/q", nil, nil, 0.25)
	want(t, got, map[string]float64{})
}

// BenchmarkFold sums and folds the matches of a 2,000-file directory,
// 16 per file, spread over a tree of 1,300 directories under one root.
func BenchmarkFold(b *testing.B) {
	q := &dirQuery{dir: "/home/q", top: func(string) string { return "/r" }}
	for i := range 2000 {
		q.rels = append(q.rels, fmt.Sprintf("d%d/f%d.go", i%100, i))
		q.sizes = append(q.sizes, 10000)
		q.bytes += 10000
		for j := range 16 {
			d := (i*7 + j*131) % 1300
			q.pairs = append(q.pairs, dirPair{f: i, path: fmt.Sprintf("/r/src/a%d/b%d/c%d/f%d.go", d%13, d%100, d, j),
				shared: float64(1000 * (j + 1) % 10000), revShared: 5000, identical: j == 0})
		}
	}
	b.SetBytes(q.bytes)
	for b.Loop() {
		for _, c := range q.byPath {
			c.listed = false
		}
		q.fold(q.candidates(), 0.25)
	}
}

// TestFoldCopyListedBelowItsTop: DIR holds only cmd/, so the copy of DIR
// in the index (/r/src) is listed at /r/src/cmd, where all of it is; the
// subdirectories of that copy, whose files lie at their DIR paths under
// /r/src, are parts of it and not listed on their own.
func TestFoldCopyListedBelowItsTop(t *testing.T) {
	files := map[string]int64{"cmd/c.go": 1000, "cmd/go/a.go": 3000, "cmd/go/internal/b.go": 3000, "cmd/go/internal/d.go": 3000}
	var rels []string
	for r := range files {
		rels = append(rels, r)
	}
	slices.Sort(rels)
	var sizes []int64
	for _, r := range rels {
		sizes = append(sizes, files[r])
	}
	got, _ := foldFor(t, "/home/q", files, pairsOf(rels, sizes, "/r/src", nil), 0.25)
	want(t, got, map[string]float64{"/r/src/cmd": 100})
}
