package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestDirTotals checks directory totals against the files put: whole path
// components, trailing separators, the root, a file asked as a directory,
// an empty tree, identical copies counted each, the bound and Visible.
func TestDirTotals(t *testing.T) {
	ix := openMem(t, nil, manber)
	rng := rand.New(rand.NewPCG(1, 2))
	files := map[string]int64{
		"/a/b/x":     1000,
		"/a/b/y":     2000,
		"/a/b/sub/w": 700,
		"/a/bc/z":    500,
		"/a/b.d/v":   300, // '.' sorts before '/': outside /a/b all the same
		"/c/d":       50,
	}
	for p, size := range files {
		sk := sketchOf(manber, p, size, fingerprint.Feature{Hash: topHash(uint64(size)), Count: 1})
		if _, err := ix.Put(metaFor(p, sk, rng), sk); err != nil {
			t.Fatal(err)
		}
	}
	// An identical copy counts as a file of its own.
	sk := sketchOf(manber, "/a/b/x", 1000, fingerprint.Feature{Hash: topHash(1000), Count: 1})
	if _, err := ix.Put(metaFor("/a/b/sub/x-copy", sk, rng), sk); err != nil {
		t.Fatal(err)
	}
	dirs := []string{"/a/b", "/a/b/", "/a", "/", "/a/b/x", "/nothing", "/a/b/sub"}
	got, err := ix.DirTotals(context.Background(), dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []index.DirTotal{
		{Path: "/a/b", Files: 4, Bytes: 4700},
		{Path: "/a/b/", Files: 4, Bytes: 4700},
		{Path: "/a", Files: 6, Bytes: 5500},
		{Path: "/", Files: 7, Bytes: 5550},
		{Path: "/a/b/x"},
		{Path: "/nothing"},
		{Path: "/a/b/sub", Files: 2, Bytes: 1700},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d totals, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: got %+v, want %+v", dirs[i], got[i], want[i])
		}
	}

	// Bounded: the scan stops at MaxFiles and says so.
	got, err = ix.DirTotals(context.Background(), []string{"/a", "/a/b/sub"}, &index.DirTotalsOptions{MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0]; g.Files != 2 || !g.Truncated {
		t.Errorf("/a with MaxFiles 2: %+v, want 2 files, truncated", g)
	}
	if g := got[1]; g.Files != 2 || g.Bytes != 1700 || g.Truncated {
		t.Errorf("/a/b/sub with MaxFiles 2: %+v, want 2 files, 1700 bytes, not truncated", g)
	}

	// Visible: hidden files are not counted.
	hide := map[string]bool{"/a/b/y": true, "/a/b/sub/x-copy": true}
	got, err = ix.DirTotals(context.Background(), []string{"/a/b"}, &index.DirTotalsOptions{Visible: func(m *index.FileMeta) bool { return !hide[m.Path] }})
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0]; g.Files != 2 || g.Bytes != 1700 || g.Truncated {
		t.Errorf("/a/b, two files hidden: %+v, want 2 files, 1700 bytes", g)
	}

	if _, err := ix.DirTotals(context.Background(), []string{"/a"}, &index.DirTotalsOptions{MaxFiles: -1}); !errors.Is(err, index.ErrBadQuery) {
		t.Errorf("MaxFiles -1: %v, want ErrBadQuery", err)
	}
	// More files than one batch reads.
	for i := range 5000 {
		sk := sketchOf(manber, fmt.Sprint(i%7), 10, fingerprint.Feature{Hash: topHash(uint64(i % 7)), Count: 1})
		if _, err := ix.Put(metaFor(fmt.Sprintf("/big/d%d/f%05d", i%3, i), sk, rng), sk); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		max   int
		files int64
		trunc bool
	}{{0, 5000, false}, {5000, 5000, false}, {4999, 4999, true}, {4097, 4097, true}} {
		got, err = ix.DirTotals(context.Background(), []string{"/big"}, &index.DirTotalsOptions{MaxFiles: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		if g := got[0]; g.Files != tc.files || g.Bytes != 10*tc.files || g.Truncated != tc.trunc {
			t.Errorf("/big, MaxFiles %d: %+v, want %d files, truncated %v", tc.max, g, tc.files, tc.trunc)
		}
	}

	ix.Close()
	if _, err := ix.DirTotals(context.Background(), []string{"/a"}, nil); !errors.Is(err, index.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}
