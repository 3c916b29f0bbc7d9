package index_test

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// A Bulk spares PutBulk the search for an equal content while every
// content was made through it, and only then: a file whose bytes another
// put of the load wrote first, a content made by a plain Put, and a Bulk
// of an index since reopened all make PutBulk search, so that identical
// files still share one content.
func TestBulk(t *testing.T) {
	fs := vfs.NewMem()
	ix, b := openBulk(t, fs)
	sk := func(label string, f ...int) *fingerprint.Sketch { return sketchOf(manber, label, 1000, feats(f...)...) }
	a, c, e, e2, f, g := sk("A", 1, 2, 3, 4), sk("C", 5, 6, 7, 8), sk("E", 9, 10, 11), sk("E2", 9, 10, 12), sk("F", 13, 14, 15), sk("G", 16, 17, 18)
	ino := uint64(0)
	step := func(what string, ix *index.Index, path string, s *fingerprint.Sketch, b *index.Bulk, wantSearches, wantContents uint64) {
		t.Helper()
		ino++
		before := ix.ContentSearches()
		meta := index.FileMeta{Path: path, Size: 1000, Dev: 1, Ino: ino}
		var err error
		if b == nil {
			_, err = ix.Put(meta, s)
		} else {
			_, err = ix.PutBulk(meta, s, b)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := ix.ContentSearches() - before; n != wantSearches {
			t.Errorf("%s: %d searches for an equal content, want %d", what, n, wantSearches)
		}
		if rep := flushAndCheck(t, ix); !rep.OK() || rep.Contents != wantContents {
			t.Errorf("%s: %d contents, problems %q; want %d contents", what, rep.Contents, rep.Problems, wantContents)
		}
	}

	if _, first := b.Add(a.Strong); !first {
		t.Fatal("Add: A met before")
	}
	step("bytes met first", ix, "/a1", a, b, 0, 1)
	step("a copy put as new", ix, "/a2", a, b, 1, 1)
	// Both workers met C's bytes; the one that met them second puts first.
	b.Add(c.Strong)
	if cid, first := b.Add(c.Strong); first || cid != 0 {
		t.Fatalf("Add of C again: %d, %v; want 0, false", cid, first)
	}
	step("the second to meet C puts first", ix, "/c2", c, b, 0, 2)
	step("the first to meet C puts second", ix, "/c1", c, b, 1, 2)
	// A content rewritten in place by the load: the hash it has now is
	// recorded, the one it had no longer names it.
	b.Add(e.Strong)
	step("E", ix, "/e1", e, b, 0, 3)
	b.Add(e2.Strong)
	step("E rewritten as E2", ix, "/e1", e2, b, 0, 3)
	step("a copy of E2", ix, "/e2", e2, b, 1, 3)
	step("E again, whose content became E2", ix, "/e3", e, b, 1, 4)

	// A content made by another writer: the load searches from then on.
	step("F by Put", ix, "/f1", f, nil, 1, 5)
	b.Add(f.Strong)
	step("F by the load", ix, "/f2", f, b, 1, 5)
	b.Add(g.Strong)
	step("G, new", ix, "/g1", g, b, 1, 6)
	if b2, err := ix.NewBulk(); err != nil || b2 != nil {
		t.Errorf("NewBulk on an index with contents: %v, %v; want nil", b2, err)
	}

	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	step("a Bulk of the index before it was reopened", ix, "/a3", a, b, 1, 6)
}

// A Bulk spares PutBulk and PutCopyOf the lookup of a path only while no
// write since the Bulk was taken can have given the path a record: a path
// the load put before, one another writer put or renamed a file to, and
// every path once the Bulk has ended or another has been taken, are looked
// up, so that a path never gets a second file id.
func TestBulkPaths(t *testing.T) {
	fs := vfs.NewMem()
	ix, b := openBulk(t, fs)
	sk := func(label string, f ...int) *fingerprint.Sketch { return sketchOf(manber, label, 1000, feats(f...)...) }
	a, c, e := sk("A", 1, 2, 3, 4), sk("C", 5, 6, 7, 8), sk("E", 9, 10, 11)
	ino := uint64(0)
	var cidA uint32
	check := func(what string, wantLookups, before uint64, wantFiles uint64) {
		t.Helper()
		if n := ix.PathLookups() - before; n != wantLookups {
			t.Errorf("%s: %d path lookups, want %d", what, n, wantLookups)
		}
		if rep := flushAndCheck(t, ix); !rep.OK() || rep.Files != wantFiles {
			t.Errorf("%s: %d files, problems %q; want %d files", what, rep.Files, rep.Problems, wantFiles)
		}
	}
	put := func(what, path string, s *fingerprint.Sketch, b *index.Bulk, wantLookups, wantFiles uint64) {
		t.Helper()
		ino++
		before := ix.PathLookups()
		meta := index.FileMeta{Path: path, Size: 1000, Dev: 1, Ino: ino}
		var rec index.FileRecord
		var err error
		if b == nil {
			rec, err = ix.Put(meta, s)
		} else {
			rec, err = ix.PutBulk(meta, s, b)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if s == a {
			cidA = rec.Content
		}
		check(what, wantLookups, before, wantFiles)
	}
	putCopy := func(what, path string, b *index.Bulk, wantLookups, wantFiles uint64) {
		t.Helper()
		ino++
		before := ix.PathLookups()
		meta := index.FileMeta{Path: path, Size: 1000, Dev: 1, Ino: ino}
		if _, ok, err := ix.PutCopyOf(meta, cidA, a.Size, a.Strong, b); err != nil || !ok {
			t.Fatalf("%s: %v, %v", what, ok, err)
		}
		check(what, wantLookups, before, wantFiles)
	}

	put("a new path", "/a1", a, b, 0, 1)
	putCopy("a copy at a new path", "/a2", b, 0, 2)
	put("a path the load put before", "/a1", c, b, 1, 2)
	putCopy("a copy at a path the load put before", "/a2", b, 1, 2)
	put("a path by Put", "/p", e, nil, 1, 3)
	put("the load at the path Put put", "/p", a, b, 1, 3)
	putCopy("a copy at the path Put put", "/p", b, 1, 3)
	if err := ix.Rename("/a2", index.FileMeta{Path: "/r", Size: 1000, Dev: 1, Ino: 100}); err != nil {
		t.Fatal(err)
	}
	put("the load at a path a file was renamed to", "/r", c, b, 1, 3)
	put("the load at the path renamed from", "/a2", e, b, 1, 4)
	put("another new path", "/n1", e, b, 0, 5)

	b.End()
	put("a new path once the Bulk ended", "/n2", e, b, 1, 6)
	putCopy("a copy at a new path once the Bulk ended", "/n3", b, 1, 7)

	// A Bulk of an index that held nothing, once another has been taken.
	ix2, err := index.Open("/db2", &index.Options{FS: fs, Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	b1, _ := ix2.NewBulk()
	b2, _ := ix2.NewBulk()
	for _, x := range []struct {
		b    *index.Bulk
		want uint64
	}{{b1, 1}, {b2, 0}} {
		before := ix2.PathLookups()
		ino++
		if _, err := ix2.PutBulk(index.FileMeta{Path: fmt.Sprintf("/x%d", x.want), Size: 1000, Dev: 1, Ino: ino}, a, x.b); err != nil {
			t.Fatal(err)
		}
		if n := ix2.PathLookups() - before; n != x.want {
			t.Errorf("a Bulk taken %s: %d path lookups, want %d", map[uint64]string{1: "first", 0: "last"}[x.want], n, x.want)
		}
	}

	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = index.Open("/db", &index.Options{FS: fs, Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	put("a Bulk of the index before it was reopened", "/n4", e, b, 1, 8)
}

// The filter of a Bulk's paths has no false negatives however many paths
// it holds, and few false positives.
func TestPathFilter(t *testing.T) {
	var f index.PathFilter
	const n = 300_000 // five filters in the chain
	for i := range n {
		f.Add(fmt.Sprintf("/tree/dir%d/file%d", i%977, i))
	}
	for i := range n {
		if p := fmt.Sprintf("/tree/dir%d/file%d", i%977, i); !f.MayHold(p) {
			t.Fatalf("%s added, but not held", p)
		}
	}
	false_ := 0
	for i := range n {
		if f.MayHold(fmt.Sprintf("/tree/dir%d/other%d", i%977, i)) {
			false_++
		}
	}
	if rate := float64(false_) / n; rate > 0.05 {
		t.Errorf("false-positive rate %.3f over %d filters, want at most 0.05", rate, f.Filters())
	}
}

// openBulk opens an empty index in fs and takes a Bulk of it.
func openBulk(t *testing.T, fs vfs.FS) (*index.Index, *index.Bulk) {
	t.Helper()
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ix.NewBulk()
	if err != nil || b == nil {
		t.Fatalf("NewBulk on an empty index: %v, %v", b, err)
	}
	return ix, b
}

// flushAndCheck writes the postings ix holds pending and checks it.
func flushAndCheck(t *testing.T, ix *index.Index) *index.CheckReport {
	t.Helper()
	if err := ix.Flush(); err != nil {
		t.Fatal(err)
	}
	rep, err := ix.Check()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
