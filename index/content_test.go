package index_test

import (
	"path/filepath"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestCopiesTouchNoPosting: identical files share one content. Adding,
// renaming and removing copies while another copy remains writes no
// posting and leaves the posting keyspace as it was; the last copy's
// removal deletes the content's postings; a file that held its content
// alone and changes rewrites only the postings that differ; a file that
// leaves a shared content writes only the postings of its new content, and
// none when that content is held already.
func TestCopiesTouchNoPosting(t *testing.T) {
	ix := openMem(t, nil, manber)
	a := sketchOf(manber, "A", 1000, feats(1, 2, 3, 4, 5, 6)...)
	b := sketchOf(manber, "B", 1000, feats(5, 6, 7, 8)...)
	put := func(path string, sk *fingerprint.Sketch) {
		t.Helper()
		if _, err := ix.Put(index.FileMeta{Path: path, Size: sk.Size}, sk); err != nil {
			t.Fatal(err)
		}
	}
	postings := func() string {
		t.Helper()
		d, err := ix.RawDigest('P')
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// step runs fn and checks the posting writes it made, the contents and
	// postings left, and that the index is consistent.
	step := func(what string, writes uint64, contents, nPostings int, fn func()) {
		t.Helper()
		before := ix.PostingWrites()
		fn()
		if got := ix.PostingWrites() - before; got != writes {
			t.Errorf("%s: %d posting writes, want %d", what, got, writes)
		}
		rep := mustClean(t, ix)
		if rep.Contents != uint64(contents) || rep.Postings != uint64(nPostings) {
			t.Errorf("%s: %d contents, %d postings; want %d and %d", what, rep.Contents, rep.Postings, contents, nPostings)
		}
	}

	step("first file", 6, 1, 6, func() { put("/a1", a) })
	shared := postings()
	step("a copy", 0, 1, 6, func() { put("/a2", a) })
	step("another copy", 0, 1, 6, func() { put("/a3", a) })
	step("a copy renamed", 0, 1, 6, func() {
		if err := ix.Rename("/a3", index.FileMeta{Path: "/z/a3", Size: a.Size}); err != nil {
			t.Fatal(err)
		}
	})
	step("a copy renamed over another", 0, 1, 6, func() {
		if err := ix.Rename("/z/a3", index.FileMeta{Path: "/a2", Size: a.Size}); err != nil {
			t.Fatal(err)
		}
	})
	step("a copy put again unchanged", 0, 1, 6, func() { put("/a2", a) })
	if got := postings(); got != shared {
		t.Fatalf("posting keyspace changed with copies:\n%s\nwant\n%s", got, shared)
	}
	step("a copy removed", 0, 1, 6, func() {
		if err := ix.Remove("/a1"); err != nil {
			t.Fatal(err)
		}
	})
	if got := postings(); got != shared {
		t.Fatalf("posting keyspace changed with copies:\n%s\nwant\n%s", got, shared)
	}
	// Query answers list every copy.
	res, err := ix.Similar(index.Query{Sketch: a}, index.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := matchPaths(res.Matches); got != "/a2" {
		t.Fatalf("matches %q, want /a2", got)
	}

	step("the last file of a content changes in place", 6, 1, 4, func() { put("/a2", b) }) // 1..4 gone, 7 and 8 new
	step("a copy of the new content", 0, 1, 4, func() { put("/b2", b) })
	step("a copy leaves for a new content", 6, 2, 10, func() { put("/b2", a) })
	step("a copy of it", 0, 2, 10, func() { put("/b3", a) })
	step("a copy leaves for another content", 0, 2, 10, func() { put("/b3", b) })
	// /b2 holds a alone again: changing it to c rewrites what differs
	// from a (1 reweighted, 6 gone, 8 and 9 new).
	c := sketchOf(manber, "C", 1000, append([]fingerprint.Feature{{Hash: poolHash(1), Count: 2}}, feats(2, 3, 4, 5, 8, 9)...)...)
	step("a lone content changes in place", 4, 2, 11, func() { put("/b2", c) })
	step("the last file of a content removed", 7, 1, 4, func() {
		if err := ix.Remove("/b2"); err != nil {
			t.Fatal(err)
		}
	})
	step("a copy removed", 0, 1, 4, func() {
		if err := ix.Remove("/a2"); err != nil {
			t.Fatal(err)
		}
	})
	step("the last file removed", 4, 0, 0, func() {
		if err := ix.Remove("/b3"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCopyCountsSurviveReopen: document frequencies count files, copies
// included, after a reopen as before it.
func TestCopyCountsSurviveReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ix, err := index.Open(dir, &index.Options{Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	a := sketchOf(manber, "A", 1000, feats(1, 2, 3, 4, 5, 6)...)
	for _, p := range []string{"/a1", "/a2", "/a3"} {
		if _, err := ix.Put(index.FileMeta{Path: p, Size: a.Size}, a); err != nil {
			t.Fatal(err)
		}
	}
	q := sketchOf(manber, "", 1000, feats(1, 2, 3, 4, 5, 6)...)
	check := func(when string) {
		t.Helper()
		for _, c := range []struct{ maxDF, skipped, candidates int }{{2, 6, 0}, {3, 0, 3}} {
			res, err := ix.Similar(index.Query{Sketch: q}, index.QueryOptions{MaxDF: c.maxDF})
			if err != nil {
				t.Fatal(err)
			}
			if res.Skipped != c.skipped || res.Candidates != c.candidates {
				t.Errorf("%s, maxdf %d: %d skipped, %d candidates; want %d and %d", when, c.maxDF, res.Skipped, res.Candidates, c.skipped, c.candidates)
			}
		}
	}
	check("before reopening")
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if ix, err = index.Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	check("after reopening")
}

// feats returns features of the top-level pool hashes of ns, seen once.
func feats(ns ...int) []fingerprint.Feature {
	var fs []fingerprint.Feature
	for _, n := range ns {
		fs = append(fs, fingerprint.Feature{Hash: poolHash(n), Count: 1})
	}
	return fs
}
