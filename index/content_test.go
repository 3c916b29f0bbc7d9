package index_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

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
	res, err := ix.Similar(context.Background(), index.Query{Sketch: a}, index.QueryOptions{})
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
		// With maxdf 2, the query's features are common (held by three
		// files): it is a template query.
		for _, c := range []struct {
			maxDF    int
			template bool
		}{{2, true}, {3, false}} {
			res, err := ix.Similar(context.Background(), index.Query{Sketch: q}, index.QueryOptions{MaxDF: c.maxDF})
			if err != nil {
				t.Fatal(err)
			}
			if res.Template != c.template || res.Skipped != 0 || res.Candidates != 3 {
				t.Errorf("%s, maxdf %d: template %v, %d skipped, %d candidates; want %v, 0 and 3", when, c.maxDF, res.Template, res.Skipped, res.Candidates, c.template)
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

// TestPutCopy: a file whose size and strong hash match a content the index
// holds joins it without a sketch, writing no posting, and is then what
// Put of the same sketch would have made it (the same dump, the same query
// answers); it can leave its old content for the copy; with no such
// content (another size, an unknown hash, an empty index) nothing is
// written.
func TestPutCopy(t *testing.T) {
	a := sketchOf(manber, "A", 1000, feats(1, 2, 3, 4, 5, 6)...)
	b := sketchOf(manber, "B", 1000, feats(5, 6, 7, 8)...)
	viaCopy, viaPut := openMem(t, nil, manber), openMem(t, nil, manber)
	meta := func(path string) index.FileMeta {
		return index.FileMeta{Path: path, Size: 1000, MtimeNs: 7, Dev: 1, Ino: 9}
	}
	for _, ix := range []*index.Index{viaCopy, viaPut} {
		if _, ok, err := ix.PutCopy(meta("/a0"), a.Size, a.Strong); err != nil || ok {
			t.Fatalf("PutCopy on an empty index: %v, %v; want false, nil", ok, err)
		}
		for _, p := range []string{"/a1", "/b1", "/b2"} {
			sk := a
			if p != "/a1" {
				sk = b
			}
			if _, err := ix.Put(meta(p), sk); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := viaCopy.PostingWrites()
	for _, p := range []string{"/a2", "/b2"} { // a new path, and a path leaving b (held by /b1 too)
		rec, ok, err := viaCopy.PutCopy(meta(p), a.Size, a.Strong)
		if err != nil || !ok {
			t.Fatalf("PutCopy %s: %v, %v; want true, nil", p, ok, err)
		}
		if rec.Path != p || rec.Strong != a.Strong || rec.Features != 6 {
			t.Fatalf("PutCopy %s: record %+v", p, rec)
		}
		if _, err := viaPut.Put(meta(p), a); err != nil {
			t.Fatal(err)
		}
	}
	if got := viaCopy.PostingWrites() - before; got != 0 {
		t.Errorf("PutCopy wrote %d postings, want 0", got)
	}
	for what, miss := range map[string]struct {
		size   int64
		strong [32]byte
	}{"another size": {999, a.Strong}, "an unknown hash": {1000, [32]byte{}}, "a hash not held": {1000, strongOf("C")}} {
		if _, ok, err := viaCopy.PutCopy(meta("/c"), miss.size, miss.strong); err != nil || ok {
			t.Errorf("PutCopy of %s: %v, %v; want false, nil", what, ok, err)
		}
	}
	if _, err := viaCopy.Lookup("/c"); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("a PutCopy that found nothing wrote /c: %v", err)
	}
	rc, rp := mustClean(t, viaCopy), mustClean(t, viaPut)
	if rc.Contents != 2 || rc.Postings != rp.Postings || rc.Contents != rp.Contents {
		t.Errorf("through PutCopy %d contents, %d postings; through Put %d, %d", rc.Contents, rc.Postings, rp.Contents, rp.Postings)
	}
	dc, dp := dumpOf(t, viaCopy, ""), dumpOf(t, viaPut, "")
	if dc != dp {
		t.Errorf("dump through PutCopy:\n%s\nthrough Put:\n%s", dc, dp)
	}
	rescopy, err := viaCopy.Similar(context.Background(), index.Query{Sketch: a}, index.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resput, err := viaPut.Similar(context.Background(), index.Query{Sketch: a}, index.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The copies of a first, then /b1, which shares 5 and 6 with it.
	if got, want := matchPaths(rescopy.Matches), matchPaths(resput.Matches); got != want || got != "/a1 /a2 /b2 /b1" {
		t.Errorf("matches %q through PutCopy, %q through Put; want /a1 /a2 /b2 /b1", got, want)
	}
}

// TestPutCopyOf: a file joins the content named by the Content of a
// record Put returned, as PutCopy would have joined it; a content id that
// names another content, a content of another size or hash, no content,
// or a content removed since, writes nothing.
func TestPutCopyOf(t *testing.T) {
	ix := openMem(t, nil, manber)
	a := sketchOf(manber, "A", 1000, feats(1, 2, 3, 4, 5, 6)...)
	b := sketchOf(manber, "B", 1000, feats(5, 6, 7, 8)...)
	meta := func(path string) index.FileMeta { return index.FileMeta{Path: path, Size: 1000, Dev: 1, Ino: 9} }
	ra, err := ix.Put(meta("/a1"), a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := ix.Put(meta("/b1"), b)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Content == 0 || rb.Content == 0 || ra.Content == rb.Content {
		t.Fatalf("Put returned contents %d and %d; want two distinct non-zero ids", ra.Content, rb.Content)
	}
	if got, err := ix.Lookup("/a1"); err != nil || got.Content != ra.Content {
		t.Fatalf("Lookup /a1: content %d, %v; want %d", got.Content, err, ra.Content)
	}
	before := ix.PostingWrites()
	rec, ok, err := ix.PutCopyOf(meta("/a2"), ra.Content, a.Size, a.Strong, nil)
	if err != nil || !ok || rec.Content != ra.Content || rec.Strong != a.Strong || rec.Features != 6 {
		t.Fatalf("PutCopyOf /a2: %+v, %v, %v; want a copy of content %d", rec, ok, err, ra.Content)
	}
	if got := ix.PostingWrites() - before; got != 0 {
		t.Errorf("PutCopyOf wrote %d postings, want 0", got)
	}
	for what, miss := range map[string]struct {
		cid    uint32
		size   int64
		strong [32]byte
	}{
		"another content": {rb.Content, a.Size, a.Strong},
		"another size":    {ra.Content, 999, a.Strong},
		"no content":      {rb.Content + 100, a.Size, a.Strong},
		"content id 0":    {0, a.Size, a.Strong},
		"an unknown hash": {ra.Content, a.Size, [32]byte{}},
	} {
		if _, ok, err := ix.PutCopyOf(meta("/c"), miss.cid, miss.size, miss.strong, nil); err != nil || ok {
			t.Errorf("PutCopyOf naming %s: %v, %v; want false, nil", what, ok, err)
		}
	}
	if _, err := ix.Lookup("/c"); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("a PutCopyOf that joined nothing wrote /c: %v", err)
	}
	for _, p := range []string{"/a1", "/a2"} {
		if err := ix.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := ix.PutCopyOf(meta("/a3"), ra.Content, a.Size, a.Strong, nil); err != nil || ok {
		t.Errorf("PutCopyOf a removed content: %v, %v; want false, nil", ok, err)
	}
	if rep := mustClean(t, ix); rep.Contents != 1 {
		t.Errorf("%d contents, want 1 (/b1's)", rep.Contents)
	}
}

// TestPutCopyRacesRemove: a PutCopy that races the removal of the last
// file of its content either joins it before the removal (and keeps it
// alive) or finds it gone and writes nothing; the index stays consistent.
func TestPutCopyRacesRemove(t *testing.T) {
	ix := openMem(t, nil, manber)
	a := sketchOf(manber, "A", 1000, feats(1, 2, 3, 4, 5, 6)...)
	joined, missed := 0, 0
	for i := range 200 {
		if _, err := ix.Put(index.FileMeta{Path: "/a1", Size: 1000}, a); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var ok bool
		var perr, rerr error
		wg.Go(func() { rerr = ix.Remove("/a1") })
		wg.Go(func() { _, ok, perr = ix.PutCopy(index.FileMeta{Path: "/a2", Size: 1000}, 1000, a.Strong) })
		wg.Wait()
		if perr != nil || rerr != nil {
			t.Fatalf("round %d: PutCopy %v, Remove %v", i, perr, rerr)
		}
		_, err := ix.Lookup("/a2")
		if ok != (err == nil) {
			t.Fatalf("round %d: PutCopy said %v, lookup of /a2: %v", i, ok, err)
		}
		rep := mustClean(t, ix)
		if want := map[bool]uint64{true: 1, false: 0}[ok]; rep.Contents != want || rep.Postings != 6*want {
			t.Fatalf("round %d: %d contents, %d postings after PutCopy %v", i, rep.Contents, rep.Postings, ok)
		}
		if ok {
			joined++
			if err := ix.Remove("/a2"); err != nil {
				t.Fatal(err)
			}
		} else {
			missed++
		}
	}
	t.Logf("%d joined, %d missed", joined, missed)
}

// TestStatsCountStoredPostings: Stats counts the distinct contents and the
// postings stored, one set per content however many copies hold it, while
// Features counts every file's; the counts match Check's and survive a
// reopen.
func TestStatsCountStoredPostings(t *testing.T) {
	fs := vfs.NewMem()
	ix := openMem(t, fs, manber)
	a := sketchOf(manber, "A", 1000, feats(1, 2, 3, 4, 5, 6)...)
	b := sketchOf(manber, "B", 1000, feats(5, 6, 7, 8)...)
	check := func(what string, files, features, contents, postings uint64) {
		t.Helper()
		st, err := ix.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Files != files || st.Features != features || st.Contents != contents || st.Postings != postings {
			t.Fatalf("%s: stats %+v; want %d files, %d features, %d contents, %d postings", what, st, files, features, contents, postings)
		}
		if rep := mustClean(t, ix); rep.Contents != st.Contents || rep.Postings != st.Postings {
			t.Fatalf("%s: Check counts %d contents and %d postings, Stats %d and %d", what, rep.Contents, rep.Postings, st.Contents, st.Postings)
		}
	}
	for _, p := range []string{"/a1", "/a2", "/a3"} {
		if _, err := ix.Put(index.FileMeta{Path: p, Size: a.Size}, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := ix.PutCopy(index.FileMeta{Path: "/a4", Size: a.Size}, a.Size, a.Strong); err != nil || !ok {
		t.Fatalf("PutCopy: %v %v", ok, err)
	}
	check("four copies", 4, 24, 1, 6)
	if _, err := ix.Put(index.FileMeta{Path: "/b", Size: b.Size}, b); err != nil {
		t.Fatal(err)
	}
	check("and another content", 5, 28, 2, 10)
	if _, err := ix.Put(index.FileMeta{Path: "/b", Size: b.Size}, sketchOf(manber, "B2", 1000, feats(5, 6, 7)...)); err != nil {
		t.Fatal(err)
	}
	check("that content changed", 5, 27, 2, 9)
	for _, p := range []string{"/a1", "/a2", "/a3"} {
		if err := ix.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	check("one copy left", 2, 9, 2, 9)
	if err := ix.Remove("/a4"); err != nil {
		t.Fatal(err)
	}
	check("the last copy gone", 1, 3, 1, 3)
	ix.Close()
	ix = openMem(t, fs, manber)
	check("reopened", 1, 3, 1, 3)
}

// TestStrongHashesAlike: contents whose strong hashes share the bytes of
// their hash keys are told apart by their whole hash (PutCopy, identical
// files of a query, Dupes, the folding of Groups); a content rewritten in
// place under another strong hash moves its hash key; a strong hash that
// begins with zero bytes is not an unknown one.
func TestStrongHashesAlike(t *testing.T) {
	ix := openMem(t, nil, manber)
	strong := func(tail byte) [32]byte {
		s := [32]byte{0: 1, 1: 2, 2: 3, 3: 4}
		s[31] = tail
		return s
	}
	withStrong := func(sk *fingerprint.Sketch, s [32]byte) *fingerprint.Sketch {
		c := *sk
		c.Strong = s
		return &c
	}
	a := withStrong(sketchOf(manber, "", 1000, feats(1, 2, 3, 4, 5, 6)...), strong('a'))
	b := withStrong(sketchOf(manber, "", 1000, feats(7, 8, 9, 10, 11, 12)...), strong('b'))
	// f and g: one strong hash and size, other entries (a sketch made
	// with other parameters, or a hash collision): two contents.
	f := withStrong(sketchOf(manber, "", 2000, feats(20, 21, 22, 23, 24, 25)...), strong('f'))
	g := withStrong(sketchOf(manber, "", 2000, feats(20, 21, 22, 23, 24, 26)...), strong('f'))
	h := withStrong(sketchOf(manber, "", 2000, feats(20, 21, 22, 23, 24, 27)...), strong('h'))
	meta := func(path string, size int64) index.FileMeta {
		return index.FileMeta{Path: path, Size: size, MtimeNs: 7, Dev: 1, Ino: uint64(len(path))}
	}
	for _, p := range []struct {
		path string
		sk   *fingerprint.Sketch
	}{{"/a1", a}, {"/b1", b}, {"/b2", b}, {"/f1", f}, {"/g1", g}, {"/h1", h}} {
		if _, err := ix.Put(meta(p.path, p.sk.Size), p.sk); err != nil {
			t.Fatal(err)
		}
	}
	if rep := mustClean(t, ix); rep.Contents != 5 {
		t.Fatalf("%d contents, want 5 (a, b, f, g, h)", rep.Contents)
	}
	for _, c := range []struct {
		path   string
		strong [32]byte
		size   int64
		want   bool
	}{
		{"/a2", a.Strong, 1000, true},
		{"/b3", b.Strong, 1000, true},
		{"/x", strong('x'), 1000, false},
		{"/y", a.Strong, 2000, false},
	} {
		rec, ok, err := ix.PutCopy(meta(c.path, c.size), c.size, c.strong)
		if err != nil || ok != c.want || ok && rec.Strong != c.strong {
			t.Fatalf("PutCopy %s: %+v, %v, %v; want %v", c.path, rec, ok, err, c.want)
		}
	}
	res, err := ix.Similar(context.Background(), index.Query{Sketch: a}, index.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var identical []string
	for _, m := range res.Matches {
		if m.Identical {
			identical = append(identical, m.Path)
		}
	}
	if got := strings.Join(identical, " "); got != "/a1 /a2" {
		t.Errorf("identical to a: %q, want /a1 /a2", got)
	}
	ds, err := ix.Dupes(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, d := range ds {
		var ps []string
		for _, f := range d.Files {
			ps = append(ps, f.Path)
		}
		sets = append(sets, fmt.Sprintf("%d:%c:%s", d.Size, d.Strong[31], strings.Join(ps, ",")))
	}
	if got, want := strings.Join(sets, " "), "2000:f:/f1,/g1 1000:a:/a1,/a2 1000:b:/b1,/b2,/b3"; got != want {
		t.Errorf("dupes %s, want %s", got, want)
	}
	opts := index.GroupOptions{Threshold: 0.5}
	want, err := ix.GroupsReference(opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ix.Groups(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := renderGroups(got); r != renderGroups(want) || !strings.Contains(r, "ref /f1 1 copies [/g1]") {
		t.Errorf("groups:\n%s\nwant\n%s(f and g folded, with h)", r, renderGroups(want))
	}

	// /a1 and /a2 leave a for contents of their own; /a2's is then
	// rewritten in place under another strong hash, one that begins with
	// the bytes of an unknown (all zero) one.
	z := withStrong(sketchOf(manber, "", 1000, feats(30, 31, 32, 33, 34, 35)...), [32]byte{31: 'z'})
	u := withStrong(sketchOf(manber, "", 1000, feats(40, 41, 42, 43, 44, 45)...), [32]byte{})
	if _, err := ix.Put(meta("/a1", 1000), u); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Put(meta("/a2", 1000), b); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Put(meta("/a2", 1000), a); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Put(meta("/a2", 1000), z); err != nil {
		t.Fatal(err)
	}
	mustClean(t, ix)
	for _, c := range []struct {
		strong [32]byte
		want   bool
	}{{a.Strong, false}, {z.Strong, true}, {[32]byte{}, false}} {
		if _, ok, err := ix.PutCopy(meta("/c", 1000), 1000, c.strong); err != nil || ok != c.want {
			t.Fatalf("PutCopy of %x: %v, %v; want %v", c.strong, ok, err, c.want)
		}
	}
	mustClean(t, ix)
	ds, err = ix.Dupes(context.Background(), "/a")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 0 {
		t.Errorf("dupes under /a: %+v, want none", ds)
	}
}
