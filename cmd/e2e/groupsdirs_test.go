//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirGroupsJSON is sifctl groups --dirs --json's answer.
type dirGroupsJSON struct {
	Threshold float64    `json:"threshold"`
	Dirs      bool       `json:"dirs"`
	Groups    []dirGroup `json:"groups"`
	ElapsedNs int64      `json:"elapsed_ns"`
}

type dirGroup struct {
	Saving    int64           `json:"saving"`
	Reference dirGroupEntry   `json:"reference"`
	Members   []dirGroupEntry `json:"members"`
}

type dirGroupEntry struct {
	Path               string                                     `json:"path"`
	Size               int64                                      `json:"size"`
	IndexedFiles       int64                                      `json:"indexed_files"`
	Percent            float64                                    `json:"percent"`
	Via                *struct{ Path string }                     `json:"via"`
	Containment        *float64                                   `json:"containment"`
	ReverseContainment *float64                                   `json:"reverse_containment"`
	Resemblance        *float64                                   `json:"resemblance"`
	SharedBytes        *int64                                     `json:"shared_bytes"`
	Files              *struct{ Identical, Similar, Missing int } `json:"files"`
}

func (e *env) groupsDirs(args ...string) (result, dirGroupsJSON) {
	e.t.Helper()
	r := e.sifctl(append([]string{"groups", "--dirs", "--json"}, args...)...)
	var out dirGroupsJSON
	if r.code != 2 {
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !out.Dirs || out.Groups == nil {
			e.t.Fatalf("groups --dirs --json %v: exit %d, %v: %q (stderr %s)", args, r.code, err, r.stdout, r.stderr)
		}
	}
	return r, out
}

// groupDirs lists a group's directories, the reference first.
func groupDirs(g dirGroup) []string {
	out := []string{g.Reference.Path}
	for _, m := range g.Members {
		out = append(out, m.Path)
	}
	return out
}

// TestGroupsDirs drives `sifctl groups --dirs` through the real daemon: a
// tree copied and edited (files changed, added, removed, renamed) and
// copies nested inside copies are one group, one line, with the right
// counts and percentages; a directory of identical small files, an empty
// directory and unrelated files are in none; --prefix, --threshold and
// the exit statuses.
func TestGroupsDirs(t *testing.T) {
	e := newEnv(t)
	proj := project(100)
	var total int64
	for _, b := range proj {
		total += int64(len(b))
	}
	orig := filepath.Join(e.root, "orig", "proj")
	writeTree(t, orig, proj)

	// The edited copy: two files changed, one added, one removed, one
	// renamed.
	edited := map[string][]byte{}
	for rel, b := range proj {
		edited[rel] = b
	}
	edited["src/parse.go"] = edit(7, proj["src/parse.go"], 0.2)
	edited["docs/guide.txt"] = edit(8, proj["docs/guide.txt"], 0.2)
	edited["src/new.go"] = words(999, 5000)
	delete(edited, "docs/api.txt")
	edited["src/x/scanner.go"] = edited["src/x/lexer.go"]
	delete(edited, "src/x/lexer.go")
	backup := filepath.Join(e.root, "backup", "2024", "proj")
	writeTree(t, backup, edited)

	// Copies nested in copies.
	outer := filepath.Join(e.root, "nest", "outer")
	inner := filepath.Join(outer, "third_party", "inner")
	writeTree(t, outer, proj)
	writeTree(t, inner, proj)

	// Unrelated files, a directory of identical small files, an empty
	// directory.
	for i := range 5 {
		e.write(fmt.Sprintf("other/f%d.txt", i), words(uint64(500+i), 6000))
	}
	small := words(4242, 1500)
	for i := range 8 {
		e.write(fmt.Sprintf("same/s%d.txt", i), small)
	}
	if err := os.Mkdir(filepath.Join(e.root, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.start()

	r, out := e.groupsDirs()
	if r.code != 0 || len(out.Groups) != 1 {
		t.Fatalf("groups --dirs: exit %d, %d groups, want 1: %+v (stderr %s)", r.code, len(out.Groups), out, r.stderr)
	}
	if out.Threshold != 50 || out.ElapsedNs <= 0 {
		t.Errorf("threshold %v, elapsed %d: want the default 50 and a time", out.Threshold, out.ElapsedNs)
	}
	g := out.Groups[0]
	got := groupDirs(g)
	want := []string{orig, backup, outer, inner}
	if !sameSet(got, want) {
		t.Fatalf("group %v, want %v: one group for the copies, none for their subdirectories", got, want)
	}
	if g.Reference.Path != orig || g.Reference.Percent != 100 || g.Reference.Size != total || g.Reference.IndexedFiles != int64(len(proj)) {
		t.Errorf("reference %+v, want %s (linked to all), %d bytes, %d files", g.Reference, orig, total, len(proj))
	}
	var saving int64
	for _, m := range g.Members {
		if m.Via != nil || m.Containment == nil || m.ReverseContainment == nil || m.Resemblance == nil || m.SharedBytes == nil || m.Files == nil {
			t.Fatalf("member %+v: every copy is linked to the reference and measured", m)
		}
		if m.Percent != *m.Resemblance || m.Percent < 50 {
			t.Errorf("member %s: percent %v, resemblance %v", m.Path, m.Percent, *m.Resemblance)
		}
		switch m.Path {
		case inner:
			if m.Percent != 100 || *m.Containment != 100 || *m.ReverseContainment != 100 || *m.SharedBytes != total ||
				m.Files.Identical != len(proj) || m.Files.Missing != 0 || m.Size != total {
				t.Errorf("whole copy %s: %+v, files %+v", m.Path, m, *m.Files)
			}
			// Inside outer, a member: counted with it.
		case outer:
			// Two copies: it holds the reference and the reference holds
			// it, but it resembles it at 50 %.
			if m.Percent != 50 || *m.Containment != 100 || *m.ReverseContainment != 100 || *m.SharedBytes != 2*total ||
				m.Files.Identical != 2*len(proj) || m.Size != 2*total {
				t.Errorf("copy holding a copy %s: %+v, files %+v", m.Path, m, *m.Files)
			}
			saving += *m.SharedBytes
		case backup:
			// 7 files whole, 2 edited by a fifth, one new.
			var whole, changed int64
			for _, rel := range []string{"README", "go.mod", "src/main.go", "src/util.go", "src/x/lexer.go", "src/x/token.go", "testdata/big.txt"} {
				whole += int64(len(proj[rel]))
			}
			changed = int64(len(edited["src/parse.go"]) + len(edited["docs/guide.txt"]))
			var size int64
			for _, b := range edited {
				size += int64(len(b))
			}
			lo := 100 * float64(whole+changed*3/10) / float64(size)
			hi := 100 * float64(whole+changed*9/10) / float64(size)
			if *m.Containment < lo || *m.Containment > hi || m.Size != size {
				t.Errorf("edited copy: containment %.2f%% of %d bytes, want %.1f..%.1f of %d", *m.Containment, m.Size, lo, hi, size)
			}
			if m.Files.Identical != 7 || m.Files.Similar != 2 || m.Files.Missing != 1 {
				t.Errorf("edited copy: files %+v, want 7 identical, 2 similar, 1 missing", *m.Files)
			}
			if *m.Resemblance > min(*m.Containment, *m.ReverseContainment) {
				t.Errorf("edited copy: resemblance %v above containments %v, %v", *m.Resemblance, *m.Containment, *m.ReverseContainment)
			}
			saving += *m.SharedBytes
		}
	}
	// Deleting all but orig: outer (inner with it) whole, the backup's
	// shared part.
	if g.Saving < saving-1 || g.Saving > saving+1 {
		t.Errorf("saving %d, want %d", g.Saving, saving)
	}

	// Text: one line for the group, then the count.
	h := e.sifctl("groups", "--dirs")
	lines := strings.Split(strings.TrimSpace(h.stdout), "\n")
	if h.code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[2], fmt.Sprintf("%d to save: R %s %d | ", g.Saving, orig, total)) ||
		!strings.Contains(lines[2], " | 100 "+inner+" ") || !strings.Contains(lines[2], " | 50 "+outer+" ") ||
		lines[4] != "1 group of similar directories, 4 directories." {
		t.Errorf("text output: exit %d\n%s", h.code, h.stdout)
	}
	for _, p := range []string{"same", "emptydir", "other"} {
		if strings.Contains(h.stdout, filepath.Join(e.root, p)) {
			t.Errorf("%s listed:\n%s", p, h.stdout)
		}
	}

	// --threshold: the edited copy is left out at 95 %, and outer is
	// linked through inner, a copy of its own files. The edited copy's
	// subdirectories identical to the others' are groups of their own.
	_, out = e.groupsDirs("--threshold", "95")
	if len(out.Groups) == 0 || !sameSet(groupDirs(out.Groups[0]), []string{orig, outer, inner}) {
		t.Errorf("--threshold 95: %+v", out.Groups)
	}
	for _, g := range out.Groups {
		for _, d := range groupDirs(g) {
			if d == backup || inTreeOf(backup, d) {
				t.Errorf("--threshold 95: %s listed, in %v", d, groupDirs(g))
			}
		}
	}
	// --prefix: a tree holding a copy of itself.
	_, out = e.groupsDirs("--prefix", filepath.Join(e.root, "nest"))
	if len(out.Groups) != 1 || !slices.Equal(groupDirs(out.Groups[0]), []string{outer, inner}) || out.Groups[0].Saving != total {
		t.Errorf("--prefix nest: %+v", out.Groups)
	}
	// Nothing: exit 1, said so.
	r, out = e.groupsDirs("--prefix", filepath.Join(e.root, "other"))
	if r.code != 1 || len(out.Groups) != 0 {
		t.Errorf("--prefix other: exit %d, %+v", r.code, out)
	}
	if h := e.sifctl("groups", "--dirs", "--prefix", filepath.Join(e.root, "same")); h.code != 1 ||
		h.stdout != "No groups of similar directories. Minimum similarity = 50%\n" {
		t.Errorf("--prefix same: exit %d, %q", h.code, h.stdout)
	}
	// A threshold out of range: exit 2, named.
	if r := e.sifctl("groups", "--dirs", "--threshold", "0"); r.code != 2 || !strings.Contains(r.stderr, "--threshold 0") {
		t.Errorf("--threshold 0: exit %d, %q", r.code, r.stderr)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
