package index_test

import (
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
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ix.NewBulk()
	if err != nil || b == nil {
		t.Fatalf("NewBulk on an empty index: %v, %v", b, err)
	}
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
		if err := ix.Flush(); err != nil {
			t.Fatal(err)
		}
		rep, err := ix.Check()
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Contents != wantContents {
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
	ix, err = index.Open("/db", &index.Options{FS: fs, Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	step("a Bulk of the index before it was reopened", ix, "/a3", a, b, 1, 6)
}
