package index_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestPutDeferred: files put with PutDeferred are at once what Put makes
// them but for the postings of their new contents, which stay pending:
// a query finds them as identical files, not as similar ones. Flush writes
// the postings, after which the index is the one Put builds: the same dump,
// the same answers.
func TestPutDeferred(t *testing.T) {
	for _, p := range []fingerprint.Params{manber, chunks} {
		t.Run(p.String(), func(t *testing.T) {
			deferred, direct := openMem(t, nil, p), openMem(t, nil, p)
			a := sketchOf(p, "A", 1000, feats(1, 2, 3, 4, 5, 6, 7, 8)...)
			b := sketchOf(p, "B", 1000, feats(5, 6, 7, 8, 9, 10, 11, 12)...)
			c := sketchOf(p, "C", 1000, feats(20, 21, 22, 23)...)
			meta := func(path string) index.FileMeta {
				return index.FileMeta{Path: path, Size: 1000, Dev: 1, Ino: uint64(len(path))}
			}
			steps := []struct {
				path string
				sk   *fingerprint.Sketch
			}{
				{"/c1", c}, {"/b1", b},
				{"/c1", b}, // /c1 leaves c, which it held alone: the postings pending are written first
				{"/a1", a}, {"/a2", a},
			}
			for _, s := range steps {
				if _, err := deferred.PutDeferred(meta(s.path), s.sk); err != nil {
					t.Fatal(err)
				}
				if _, err := direct.Put(meta(s.path), s.sk); err != nil {
					t.Fatal(err)
				}
			}
			if n := deferred.PendingPostings(); n == 0 {
				t.Fatal("no posting pending after PutDeferred of new contents")
			}
			st, err := deferred.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st.Files != 4 || st.Contents != 2 {
				t.Errorf("pending: %d files, %d contents; want 4, 2 (c's content left with /c1)", st.Files, st.Contents)
			}
			// Identical files are found by strong hash; similar ones wait
			// for their postings.
			for _, q := range []struct {
				sk   *fingerprint.Sketch
				want string
			}{{a, "/a1 /a2 /b1 /c1"}, {b, "/b1 /c1"}} {
				res, err := deferred.Similar(context.Background(), index.Query{Sketch: q.sk}, index.QueryOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := matchPaths(res.Matches); got != q.want {
					t.Errorf("query of %x with a's postings pending: %q; want %q", q.sk.Strong[:2], got, q.want)
				}
			}
			if err := deferred.Flush(); err != nil {
				t.Fatal(err)
			}
			if n := deferred.PendingPostings(); n != 0 {
				t.Errorf("%d postings pending after Flush", n)
			}
			if err := deferred.Flush(); err != nil { // nothing to do
				t.Fatal(err)
			}
			if dd, dp := dumpOf(t, deferred, ""), dumpOf(t, direct, ""); dd != dp {
				t.Errorf("dump after PutDeferred and Flush:\n%s\nafter Put:\n%s", dd, dp)
			}
			rd, err := deferred.Similar(context.Background(), index.Query{Sketch: b}, index.QueryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rp, err := direct.Similar(context.Background(), index.Query{Sketch: b}, index.QueryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := matchPaths(rd.Matches), matchPaths(rp.Matches); got != want || got != "/b1 /c1 /a1 /a2" {
				t.Errorf("query of b after Flush: %q; Put's index answers %q; want /b1 /c1 /a1 /a2", got, want)
			}
			mustClean(t, deferred)
		})
	}
}

// TestPutDeferredThenChange: a change that rewrites or removes the
// postings of a content whose postings are pending writes them first, so
// no tombstone comes before the posting it removes: a file put deferred
// and then changed, removed, or replaced by a rename leaves the index
// clean and equal to one built by Put.
func TestPutDeferredThenChange(t *testing.T) {
	a := sketchOf(manber, "A", 1000, feats(1, 2, 3, 4, 5, 6)...)
	a2 := sketchOf(manber, "A2", 1000, feats(1, 2, 3, 4, 5, 7)...)
	b := sketchOf(manber, "B", 1000, feats(8, 9, 10)...)
	meta := func(path string) index.FileMeta {
		return index.FileMeta{Path: path, Size: 1000, Dev: 1, Ino: uint64(len(path))}
	}
	for name, change := range map[string]func(ix *index.Index) error{
		"changed": func(ix *index.Index) error { _, err := ix.Put(meta("/a"), a2); return err },
		"removed": func(ix *index.Index) error { return ix.Remove("/a") },
		"replaced by a rename": func(ix *index.Index) error {
			return ix.Rename("/b", meta("/a"))
		},
		"changed deferred": func(ix *index.Index) error { _, err := ix.PutDeferred(meta("/a"), a2); return err },
	} {
		t.Run(name, func(t *testing.T) {
			deferred, direct := openMem(t, nil, manber), openMem(t, nil, manber)
			for _, ix := range []*index.Index{deferred, direct} {
				put := ix.Put
				if ix == deferred {
					put = ix.PutDeferred
				}
				if _, err := put(meta("/a"), a); err != nil {
					t.Fatal(err)
				}
				if _, err := put(meta("/b"), b); err != nil {
					t.Fatal(err)
				}
				if err := change(ix); err != nil {
					t.Fatal(err)
				}
			}
			if err := deferred.Flush(); err != nil {
				t.Fatal(err)
			}
			mustClean(t, deferred)
			if dd, dp := dumpOf(t, deferred, ""), dumpOf(t, direct, ""); dd != dp {
				t.Errorf("dump through PutDeferred:\n%s\nthrough Put:\n%s", dd, dp)
			}
		})
	}
}

// TestPutDeferredBound: no more than the bound of postings is ever kept
// pending; the write that would go past it writes those pending first.
func TestPutDeferredBound(t *testing.T) {
	defer index.SetMaxPending(50)()
	ix := openMem(t, nil, manber)
	for i := range 40 {
		sk := sketchOf(manber, fmt.Sprint(i), 1000, feats(3*i, 3*i+1, 3*i+2, 500+i, 1000+i)...)
		if _, err := ix.PutDeferred(index.FileMeta{Path: fmt.Sprintf("/f%d", i), Size: 1000}, sk); err != nil {
			t.Fatal(err)
		}
		if n := ix.PendingPostings(); n > 50 || n == 0 {
			t.Fatalf("after %d deferred puts, %d postings pending; want 1 to 50", i+1, n)
		}
	}
	rep := mustClean(t, ix)
	if rep.Postings != 200 {
		t.Errorf("%d postings after Check wrote the pending ones, want 200", rep.Postings)
	}
}

// TestPendingRecovered: postings still pending when the process dies are
// written by the next read-write Open, from the forward lists; a
// read-only Open before it sees the contents without postings and Check
// does not count that as damage.
func TestPendingRecovered(t *testing.T) {
	fs := vfs.NewCrashableMem()
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	a := sketchOf(manber, "A", 1000, feats(1, 2, 3, 4, 5, 6)...)
	b := sketchOf(manber, "B", 1000, feats(4, 5, 6, 7, 8, 9)...)
	for path, sk := range map[string]*fingerprint.Sketch{"/a": a, "/b": b} {
		if _, err := ix.PutDeferred(index.FileMeta{Path: path, Size: 1000}, sk); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Sync(); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // what was synced, postings still pending
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	ro, err := index.Open("/db", &index.Options{FS: crashed, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ro.Check()
	if err != nil || !rep.OK() {
		t.Fatalf("read-only check of an index with postings pending: %v %q", err, rep.Problems)
	}
	if rep.Postings != 0 {
		t.Errorf("read-only: %d postings, want 0 (all pending)", rep.Postings)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	rw, err := index.Open("/db", &index.Options{FS: crashed})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if rep := mustClean(t, rw); rep.Postings != 12 {
		t.Errorf("after the read-write open: %d postings, want 12", rep.Postings)
	}
	res, err := rw.Similar(context.Background(), index.Query{Sketch: a}, index.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := matchPaths(res.Matches); got != "/a /b" {
		t.Errorf("query of a after recovery: %q, want /a /b", got)
	}
	if err := rw.Flush(); err != nil && !errors.Is(err, index.ErrClosed) {
		t.Fatal(err)
	}
}

// TestAbandonWedged: an operation that never ends (as a write stuck on
// Pebble's commit lock after its log write failed) does not hang Abandon:
// it returns ErrWedged after its bound, and the index answers ErrClosed.
func TestAbandonWedged(t *testing.T) {
	defer index.SetAbandonWait(50 * time.Millisecond)()
	ix := openMem(t, nil, manber)
	end, err := ix.BeginOperation()
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	t0 := time.Now()
	if err := ix.Abandon(); !errors.Is(err, index.ErrWedged) {
		t.Fatalf("Abandon with an operation stuck: %v, want ErrWedged", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Abandon took %v", d)
	}
	if _, err := ix.Lookup("/a"); !errors.Is(err, index.ErrClosed) {
		t.Errorf("Lookup after Abandon: %v, want ErrClosed", err)
	}
}
