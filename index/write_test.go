package index_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestWritesFollowModel runs random Puts, replacements, Removes and Renames
// against an index and a model, and after each checks that the index holds
// the model, that Check is clean, and that Similar agrees with
// fingerprint.Compare.
func TestWritesFollowModel(t *testing.T) {
	for _, p := range []fingerprint.Params{manber, chunks} {
		t.Run(p.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(len(p.Scheme))))
			ix := openMem(t, nil, p)
			m := model{}
			paths := []string{"/a/x.go", "/a/y.go", "/b/z.txt", "/b/\xff\xfe.bin", "/c", "/c/d/e.GO"}
			var copies []*fingerprint.Sketch
			for step := 0; step < 300; step++ {
				path := paths[rng.IntN(len(paths))]
				switch op := rng.IntN(10); {
				case op < 5: // add or replace
					sk := randSketch(rng, p, rng.IntN(30), 60)
					if len(copies) > 0 && rng.IntN(4) == 0 {
						sk = copies[rng.IntN(len(copies))] // an identical copy
					}
					copies = append(copies, sk)
					meta := metaFor(path, sk, rng)
					if len(m) > 0 && rng.IntN(4) == 0 {
						// A hard link of an indexed file: its device and inode.
						other := m[slices.Sorted(maps.Keys(m))[rng.IntN(len(m))]]
						meta.Dev, meta.Ino = other.meta.Dev, other.meta.Ino
					}
					rec, err := ix.Put(meta, sk)
					if err != nil {
						t.Fatal(err)
					}
					if rec.Path != path || rec.Weight != sk.Weight() {
						t.Fatalf("put returned %+v", rec)
					}
					m[path] = modelFile{meta, sk}
				case op < 7:
					err := ix.Remove(path)
					if _, ok := m[path]; !ok {
						if !errors.Is(err, index.ErrNotFound) {
							t.Fatalf("remove of absent %q: %v, want ErrNotFound", path, err)
						}
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					delete(m, path)
				default:
					to := paths[rng.IntN(len(paths))]
					f, ok := m[path]
					meta := index.FileMeta{Path: to, Size: 1 + rng.Int64N(1000), MtimeNs: rng.Int64(), Ino: rng.Uint64()}
					err := ix.Rename(path, meta)
					if !ok {
						if !errors.Is(err, index.ErrNotFound) {
							t.Fatalf("rename of absent %q: %v, want ErrNotFound", path, err)
						}
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					delete(m, path)
					m[to] = modelFile{meta, f.sk}
				}
				verifyModel(t, ix, m)
				mustClean(t, ix)
				for path, f := range m {
					verifySimilar(t, ix, m, path, f.sk)
				}
				verifySimilar(t, ix, m, "", randSketch(rng, p, 20, 60))
			}
		})
	}
}

func TestPutKeepsID(t *testing.T) {
	ix := openMem(t, nil, manber)
	rng := rand.New(rand.NewPCG(1, 1))
	a, _ := ix.Put(metaFor("/a", randSketch(rng, manber, 10, 100), rng), randSketch(rng, manber, 10, 100))
	b, _ := ix.Put(metaFor("/b", randSketch(rng, manber, 10, 100), rng), randSketch(rng, manber, 10, 100))
	if a.ID == b.ID {
		t.Fatalf("two files with id %d", a.ID)
	}
	a2, err := ix.Put(metaFor("/a", randSketch(rng, manber, 5, 100), rng), randSketch(rng, manber, 5, 100))
	if err != nil || a2.ID != a.ID {
		t.Fatalf("replace: id %d (%v), want %d", a2.ID, err, a.ID)
	}
	if err := ix.Rename("/a", index.FileMeta{Path: "/b", Size: 3}); err != nil {
		t.Fatal(err)
	}
	r, err := ix.Lookup("/b")
	if err != nil || r.ID != a.ID || r.FileMeta.Size != 3 {
		t.Fatalf("after rename over /b: %+v, %v; want id %d", r, err, a.ID)
	}
	if _, err := ix.Lookup("/a"); !errors.Is(err, index.ErrNotFound) {
		t.Fatalf("lookup of renamed-away path: %v", err)
	}
	// Rename to itself updates the metadata only.
	if err := ix.Rename("/b", index.FileMeta{Path: "/b", Size: 9}); err != nil {
		t.Fatal(err)
	}
	if r, _ := ix.Lookup("/b"); r.FileMeta.Size != 9 || r.ID != a.ID {
		t.Fatalf("after rename to itself: %+v", r)
	}
	mustClean(t, ix)
	st, _ := ix.Stats()
	if st.Files != 1 || st.Bytes != 9 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFilesPrefixAndStop(t *testing.T) {
	ix := openMem(t, nil, manber)
	rng := rand.New(rand.NewPCG(2, 2))
	paths := []string{"/a/1", "/a/2", "/a\xff", "/ab", "/b", "/a/\x00"}
	for _, p := range paths {
		sk := randSketch(rng, manber, 3, 10)
		if _, err := ix.Put(metaFor(p, sk, rng), sk); err != nil {
			t.Fatal(err)
		}
	}
	collect := func(prefix string) []string {
		var out []string
		if err := ix.Files(prefix, func(r index.FileRecord) error { out = append(out, r.Path); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := collect("/a/"), []string{"/a/\x00", "/a/1", "/a/2"}; !slices.Equal(got, want) {
		t.Fatalf("files /a/: %q, want %q", got, want)
	}
	if got := collect(""); !slices.IsSorted(got) || len(got) != len(paths) {
		t.Fatalf("files: %q", got)
	}
	stop := errors.New("stop")
	n := 0
	err := ix.Files("", func(index.FileRecord) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("files stopped with %v after %d calls, want stop after 1", err, n)
	}
}

func TestSketchParamsMustMatch(t *testing.T) {
	ix := openMem(t, nil, manber)
	sk := sketchOf(chunks, "x", 10, fingerprint.Feature{Hash: 1, Count: 1})
	if _, err := ix.Put(index.FileMeta{Path: "/x"}, sk); !errors.Is(err, index.ErrParamsMismatch) {
		t.Fatalf("put of a chunks sketch into a manber index: %v", err)
	}
	if _, err := ix.Similar(context.Background(), index.Query{Sketch: sk}, index.QueryOptions{}); !errors.Is(err, index.ErrParamsMismatch) {
		t.Fatalf("query with a chunks sketch: %v", err)
	}
	// Zero Params are taken to be the index's.
	sk.Params = fingerprint.Params{}
	if _, err := ix.Put(index.FileMeta{Path: "/x"}, sk); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Put(index.FileMeta{Path: ""}, sk); err == nil {
		t.Fatal("put with an empty path succeeded")
	}
	if _, err := ix.Put(index.FileMeta{Path: "/y"}, nil); err == nil {
		t.Fatal("put with no sketch succeeded")
	}
	mustClean(t, ix)
}

// TestUnsortedFeatures: a sketch with unsorted, repeated features is stored
// and queried as its canonical form.
func TestUnsortedFeatures(t *testing.T) {
	ix := openMem(t, nil, manber)
	sk := &fingerprint.Sketch{Params: manber, Features: []fingerprint.Feature{
		{Hash: 9, Count: 1}, {Hash: 3, Count: 1}, {Hash: 9, Count: 2}, {Hash: 5, Count: 0}, {Hash: 4, Count: 1}, {Hash: 7, Count: 1},
	}}
	sk.Strong = strongOf("u")
	rec, err := ix.Put(index.FileMeta{Path: "/u"}, sk)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Features != 4 || rec.Weight != 6 {
		t.Fatalf("record %+v, want 4 features of weight 6", rec)
	}
	fwd, _ := ix.ForwardList("/u")
	want := []index.Entry{{index.FingerprintKey(3), 1}, {index.FingerprintKey(4), 1}, {index.FingerprintKey(7), 1}, {index.FingerprintKey(9), 3}}
	slices.SortFunc(want, func(a, b index.Entry) int { return cmpU64(uint64(a.Key), uint64(b.Key)) })
	if !slices.Equal(fwd, want) {
		t.Fatalf("forward list %v, want %v", fwd, want)
	}
	mustClean(t, ix)
}

// TestRemovedFilesVanish: once every file is removed and the database is
// compacted, no key but the metadata is left, not even a tombstone or an
// empty posting list.
func TestRemovedFilesVanish(t *testing.T) {
	ix := openMem(t, nil, chunks)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 50; i++ {
		sk := randSketch(rng, chunks, 20, 100)
		if _, err := ix.Put(metaFor(fmt.Sprint("/f", i%20), sk, rng), sk); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if err := ix.Remove(fmt.Sprint("/f", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []byte("fiprs") {
		if n, _ := ix.RawKeys(p); n != 0 {
			t.Fatalf("%d %c keys visible after removing every file", n, p)
		}
	}
	// Posting lists are left empty until Compact drops them.
	if rep := mustClean(t, ix); rep.Postings != 0 || rep.Fingerprints != 0 {
		t.Fatalf("%d postings of %d fingerprints left after removing every file", rep.Postings, rep.Fingerprints)
	}
	if err := ix.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	ranges, err := ix.TableKeyRanges()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ranges {
		if r[0][0] != 'm' || r[1][0] != 'm' {
			t.Fatalf("after compaction a table spans %q..%q; only metadata should be left", r[0], r[1])
		}
	}
	st, _ := ix.Stats()
	if st.Files != 0 || st.Fingerprints != 0 || st.Features != 0 || st.Bytes != 0 {
		t.Fatalf("stats of an emptied index: %+v", st)
	}
	mustClean(t, ix)
}

// TestConcurrentUse runs writers and readers together (meant for -race).
func TestConcurrentUse(t *testing.T) {
	ix := openMem(t, nil, manber)
	done := make(chan error, 8)
	for w := 0; w < 4; w++ {
		go func(w int) {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; i < 100; i++ {
				sk := randSketch(rng, manber, 20, 200)
				path := fmt.Sprintf("/w%d/%d", w, rng.IntN(10))
				var err error
				switch rng.IntN(4) {
				case 0:
					err = ix.Remove(path)
					if errors.Is(err, index.ErrNotFound) {
						err = nil
					}
				case 1:
					err = ix.Rename(path, index.FileMeta{Path: fmt.Sprintf("/w%d/%d", w, rng.IntN(10))})
					if errors.Is(err, index.ErrNotFound) {
						err = nil
					}
				default:
					_, err = ix.Put(metaFor(path, sk, rng), sk)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}(w)
		go func(w int) {
			rng := rand.New(rand.NewPCG(uint64(w), 10))
			for i := 0; i < 100; i++ {
				var err error
				switch i % 4 {
				case 0:
					_, err = ix.Similar(context.Background(), index.Query{Sketch: randSketch(rng, manber, 20, 200)}, index.QueryOptions{})
				case 1:
					_, err = ix.Groups(context.Background(), index.GroupOptions{})
				case 2:
					_, err = ix.Stats()
				case 3:
					var rep *index.CheckReport
					if rep, err = ix.Check(); err == nil && !rep.OK() {
						err = fmt.Errorf("check during writes: %q", rep.Problems)
					}
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}(w)
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	mustClean(t, ix)
	// The counts kept in memory equal the counts computed from scratch.
	st, _ := ix.Stats()
	var files, bytes uint64
	_ = ix.Files("", func(r index.FileRecord) error { files++; bytes += uint64(r.FileMeta.Size); return nil })
	if st.Files != files || st.Bytes != bytes {
		t.Fatalf("stats %+v, files %d bytes %d", st, files, bytes)
	}
}

// TestKeyCollisions: distinct hashes of one file with the same fingerprint
// key are stored as one feature whose weight is the sum of theirs, and a
// query shares min(query weight, file weight) per key. Such collisions
// happen by chance about once per 2^32 pairs of fingerprints; here they are
// constructed.
func TestKeyCollisions(t *testing.T) {
	const k1, k2 = 0x12345678, 0x9abcdef0
	a, b, c := index.HashWithKey(k1, 1), index.HashWithKey(k1, 2), index.HashWithKey(k1, 3)
	if a == b || index.FingerprintKey(a) != k1 || index.FingerprintKey(b) != k1 {
		t.Fatalf("hashes %x %x do not collide on %x", a, b, k1)
	}
	other := index.HashWithKey(k2, 0)
	for _, p := range []fingerprint.Params{manber, chunks} {
		t.Run(p.String(), func(t *testing.T) {
			ix := openMem(t, nil, p)
			// a twice (length 100), b three times (length 30), other once (length 8).
			sk := sketchOf(p, "x", 1000,
				fingerprint.Feature{Hash: a, Count: 2, Len: 100},
				fingerprint.Feature{Hash: b, Count: 3, Len: 30},
				fingerprint.Feature{Hash: other, Count: 1, Len: 8})
			rec, err := ix.Put(index.FileMeta{Path: "/x", Size: 1000}, sk)
			if err != nil {
				t.Fatal(err)
			}
			wa, wb, wo := uint64(2), uint64(3), uint64(1)
			if p.KnowsLengths() {
				wa, wb, wo = 200, 90, 8
			}
			if rec.Features != 2 || rec.Weight != wa+wb+wo {
				t.Fatalf("record: %d features of weight %d, want 2 of %d", rec.Features, rec.Weight, wa+wb+wo)
			}
			fwd, _ := ix.ForwardList("/x")
			if want := []index.Entry{{Key: k1, Weight: wa + wb}, {Key: k2, Weight: wo}}; !slices.Equal(fwd, want) {
				t.Fatalf("forward list %v, want %v", fwd, want)
			}
			rep := mustClean(t, ix)
			if rep.Postings != 2 || rep.Fingerprints != 2 {
				t.Fatalf("check counts %d postings of %d fingerprints, want 2 of 2", rep.Postings, rep.Fingerprints)
			}
			// A query holding c (another hash with key k1) once, and other:
			// it shares min(its weight, the file's) on k1.
			q := sketchOf(p, "q", 100,
				fingerprint.Feature{Hash: c, Count: 1, Len: 30},
				fingerprint.Feature{Hash: other, Count: 1, Len: 8})
			res, err := ix.Similar(context.Background(), index.Query{Sketch: q}, index.QueryOptions{MinFeatures: 1, Threshold: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			wq := uint64(1)
			if p.KnowsLengths() {
				wq = 30
			}
			if len(res.Matches) != 1 || res.Matches[0].SharedWeight != wq+wo || res.QueryWeight != wq+wo || res.QueryFeatures != 2 {
				t.Fatalf("query: %+v", res)
			}
			// Replacing the file with only b leaves key k1 at b's weight.
			sk2 := sketchOf(p, "x2", 1000, fingerprint.Feature{Hash: b, Count: 3, Len: 30})
			if _, err := ix.Put(index.FileMeta{Path: "/x", Size: 1000}, sk2); err != nil {
				t.Fatal(err)
			}
			fwd, _ = ix.ForwardList("/x")
			if want := []index.Entry{{Key: k1, Weight: wb}}; !slices.Equal(fwd, want) {
				t.Fatalf("forward list after replacing %v, want %v", fwd, want)
			}
			mustClean(t, ix)
		})
	}
}

// TestPostingListsAcrossCompactions: postings written as merge operands
// fold together whether or not a compaction came between them: a removal
// in the memtable over postings compacted to the bottom level, then the
// same file added again, leave the index consistent, and the file found,
// before and after the next compaction and across a reopen.
func TestPostingListsAcrossCompactions(t *testing.T) {
	fs := vfs.NewMem()
	ix := openMem(t, fs, manber)
	a := sketchOf(manber, "A", 1000, feats(1, 2, 3, 4, 5, 6)...)
	b := sketchOf(manber, "B", 1000, feats(4, 5, 6, 7, 8, 9)...)
	put := func(path string, sk *fingerprint.Sketch) {
		t.Helper()
		if _, err := ix.Put(index.FileMeta{Path: path, Size: sk.Size}, sk); err != nil {
			t.Fatal(err)
		}
	}
	found := func(what string, want ...string) {
		t.Helper()
		res, err := ix.Similar(context.Background(), index.Query{Sketch: a}, index.QueryOptions{MinFeatures: 1, Threshold: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range res.Matches {
			got = append(got, m.Path)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: matches %v, want %v", what, got, want)
		}
		mustClean(t, ix)
	}
	compact := func() {
		t.Helper()
		if err := ix.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	put("/a", a)
	put("/b", b)
	compact()
	found("compacted", "/a", "/b")
	if err := ix.Remove("/a"); err != nil {
		t.Fatal(err)
	}
	found("/a removed over compacted postings", "/b")
	put("/a", a)
	found("/a added again", "/a", "/b")
	// The same file changes: postings of keys it no longer holds go.
	put("/b", sketchOf(manber, "B2", 1000, feats(7, 8, 9)...))
	found("/b changed", "/a")
	compact()
	found("compacted again", "/a")
	if err := ix.Remove("/a"); err != nil {
		t.Fatal(err)
	}
	compact()
	found("/a removed and compacted")
	put("/a", a)
	ix.Close()
	ix = openMem(t, fs, manber)
	found("reopened", "/a")
	compact()
	if rep := mustClean(t, ix); rep.Postings != 9 || rep.Fingerprints != 9 {
		t.Fatalf("final index: %d postings of %d fingerprints, want 9 and 9", rep.Postings, rep.Fingerprints)
	}
}

// RenameIf moves a record only while it still describes the file the
// caller found: once a write to the old path has given the record another
// file (a new file written there, reusing the record), it refuses with
// ErrNotFound and changes nothing, so the new file's content is not moved
// to the new path as the moved file's.
func TestRenameIf(t *testing.T) {
	ix := openMem(t, nil, manber)
	rng := rand.New(rand.NewPCG(3, 3))
	moved := randSketch(rng, manber, 10, 100)
	meta := metaFor("/old", moved, rng)
	meta.Dev, meta.Ino, meta.CtimeNs = 1, 100, 5
	rec, err := ix.Put(meta, moved)
	if err != nil {
		t.Fatal(err)
	}
	found := rec.FileMeta // what LookupInode gave the caller
	// A new file at /old replaces the record's content, keeping its id.
	other := randSketch(rng, manber, 6, 100)
	newMeta := metaFor("/old", other, rng)
	newMeta.Dev, newMeta.Ino, newMeta.CtimeNs = 1, 200, 6
	if r, err := ix.Put(newMeta, other); err != nil || r.ID != rec.ID {
		t.Fatalf("the new file at /old: id %d, %v; want the record %d reused", r.ID, err, rec.ID)
	}
	to := found
	to.Path = "/new"
	if err := ix.RenameIf(found, to); !errors.Is(err, index.ErrNotFound) {
		t.Fatalf("RenameIf of a record rewritten since: %v, want ErrNotFound", err)
	}
	if r, err := ix.Lookup("/old"); err != nil || r.Ino != 200 {
		t.Fatalf("/old after the refused rename: %+v, %v; want the new file", r, err)
	}
	if _, err := ix.Lookup("/new"); !errors.Is(err, index.ErrNotFound) {
		t.Fatalf("/new after the refused rename: %v, want not indexed", err)
	}
	// Each field of the record counts.
	cur, _ := ix.Lookup("/old")
	for name, change := range map[string]func(m *index.FileMeta){
		"dev": func(m *index.FileMeta) { m.Dev++ }, "ino": func(m *index.FileMeta) { m.Ino++ },
		"size": func(m *index.FileMeta) { m.Size++ }, "mtime": func(m *index.FileMeta) { m.MtimeNs++ },
		"ctime": func(m *index.FileMeta) { m.CtimeNs++ },
	} {
		was := cur.FileMeta
		change(&was)
		if err := ix.RenameIf(was, to); !errors.Is(err, index.ErrNotFound) {
			t.Errorf("RenameIf with another %s: %v, want ErrNotFound", name, err)
		}
	}
	// With the record as it is, it moves.
	if err := ix.RenameIf(cur.FileMeta, to); err != nil {
		t.Fatal(err)
	}
	if r, err := ix.Lookup("/new"); err != nil || r.ID != rec.ID {
		t.Fatalf("/new after the rename: %+v, %v", r, err)
	}
	mustClean(t, ix)
}
