package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// fixedDupes answers Dupes with its sets.
type fixedDupes struct {
	*fakeController
	sets []index.DupeSet
}

// Dupes returns a copy: the server lets go of each set once sent.
func (b *fixedDupes) Dupes(context.Context, string) ([]index.DupeSet, error) {
	return slices.Clone(b.sets), nil
}

// dupeSetOf is a set of the files at paths, each its own inode.
func dupeSetOf(size int64, tag byte, paths ...string) index.DupeSet {
	d := index.DupeSet{Size: size, Strong: [32]byte{tag}}
	for i, p := range paths {
		d.Files = append(d.Files, index.FileMeta{Path: p, Dev: 1, Ino: uint64(tag)<<8 | uint64(i)})
	}
	return d
}

// TestDupesFilters: min_size and in choose the sets, and the totals sum
// only those sent.
func TestDupesFilters(t *testing.T) {
	b := &fixedDupes{fakeController: newFakeController(), sets: []index.DupeSet{
		dupeSetOf(300_000, 1, "/srv/here/big.iso", "/srv/else/big.iso", "/srv/else/big2.iso"),
		dupeSetOf(1000, 2, "/srv/else/a.txt", "/srv/else/b.txt"),
		dupeSetOf(0, 3, "/srv/here/e1", "/srv/here/e2", "/srv/else/e3"),
	}}
	b.roots = []string{"/srv"} // a prefix must lie under a root, or above one
	sock, c := serveWith(t, b, Options{})
	for _, tc := range []struct {
		name    string
		o       ipc.DupesOptions
		sizes   []int64
		files   int
		redund  int
		redundB int64
	}{
		{"all", ipc.DupesOptions{}, []int64{300_000, 1000, 0}, 8, 5, 601_000},
		{"no empty files", ipc.DupesOptions{MinSize: 1}, []int64{300_000, 1000}, 5, 3, 601_000},
		{"100K and more", ipc.DupesOptions{MinSize: 100 << 10}, []int64{300_000}, 3, 2, 600_000},
		{"a file here", ipc.DupesOptions{In: "/srv/here"}, []int64{300_000, 0}, 6, 4, 600_000},
		{"a file here, not empty", ipc.DupesOptions{In: "/srv/here/", MinSize: 1}, []int64{300_000}, 3, 2, 600_000},
		{"in and prefix", ipc.DupesOptions{In: "/srv/here", Prefix: "/srv"}, []int64{300_000, 0}, 6, 4, 600_000},
		{"a file in no set", ipc.DupesOptions{In: "/srv/her"}, nil, 0, 0, 0},
	} {
		var sizes []int64
		totals, err := c.DupesWith(context.Background(), tc.o, func(s ipc.DupeSet) error {
			sizes = append(sizes, s.Size)
			return nil
		})
		want := ipc.DupesTotals{Sets: len(tc.sizes), Files: tc.files, RedundantFiles: tc.redund, RedundantBytes: tc.redundB}
		if err != nil || !slices.Equal(sizes, tc.sizes) || totals != want {
			t.Errorf("%s: sets of sizes %v, totals %+v, %v; want %v, %+v", tc.name, sizes, totals, err, tc.sizes, want)
		}
	}
	for _, o := range []ipc.DupesOptions{{In: "srv/here"}, {In: "/srv", Fleet: true}} {
		_, err := c.DupesWith(context.Background(), o, func(ipc.DupeSet) error { return nil })
		if e, ok := errors.AsType[*ipc.Error](err); !ok || e.Code != ipc.CodeBadRequest {
			t.Errorf("%+v: %v, want a bad request", o, err)
		}
	}
	for _, q := range []string{"min_size=-1", "min_size=1K", "min_size=x"} {
		if status, body, err := getRaw(t, sock, "/v1/dupes?"+q); err != nil || status != http.StatusBadRequest {
			t.Errorf("%s: %d %s %v, want 400", q, status, body, err)
		}
	}
}

// TestDupesInSeesOnlyReadable: a set is not kept for its file under in
// that the caller may not read, nor for two files of which it may read
// one.
func TestDupesInSeesOnlyReadable(t *testing.T) {
	hideHere := func(f *index.FileMeta) bool { return !index.InTree(f.Path, "/srv/here") }
	f := dupesFilter{in: "/srv/here"}
	d := dupeSetOf(10, 1, "/srv/here/x", "/srv/else/a", "/srv/else/b")
	if set, ok := dupeSet(&d, hideHere); !ok || f.keep(&set) {
		t.Errorf("set kept for a file the caller cannot read: %v %+v", ok, set)
	}
	d = dupeSetOf(10, 2, "/srv/here/x", "/srv/else/hidden/a")
	hideBoth := func(f *index.FileMeta) bool { return !index.InTree(f.Path, "/srv/else/hidden") }
	if _, ok := dupeSet(&d, hideBoth); ok {
		t.Error("set of one readable file kept")
	}
	d = dupeSetOf(10, 3, "/srv/here/x", "/srv/else/a")
	if set, ok := dupeSet(&d, hideBoth); !ok || !f.keep(&set) || len(set.Files) != 2 {
		t.Errorf("readable set with a file here: %v %+v", ok, set)
	}
}
