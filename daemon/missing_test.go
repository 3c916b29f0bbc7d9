package daemon

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/watcher"
)

// words returns n random words from a seeded source: text that
// fingerprints well, different for each seed.
func words(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for i := range n {
		for range 3 + rng.IntN(6) {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		if i%12 == 11 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()
}

// edited returns a copy of text with a few lines replaced: similar to
// text, not identical.
func edited(text []byte, seed uint64) []byte {
	lines := bytes.Split(slices.Clone(text), []byte("\n"))
	for i := 3; i < len(lines); i += 8 {
		lines[i] = words(seed+uint64(i), 12)
	}
	return bytes.Join(lines, []byte("\n"))
}

func writeFiles(t *testing.T, files map[string][]byte) {
	t.Helper()
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rootNamed returns the root at path, failing the test if there is none.
func rootNamed(t *testing.T, d *Daemon, path string) *rootState {
	t.Helper()
	for _, r := range d.rootList() {
		if r.path == path {
			return r
		}
	}
	t.Fatalf("no root %s among %q", path, d.rootPaths())
	return nil
}

// checkRoots is the fault loop's look at the roots, made every faultPoll.
func checkRoots(d *Daemon) { d.checkRoots(context.Background()) }

// answered is what the socket would answer about the files: the paths
// similar to text, the groups, the duplicate sets and the totals of dirs.
type answered struct {
	similar []string
	groups  [][]string // each: reference first, then members; copies after their file as "=path"
	dupes   [][]string
	totals  []int64
}

func answer(t *testing.T, d *Daemon, text []byte, dirs ...string) answered {
	t.Helper()
	ctx := context.Background()
	q := answers{d}
	sk, err := fingerprint.SketchQuery(bytes.NewReader(text), q.Params())
	if err != nil {
		t.Fatal(err)
	}
	var a answered
	res, err := q.Similar(ctx, index.Query{Sketch: sk}, index.QueryOptions{})
	if err != nil {
		t.Fatalf("Similar: %v", err)
	}
	for _, m := range res.Matches {
		a.similar = append(a.similar, m.Path)
	}
	slices.Sort(a.similar)
	err = q.EachGroup(ctx, index.GroupOptions{}, func(g index.Group) error {
		var ps []string
		for _, m := range append([]index.GroupMember{g.Reference}, g.Members...) {
			ps = append(ps, m.Path)
			for _, c := range m.Copies {
				ps = append(ps, "="+c)
			}
		}
		if g.Reference.Percent != 1 || g.Reference.Via != "" {
			t.Errorf("group %q: reference with percent %v via %q, want 1 and none", ps, g.Reference.Percent, g.Reference.Via)
		}
		a.groups = append(a.groups, ps)
		return nil
	})
	if err != nil {
		t.Fatalf("EachGroup: %v", err)
	}
	ds, err := q.Dupes(ctx, "")
	if err != nil {
		t.Fatalf("Dupes: %v", err)
	}
	for _, s := range ds {
		var ps []string
		for _, f := range s.Files {
			ps = append(ps, f.Path)
		}
		a.dupes = append(a.dupes, ps)
	}
	tot, err := q.DirTotals(ctx, dirs, nil)
	if err != nil {
		t.Fatalf("DirTotals: %v", err)
	}
	for _, x := range tot {
		a.totals = append(a.totals, x.Files)
	}
	return a
}

// mentions returns the paths of a that lie under dir.
func (a answered) mentions(dir string) []string {
	var out []string
	for _, ps := range [][]string{a.similar, slices.Concat(a.groups...), slices.Concat(a.dupes...)} {
		for _, p := range ps {
			if p = strings.TrimPrefix(p, "="); under(p, dir) {
				out = append(out, p)
			}
		}
	}
	return out
}

// A root renamed away is "missing", with why, from the fault loop's next
// look; its files stay in the index (a root that comes back costs no
// read) but are left out of every answer: similar files, groups (a group
// whose reference is gone gets another, a group left with one file goes),
// duplicates (a set left with one file goes) and directory totals, while
// the files of a root whose path merely starts the same ("a" and "ab") are
// answered. It is logged once at warn level and noted once among the last
// errors. Back, it is reconciled: what changed while it was away is
// applied, and what did not costs a stat, not a read.
func TestMissingRootKeptNotAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := t.TempDir()
		a, ab := filepath.Join(base, "a"), filepath.Join(base, "ab")
		text, blob, note := words(1, 4000), words(2, 4000), words(7, 3000)
		writeFiles(t, map[string][]byte{
			filepath.Join(a, "doc.txt"):        append(slices.Clone(text), words(6, 600)...), // the largest: its group's reference
			filepath.Join(a, "blob.txt"):       blob,
			filepath.Join(a, "note.txt"):       note,
			filepath.Join(a, "other.txt"):      words(3, 3000),
			filepath.Join(ab, "doc.txt"):       edited(text, 100),
			filepath.Join(ab, "doc2.txt"):      edited(text, 200),
			filepath.Join(ab, "blob.txt"):      blob,
			filepath.Join(ab, "note-copy.txt"): note,
			filepath.Join(ab, "note-edit.txt"): edited(note, 300),
			filepath.Join(ab, "unique.txt"):    words(4, 3000),
		})
		d, logs := bubbleDaemon(t, Config{Roots: []string{a, ab}})
		ra := rootNamed(t, d, a)

		before := answer(t, d, text, base, a, ab)
		if !slices.Equal(before.similar, []string{filepath.Join(a, "doc.txt"), filepath.Join(ab, "doc.txt"), filepath.Join(ab, "doc2.txt")}) {
			t.Fatalf("similar to doc.txt with every root present: %q", before.similar)
		}
		if len(before.groups) != 2 || len(before.dupes) != 2 || !slices.Equal(before.totals, []int64{10, 4, 6}) {
			t.Fatalf("answers with every root present: %+v", before)
		}
		stats, _ := d.ix.Stats()
		counts := d.count.snapshot()

		away := filepath.Join(base, "a.away")
		if err := os.Rename(a, away); err != nil {
			t.Fatal(err)
		}
		checkRoots(d)
		checkRoots(d)                       // still missing: nothing more
		d.markMissing(ra, "unmounted", nil) // nor when a worker finds it gone
		st := ra.status()
		if st.State != ipc.RootMissing || st.Reason != "not found: its files are not answered until it is back" {
			t.Errorf("root renamed away: state %q reason %q, want %q with why", st.State, st.Reason, ipc.RootMissing)
		}
		if s, _ := d.ix.Stats(); s.Files != stats.Files {
			t.Errorf("root missing: the index holds %d files, want the %d it held (kept until the root is back)", s.Files, stats.Files)
		}
		after := answer(t, d, text, base, a, ab)
		if m := after.mentions(a); len(m) > 0 {
			t.Errorf("answers name files of the missing root: %q", m)
		}
		if !slices.Equal(after.similar, []string{filepath.Join(ab, "doc.txt"), filepath.Join(ab, "doc2.txt")}) {
			t.Errorf("similar to doc.txt with %s missing: %q, want the files of %s", a, after.similar, ab)
		}
		// A limited answer is filled from the present files: the missing
		// doc.txt, which holds all of the text, takes no place in it.
		sk, err := fingerprint.SketchQuery(bytes.NewReader(text), d.ix.Params())
		if err != nil {
			t.Fatal(err)
		}
		res, err := answers{d}.Similar(context.Background(), index.Query{Sketch: sk}, index.QueryOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) != 1 || !strings.HasPrefix(res.Matches[0].Path, ab+string(filepath.Separator)) || res.Total != 2 {
			var got []string
			for _, m := range res.Matches {
				got = append(got, m.Path)
			}
			t.Errorf("similar to doc.txt, limit 1, with %s missing: %q of %d, want one of %s's two", a, got, res.Total, ab)
		}
		// The group of the docs had its reference in a: it keeps ab's two.
		if !slices.ContainsFunc(after.groups, func(g []string) bool {
			return slices.Equal(slices.Sorted(slices.Values(g)), []string{filepath.Join(ab, "doc.txt"), filepath.Join(ab, "doc2.txt")})
		}) {
			t.Errorf("groups with %s missing: %q, want one of %s's two doc files", a, after.groups, ab)
		}
		// The group of the notes had its reference in a, with an identical
		// copy in ab: the copy is answered in its place.
		if !slices.ContainsFunc(after.groups, func(g []string) bool {
			return slices.Equal(slices.Sorted(slices.Values(g)), []string{filepath.Join(ab, "note-copy.txt"), filepath.Join(ab, "note-edit.txt")})
		}) {
			t.Errorf("groups with %s missing: %q, want one of %s's note-copy.txt and note-edit.txt", a, after.groups, ab)
		}
		if len(after.dupes) != 0 {
			t.Errorf("duplicates with %s missing: %q, want none (one file left)", a, after.dupes)
		}
		if !slices.Equal(after.totals, []int64{6, 0, 6}) {
			t.Errorf("totals of %s, %s, %s with %s missing: %v, want [6 0 6]", base, a, ab, a, after.totals)
		}
		if n := strings.Count(logs.String(), `msg="root is missing: its files are kept but not answered until it is back" root=`+a+" why=\"not found\""); n != 1 {
			t.Errorf("missing root logged %d times, want once:\n%s", n, logs.String())
		}
		if n := countLines(d.Status().LastError, fmt.Sprintf("root %s missing: not found", a)); n != 1 {
			t.Errorf("last errors: %q, want the missing root once", d.Status().LastError)
		}

		// While away, a file was removed and one added; the others are
		// as they were.
		if err := os.Remove(filepath.Join(away, "other.txt")); err != nil {
			t.Fatal(err)
		}
		writeFiles(t, map[string][]byte{filepath.Join(away, "new.txt"): words(5, 3000)})
		if err := os.Rename(away, a); err != nil {
			t.Fatal(err)
		}
		checkRoots(d)
		if !strings.Contains(logs.String(), `msg="root is back: reconciling it" root=`+a+` was="not found"`) {
			t.Errorf("root back not logged:\n%s", logs.String())
		}
		synctest.Wait()
		if st := ra.status(); st.State == ipc.RootMissing {
			t.Errorf("root back: still %q (%s)", st.State, st.Reason)
		}
		back := answer(t, d, text, base, a, ab)
		if !slices.Equal(back.similar, before.similar) || !slices.Equal(back.totals, []int64{10, 4, 6}) || len(back.dupes) != 2 {
			t.Errorf("answers once the root is back and reconciled: %+v, want those from before: %+v", back, before)
		}
		var recs []string
		_ = d.ix.Files(dirPrefix(a), func(rec index.FileRecord) error { recs = append(recs, filepath.Base(rec.Path)); return nil })
		if !slices.Equal(recs, []string{"blob.txt", "doc.txt", "new.txt", "note.txt"}) {
			t.Errorf("records under %s after the reconcile: %q, want blob.txt doc.txt new.txt note.txt", a, recs)
		}
		now := d.count.snapshot()
		if read, same := now.Indexed-counts.Indexed, now.Unchanged-counts.Unchanged; read != 1 || same != 3 {
			t.Errorf("reconcile read %d files and found %d unchanged, want 1 read (new.txt) and 3 unchanged", read, same)
		}
	})
}

func countLines(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// recordsUnder returns the base names of the records under dir.
func recordsUnder(d *Daemon, dir string) []string {
	var out []string
	_ = d.ix.Files(dirPrefix(dir), func(rec index.FileRecord) error {
		out = append(out, filepath.Base(rec.Path))
		return nil
	})
	return out
}

// A worker that finds a changed path gone looks whether its root is: a
// file removed from a present root loses its record, while a file whose
// root is gone keeps it, and the root is marked missing (logged once,
// however many of its files are found gone).
func TestMissingRootFoundByWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := t.TempDir()
		a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
		writeFiles(t, map[string][]byte{
			filepath.Join(a, "1.txt"): words(1, 2000),
			filepath.Join(a, "2.txt"): words(2, 2000),
			filepath.Join(b, "1.txt"): words(3, 2000),
			filepath.Join(b, "2.txt"): words(4, 2000),
		})
		d, logs := bubbleDaemon(t, Config{Roots: []string{a, b}})
		settled := func(p string) { d.settled(context.Background(), watcher.Settled{Path: p, First: time.Now()}) }

		if err := os.Remove(filepath.Join(b, "1.txt")); err != nil {
			t.Fatal(err)
		}
		settled(filepath.Join(b, "1.txt"))
		synctest.Wait()
		if got := recordsUnder(d, b); !slices.Equal(got, []string{"2.txt"}) {
			t.Fatalf("records under %s after 1.txt was removed: %q, want 2.txt", b, got)
		}

		if err := os.Rename(a, filepath.Join(base, "a.away")); err != nil {
			t.Fatal(err)
		}
		settled(filepath.Join(a, "1.txt"))
		settled(filepath.Join(a, "2.txt"))
		synctest.Wait()
		if got := recordsUnder(d, a); !slices.Equal(got, []string{"1.txt", "2.txt"}) {
			t.Errorf("records under the missing root %s: %q, want both kept", a, got)
		}
		if st := rootNamed(t, d, a).status(); st.State != ipc.RootMissing || !strings.HasPrefix(st.Reason, "not found: ") {
			t.Errorf("root found gone by a worker: state %q reason %q, want %q, not found", st.State, st.Reason, ipc.RootMissing)
		}
		if st := rootNamed(t, d, b).status(); st.State == ipc.RootMissing {
			t.Errorf("root %s missing: %s", b, st.Reason)
		}
		if n := strings.Count(logs.String(), `msg="root is missing`); n != 1 {
			t.Errorf("missing root logged %d times, want once:\n%s", n, logs.String())
		}
	})
}
