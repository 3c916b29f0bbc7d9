//go:build unix

package dirsim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sif-dev/sif/ipc"
)

// dgCase is an index for the directory arithmetic: every indexed file
// with its size, the sets of identical files, and the similar pairs.
type dgCase struct {
	files map[string]int64
	dupes [][]string
	links []dgLink
	// hardLinks maps a file to the one it is a hard link of (in its set).
	hardLinks map[string]string
	truncated map[string]bool // directories whose totals are cut short
}

// dgLink is a similar pair: how much of a b holds, and of b a, 0..1.
type dgLink struct {
	a, b       string
	aInB, bInA float64
}

// run groups c's directories at thr (0..1) under the top /r, through
// Grouping's API as Groups does with the daemon's answers (c answers for
// the totals), and returns the grouping and the groups, also as rendered,
// one line each.
func (c *dgCase) run(t *testing.T, thr float64) (*Grouping, []Group, []string) {
	t.Helper()
	g := NewGrouping([]string{"/r"})
	for _, l := range c.links {
		err := g.AddGroup(ipc.Group{Reference: ipc.GroupFile{Path: l.a, Size: c.size(t, l.a)},
			Members: []ipc.GroupFile{{Path: l.b, Size: c.size(t, l.b)}},
			Links:   []ipc.GroupLink{{A: 0, B: 1, AInB: 100 * l.aInB, BInA: 100 * l.bInA}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, set := range c.dupes {
		ds := ipc.DupeSet{Size: c.size(t, set[0])}
		for _, f := range set {
			df := ipc.DupeFile{FilePath: ipc.NewFilePath(f)}
			if to, ok := c.hardLinks[f]; ok {
				fp := ipc.NewFilePath(to)
				df.HardLinkOf = &fp
			}
			ds.Files = append(ds.Files, df)
		}
		g.AddDupes(ds)
	}
	out, err := g.Groups(context.Background(), c, 100*thr)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, grp := range out {
		lines = append(lines, renderDirGroup(grp))
	}
	return g, out, lines
}

// DirTotals counts the files of c under each directory, as the daemon
// would.
func (c *dgCase) DirTotals(_ context.Context, dirs []string, _ int) (*ipc.DirTotalsResponse, error) {
	out := &ipc.DirTotalsResponse{}
	for _, d := range dirs {
		var bytes, n int64
		for f, size := range c.files {
			if inTree(f, d) {
				bytes += size
				n++
			}
		}
		out.Dirs = append(out.Dirs, ipc.DirTotal{FilePath: ipc.NewFilePath(d), Files: n, Bytes: bytes, Truncated: c.truncated[d]})
	}
	return out, nil
}

func (c *dgCase) size(t *testing.T, f string) int64 {
	t.Helper()
	s, ok := c.files[f]
	if !ok {
		t.Fatalf("%s is not a file of the case", f)
	}
	return s
}

// renderDirGroup is a group in short: its saving, its reference and its
// members with their percentages.
func renderDirGroup(g Group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d: R %s", g.Saving, g.Reference.Path)
	for _, m := range g.Members {
		if m.Via != nil {
			fmt.Fprintf(&b, " | ~%g %s via %s", m.Percent, m.Path, m.Via.Path)
		} else {
			fmt.Fprintf(&b, " | %g %s", m.Percent, m.Path)
		}
	}
	return b.String()
}

// tree lays the files of proj (relative path → size) under dir.
func tree(files map[string]int64, dir string, proj map[string]int64) {
	for rel, size := range proj {
		files[dir+"/"+rel] = size
	}
}

// copies adds to c the sets of identical files of proj's copies at dirs.
func (c *dgCase) copies(proj map[string]int64, dirs ...string) {
	for _, rel := range slices.Sorted(maps.Keys(proj)) {
		var set []string
		for _, d := range dirs {
			set = append(set, d+"/"+rel)
		}
		c.dupes = append(c.dupes, set)
	}
}

var dgProj = map[string]int64{"README": 1000, "src/a.go": 2000, "src/b.go": 3000, "src/x/c.go": 2000, "docs/d.txt": 2000}

func projBytes() int64 {
	var n int64
	for _, s := range dgProj {
		n += s
	}
	return n
}

func wantLines(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDirGroupsCopy: a tree and its copy, each alone in its parent, are
// one group at the tree's top, not one per subdirectory nor their
// parents; the saving is the copy's bytes.
func TestDirGroupsCopy(t *testing.T) {
	c := &dgCase{files: map[string]int64{}}
	tree(c.files, "/r/a/proj", dgProj)
	tree(c.files, "/r/b/proj", dgProj)
	c.copies(dgProj, "/r/a/proj", "/r/b/proj")
	_, out, lines := c.run(t, 0.5)
	wantLines(t, lines, fmt.Sprintf("%d: R /r/a/proj | 100 /r/b/proj", projBytes()))
	if len(out) == 1 {
		m := out[0].Members[0]
		if *m.Containment != 100 || *m.ReverseContainment != 100 || *m.Resemblance != 100 || *m.SharedBytes != projBytes() ||
			m.Files.Identical != 5 || m.Files.Similar != 0 || m.Files.Missing != 0 || m.IndexedFiles != 5 || m.Size != projBytes() {
			t.Errorf("member %+v, files %+v", m, *m.Files)
		}
	}
}

// TestDirGroupsEdited: a copy with a file changed, one added, one removed
// and one moved to another directory: the shared bytes count the changed
// file by its shared part and the moved one whole at the top; the
// containments both ways and the resemblance follow.
func TestDirGroupsEdited(t *testing.T) {
	c := &dgCase{files: map[string]int64{}}
	tree(c.files, "/r/a/proj", dgProj)
	edited := maps.Clone(dgProj)
	delete(edited, "docs/d.txt")       // removed
	edited["src/new.go"] = 1000        // added
	delete(edited, "src/x/c.go")       // moved:
	edited["src/y/c2.go"] = 2000       //  to another directory
	tree(c.files, "/r/b/proj", edited) // src/b.go: changed, below
	for _, rel := range []string{"README", "src/a.go"} {
		c.dupes = append(c.dupes, []string{"/r/a/proj/" + rel, "/r/b/proj/" + rel})
	}
	c.dupes = append(c.dupes, []string{"/r/a/proj/src/x/c.go", "/r/b/proj/src/y/c2.go"})
	c.links = append(c.links, dgLink{"/r/a/proj/src/b.go", "/r/b/proj/src/b.go", 0.8, 0.6})
	_, out, lines := c.run(t, 0.5)
	// a: 10000 bytes, of which 1000+2000+2000 whole and 0.8*3000 shared;
	// b: 9000 bytes, of which 5000 whole and 0.6*3000.
	sharedA, sharedB := 5000+0.8*3000, 5000+0.6*3000
	ca, cb := sharedA/10000, sharedB/9000
	res := min(sharedA, sharedB) / (10000 + 9000 - min(sharedA, sharedB))
	wantLines(t, lines, fmt.Sprintf("%.0f: R /r/a/proj | %g /r/b/proj", sharedB, pct(res)))
	if len(out) == 1 {
		m := out[0].Members[0]
		if *m.Containment != pct(cb) || *m.ReverseContainment != pct(ca) || *m.Resemblance != pct(res) || *m.SharedBytes != int64(sharedB) {
			t.Errorf("member: containment %v, reverse %v, resemblance %v, shared %v; want %v, %v, %v, %v",
				*m.Containment, *m.ReverseContainment, *m.Resemblance, *m.SharedBytes, pct(cb), pct(ca), pct(res), sharedB)
		}
		if f := *m.Files; f.Identical != 3 || f.Similar != 1 || f.Missing != 1 {
			t.Errorf("member's files %+v, want 3 identical, 1 similar, 1 missing (the new one)", f)
		}
	}
	// At 80 %, the copy is too far; the directories of the moved file,
	// alike, are left.
	_, _, lines = c.run(t, 0.8)
	wantLines(t, lines, "2000: R /r/a/proj/src/x | 100 /r/b/proj/src/y")
}

// TestDirGroupsParentAddsSomething: two projects and their backups under
// one parent each: the parents are the group, and the projects' pairs
// fold into it.
func TestDirGroupsParentAddsSomething(t *testing.T) {
	c := &dgCase{files: map[string]int64{}}
	other := map[string]int64{"main.c": 4000, "lib/util.c": 3000}
	tree(c.files, "/r/src/p1", dgProj)
	tree(c.files, "/r/src/p2", other)
	tree(c.files, "/r/bak/src/p1", dgProj)
	tree(c.files, "/r/bak/src/p2", other)
	c.copies(dgProj, "/r/src/p1", "/r/bak/src/p1")
	c.copies(other, "/r/src/p2", "/r/bak/src/p2")
	_, _, lines := c.run(t, 0.5)
	wantLines(t, lines, fmt.Sprintf("%d: R /r/bak/src | 100 /r/src", projBytes()+7000))
}

// TestDirGroupsRenamed: a copy under another name, in a parent holding
// nothing else: the line is the copy's, not its parent's.
func TestDirGroupsRenamed(t *testing.T) {
	c := &dgCase{files: map[string]int64{}}
	tree(c.files, "/r/a/proj", dgProj)
	tree(c.files, "/r/b/proj-copy", dgProj)
	c.files["/r/a/notes.txt"] = 500 // a holds a little more, not shared
	c.copies(dgProj, "/r/a/proj", "/r/b/proj-copy")
	_, _, lines := c.run(t, 0.5)
	wantLines(t, lines, fmt.Sprintf("%d: R /r/a/proj | 100 /r/b/proj-copy", projBytes()))
}

// TestDirGroupsNested: copies nested in copies (outer holds proj's files
// and, in third_party/inner, another copy) are one group, without the
// pairs of outer's and inner's own subdirectories, nor the root as a copy
// of outer (what the root holds outside outer, two copies of proj,
// resembles outer, two copies of proj, but the root holds no copy of its
// own files there). outer, linked to both and the largest, is the reference;
// inner, a copy of outer's own files, saves its bytes. outer, two copies
// of proj, resembles it at 50 %.
func TestDirGroupsNested(t *testing.T) {
	c := &dgCase{files: map[string]int64{}}
	tree(c.files, "/r/orig/proj", dgProj)
	tree(c.files, "/r/bak/proj", dgProj)
	tree(c.files, "/r/nest/outer", dgProj)
	tree(c.files, "/r/nest/outer/third_party/inner", dgProj)
	c.files["/r/other.txt"] = 2000
	c.copies(dgProj, "/r/orig/proj", "/r/bak/proj", "/r/nest/outer", "/r/nest/outer/third_party/inner")
	_, _, lines := c.run(t, 0.5)
	wantLines(t, lines, fmt.Sprintf("%d: R /r/nest/outer | 100 /r/nest/outer/third_party/inner | 50 /r/bak/proj | 50 /r/orig/proj", 3*projBytes()))
}

// TestDirGroupsWithinCopies: a tree holding a copy of its lib/ (as
// lib-old/), and a copy of the whole: the trees are one group, and the
// four libs another, not one per tree.
func TestDirGroupsWithinCopies(t *testing.T) {
	c := &dgCase{files: map[string]int64{}}
	lib := map[string]int64{"a.c": 3000, "b.c": 4000}
	for _, top := range []string{"/r/proj", "/r/proj-copy"} {
		tree(c.files, top, dgProj)
		tree(c.files, top+"/lib", lib)
		tree(c.files, top+"/lib-old", lib)
	}
	c.copies(dgProj, "/r/proj", "/r/proj-copy")
	c.copies(lib, "/r/proj/lib", "/r/proj/lib-old", "/r/proj-copy/lib", "/r/proj-copy/lib-old")
	_, _, lines := c.run(t, 0.5)
	wantLines(t, lines, fmt.Sprintf("%d: R /r/proj | 100 /r/proj-copy", projBytes()+14000),
		"21000: R /r/proj-copy/lib | 100 /r/proj-copy/lib-old | 100 /r/proj/lib | 100 /r/proj/lib-old")
}

// TestDirGroupsSelfCopy: a tree holding a copy of its own files (a
// vendored copy of itself) is one group, not one per subdirectory.
func TestDirGroupsSelfCopy(t *testing.T) {
	c := &dgCase{files: map[string]int64{}}
	tree(c.files, "/r/outer", dgProj)
	tree(c.files, "/r/outer/vendor/inner", dgProj)
	c.copies(dgProj, "/r/outer", "/r/outer/vendor/inner")
	_, out, lines := c.run(t, 0.5)
	wantLines(t, lines, fmt.Sprintf("%d: R /r/outer | 100 /r/outer/vendor/inner", projBytes()))
	if len(out) == 1 {
		if m := out[0].Members[0]; *m.Resemblance != 100 || out[0].Reference.Size != 2*projBytes() {
			t.Errorf("member %+v of %+v: outer less inner is inner", m, out[0].Reference)
		}
	}
}

// TestDirGroupsVia: a chain of near-copies, each resembling the next at
// 67 % and the one after at 43 %: the reference is linked to two (then
// it is the first path); the member linked only through another names
// it, and is measured against it.
func TestDirGroupsVia(t *testing.T) {
	// a, b, c and d hold five 1000-byte files each, contents 0-4, 1-5,
	// 2-6 and 3-7.
	c := &dgCase{files: map[string]int64{}}
	dirs := []string{"a", "b", "c", "d"}
	for k := range 8 {
		var set []string
		for i, d := range dirs {
			if i <= k && k <= i+4 {
				f := fmt.Sprintf("/r/%s/c%d", d, k)
				c.files[f] = 1000
				set = append(set, f)
			}
		}
		if len(set) > 1 {
			c.dupes = append(c.dupes, set)
		}
	}
	_, _, lines := c.run(t, 0.5)
	wantLines(t, lines, "12000: R /r/b | 66.67 /r/a | 66.67 /r/c | ~66.67 /r/d via /r/c")
}

// TestDirGroupsNothing: identical files in one directory, a pair below
// the threshold, a directory holding its own copy, and nothing: no group.
func TestDirGroupsNothing(t *testing.T) {
	c := &dgCase{files: map[string]int64{}}
	var same []string
	for i := range 8 {
		f := fmt.Sprintf("/r/same/s%d.txt", i)
		c.files[f] = 1500
		same = append(same, f)
	}
	c.dupes = append(c.dupes, same)
	tree(c.files, "/r/x", dgProj)
	tree(c.files, "/r/y", map[string]int64{"README": 1000, "other.txt": 9000})
	c.dupes = append(c.dupes, []string{"/r/x/README", "/r/y/README"})
	if _, _, lines := c.run(t, 0.5); len(lines) != 0 {
		t.Errorf("groups %v, want none", lines)
	}
	if _, _, lines := (&dgCase{}).run(t, 0.5); len(lines) != 0 {
		t.Errorf("an empty index: %v", lines)
	}
}

// TestDirGroupsHardLinks: a copy made of hard links is a group that saves
// nothing.
func TestDirGroupsHardLinks(t *testing.T) {
	c := &dgCase{files: map[string]int64{}, hardLinks: map[string]string{}}
	tree(c.files, "/r/a/proj", dgProj)
	tree(c.files, "/r/b/proj", dgProj)
	c.copies(dgProj, "/r/a/proj", "/r/b/proj")
	for rel := range dgProj {
		c.hardLinks["/r/b/proj/"+rel] = "/r/a/proj/" + rel
	}
	_, _, lines := c.run(t, 0.5)
	wantLines(t, lines, "0: R /r/a/proj | 100 /r/b/proj")
}

// TestDirGroupsManyCopies: a file in 40 directories pairs the first with
// each other only (not 780 pairs), and they still form one group.
func TestDirGroupsManyCopies(t *testing.T) {
	c := &dgCase{files: map[string]int64{}}
	var set []string
	for i := range 40 {
		f := fmt.Sprintf("/r/d%02d/f", i)
		c.files[f] = 100
		set = append(set, f)
	}
	c.dupes = append(c.dupes, set)
	g, out, _ := c.run(t, 0.5)
	if len(g.pairs) != 39 {
		t.Errorf("%d directory pairs, want 39", len(g.pairs))
	}
	if len(out) != 1 || len(out[0].Members) != 39 || out[0].Reference.Path != "/r/d00" || out[0].Saving != 3900 {
		t.Errorf("groups %+v", out)
	}
}

// TestDirGroupsTotals: only the directories whose pairs may reach the
// threshold by the bytes known under them are asked for; a directory
// whose totals are cut short is not judged.
func TestDirGroupsTotals(t *testing.T) {
	c := &dgCase{files: map[string]int64{"/r/a/f1": 1000, "/r/a/f2": 9000, "/r/b/f1": 1000, "/r/c/f2": 9000}}
	c.dupes = [][]string{{"/r/a/f1", "/r/b/f1"}, {"/r/a/f2", "/r/c/f2"}}
	g, _, lines := c.run(t, 0.5)
	var asked []string
	for _, d := range g.dirs {
		if d.haveTotal {
			asked = append(asked, d.path)
		}
	}
	// (a, b): a's 1000 shared of 10000 known cannot reach 50 %.
	if fmt.Sprint(asked) != "[/r/a /r/c]" {
		t.Errorf("totals asked for %v, want a and c", asked)
	}
	wantLines(t, lines, "9000: R /r/a | 90 /r/c")
	c.truncated = map[string]bool{"/r/c": true}
	if _, _, lines := c.run(t, 0.5); len(lines) != 0 {
		t.Errorf("with c's totals cut short: %v", lines)
	}
}

// TestDirGroupsArithmetic: a file matched by several files of the other
// directory counts once, at its best; a file pair counts for every pair
// of ancestors up to the top; a directory holding the other stands for
// its files outside it, when a file pair lies at one relative path below
// both.
func TestDirGroupsArithmetic(t *testing.T) {
	c := &dgCase{files: map[string]int64{"/r/a/x/f": 1000, "/r/b/y/g1": 1000, "/r/b/y/g2": 1000,
		"/r/a/h": 500, "/r/a/x/h": 500, "/r/a/k": 300, "/r/a/x/k2": 300}}
	c.links = []dgLink{{"/r/a/x/f", "/r/b/y/g1", 0.7, 0.7}, {"/r/a/x/f", "/r/b/y/g2", 0.9, 0.5}}
	// a holds x: h, at one relative path in both, pairs them; k and k2 do
	// not, but count for the pair once it is one.
	c.dupes = [][]string{{"/r/a/h", "/r/a/x/h"}, {"/r/a/k", "/r/a/x/k2"}}
	g, _, _ := c.run(t, 0.5)
	got := map[string]string{}
	for _, p := range g.pairs {
		got[g.dirs[p.a].path+" "+g.dirs[p.b].path] = fmt.Sprintf("%.0f/%.0f %d+%d %d+%d",
			p.shared[0], p.shared[1], p.identical[0], p.identical[1], p.similar[0], p.similar[1])
	}
	// a holds a/x: h in a, outside a/x, and h in a/x are a copy of a part
	// of a in a/x.
	want := map[string]string{"/r/a/x /r/b/y": "900/1200 0+0 1+2", "/r/a /r/b": "900/1200 0+0 1+2", "/r/a /r/a/x": "800/800 2+2 0+0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pairs %v, want %v", got, want)
	}
	if p := g.pairs[0]; p.parent != 1 || g.pairs[1].parent != -1 || g.pairs[2].holder != 0 {
		t.Errorf("parents %d, %d; holder %d", p.parent, g.pairs[1].parent, g.pairs[2].holder)
	}
}
