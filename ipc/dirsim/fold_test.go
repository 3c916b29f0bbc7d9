//go:build unix

package dirsim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sif-dev/sif/ipc"
)

// foldFor runs the aggregation over a query directory of files (relative
// path → size) and pairs, under the root /r, and returns the listed
// directories by path (HOST:PATH for another host's) with their
// containment in percent.
func foldFor(t *testing.T, dir string, files map[string]int64, pairs []dirPair, thr float64) (map[string]float64, *dirQuery) {
	t.Helper()
	return foldTops(t, dir, files, pairs, thr, func(string, string) string { return "/r" })
}

// foldTops is foldFor with the tops of top.
func foldTops(t *testing.T, dir string, files map[string]int64, pairs []dirPair, thr float64, top func(host, path string) string) (map[string]float64, *dirQuery) {
	t.Helper()
	q := &dirQuery{dir: dir, top: top}
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
		k := c.path
		if c.host != "" {
			k = c.host + ":" + k
		}
		got[k] = math.Round(q.containment(c)*1000) / 10
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
	c := q.byPath[hostPath{"", "/r/backup/old/proj"}]
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
		if q.byPath[hostPath{"", d}] != nil {
			t.Errorf("%s is a candidate", d)
		}
	}
}

// onHost returns pairs with their host set.
func onHost(host string, pairs []dirPair) []dirPair {
	for i := range pairs {
		pairs[i].host = host
	}
	return pairs
}

// TestFoldHosts: with the fleet, a directory is a candidate on its host.
// The query directory's own path on another host is a directory like any
// other there (a copy kept at the same place); the same path on two hosts
// is two directories, each summed from its own host's files; each host
// climbs to its own tops; and Q, its ancestors and its descendants are
// left out on this host only.
func TestFoldHosts(t *testing.T) {
	rels, sizes := projRels()
	pairs := pairsOf(rels, sizes, "/r/a/copy", nil)
	pairs = append(pairs, pairsOf(rels, sizes, "/r/a/q/sub", nil)...) // inside Q here: no candidate
	pairs = append(pairs, onHost("beta", pairsOf(rels, sizes, "/r/a/q", map[string]float64{"src/b.go": 0.5, "docs/d.txt": 0}))...)
	pairs = append(pairs, onHost("gamma", pairsOf(rels, sizes, "/r/a/copy", map[string]float64{"docs/d.txt": 0}))...)
	tops := map[string]string{"": "/r", "beta": "/r", "gamma": "/r/a"}
	got, q := foldTops(t, "/r/a/q", proj, pairs, 0.25, func(host, _ string) string { return tops[host] })
	want(t, got, map[string]float64{"/r/a/copy": 100, "beta:/r/a/q": 65, "gamma:/r/a/copy": 80})
	for _, c := range []struct {
		host, path         string
		identical, similar int
		shared, revShared  float64
	}{
		{"", "/r/a/copy", 5, 0, 10000, 10000},
		{"beta", "/r/a/q", 3, 1, 6500, 6500},
		{"beta", "/r/a", 3, 1, 6500, 6500},
		{"gamma", "/r/a/copy", 4, 0, 8000, 8000},
	} {
		d := q.byPath[hostPath{c.host, c.path}]
		if d == nil {
			t.Errorf("%s:%s is no candidate", c.host, c.path)
			continue
		}
		if d.identical != c.identical || d.similar != c.similar || d.shared != c.shared || d.revShared != c.revShared {
			t.Errorf("%s:%s: %d identical, %d similar, shared %v, reverse %v; want %d, %d, %v, %v", c.host, c.path,
				d.identical, d.similar, d.shared, d.revShared, c.identical, c.similar, c.shared, c.revShared)
		}
	}
	for _, k := range []hostPath{{"", "/r/a"}, {"", "/r/a/q"}, {"", "/r/a/q/sub"}, {"", "/r"}, {"gamma", "/r"}} {
		if q.byPath[k] != nil {
			t.Errorf("%s:%s is a candidate", k.host, k.path)
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
	if c := q.byPath[hostPath{"", "/r/same"}]; c.identical != 5 || c.similar != 0 || c.shared != 500 || c.revShared != 300 {
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
	q := &dirQuery{dir: "/home/q", top: func(string, string) string { return "/r" }}
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

// hostTotals answers FleetDirTotals from a table by host and path, and
// notes what it was asked.
type hostTotals struct {
	totals map[hostPath]ipc.DirTotal
	asked  []ipc.HostDir
}

func (h *hostTotals) FleetDirTotals(_ context.Context, dirs []ipc.HostDir, _ int) (*ipc.DirTotalsResponse, error) {
	h.asked = append(h.asked, dirs...)
	out := &ipc.DirTotalsResponse{}
	for _, d := range dirs {
		t := h.totals[hostPath{d.Host, d.Path}]
		t.Host, t.FilePath = d.Host, d.FilePath
		out.Dirs = append(out.Dirs, t)
	}
	return out, nil
}

// TestDirMatchesHosts: the totals of each listed directory are asked of
// its host (none for this host's), and its reverse containment and
// resemblance come from them.
func TestDirMatchesHosts(t *testing.T) {
	rels, sizes := projRels()
	pairs := pairsOf(rels, sizes, "/r/a/copy", nil)
	pairs = append(pairs, onHost("beta", pairsOf(rels, sizes, "/r/a/copy", map[string]float64{"src/b.go": 0.5, "docs/d.txt": 0}))...)
	_, q := foldFor(t, "/home/q", proj, pairs, 0.25)
	listed := q.fold(q.candidates(), 0.25)
	tt := &hostTotals{totals: map[hostPath]ipc.DirTotal{
		{"", "/r/a/copy"}:     {Files: 5, Bytes: 10000},
		{"beta", "/r/a/copy"}: {Files: 8, Bytes: 13000},
	}}
	out, err := dirMatches(context.Background(), tt, q, listed)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range out {
		got = append(got, fmt.Sprintf("%s:%s %.0f%% rev %.0f%% res %.0f%% files %d", m.Host, m.Path, m.Containment,
			*m.ReverseContainment, *m.Resemblance, m.IndexedFiles))
	}
	// beta: 6500 of its 13000 bytes are the query's; shared 6500 over
	// 10000 + 13000 - 6500.
	w := []string{":/r/a/copy 100% rev 100% res 100% files 5", "beta:/r/a/copy 65% rev 50% res 39% files 8"}
	if !slices.Equal(got, w) {
		t.Errorf("matches %v, want %v", got, w)
	}
	if len(tt.asked) != 2 {
		t.Errorf("asked %v", tt.asked)
	}
}
