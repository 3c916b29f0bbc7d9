//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// dirJSON is sifctl similar --json DIR's answer.
type dirJSON struct {
	Query      string `json:"query"`
	Dir        bool   `json:"dir"`
	Size       int64  `json:"size"`
	Files      int    `json:"files"`
	Empty      int    `json:"empty"`
	Special    int    `json:"special"`
	Unreadable int    `json:"unreadable"`
	Matches    []struct {
		Path               string   `json:"path"`
		Size               int64    `json:"size"`
		IndexedFiles       int64    `json:"indexed_files"`
		Truncated          bool     `json:"truncated"`
		Containment        float64  `json:"containment"`
		ReverseContainment *float64 `json:"reverse_containment"`
		Resemblance        *float64 `json:"resemblance"`
		SharedBytes        int64    `json:"shared_bytes"`
		Files              struct {
			Identical, Similar, Missing int
		} `json:"files"`
	} `json:"matches"`
}

func (e *env) similarDir(args ...string) (result, dirJSON) {
	e.t.Helper()
	r := e.sifctl(append([]string{"similar", "--json"}, args...)...)
	var out dirJSON
	if r.code != 2 {
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !out.Dir {
			e.t.Fatalf("similar --json %v: exit %d, %v: %q (stderr %s)", args, r.code, err, r.stdout, r.stderr)
		}
	}
	return r, out
}

// project is a small source tree: relative path → content.
func project(seed uint64) map[string][]byte {
	files := map[string][]byte{}
	names := []string{"README", "go.mod", "src/main.go", "src/util.go", "src/parse.go", "src/x/lexer.go",
		"src/x/token.go", "docs/guide.txt", "docs/api.txt", "testdata/big.txt"}
	for i, n := range names {
		files[n] = words(seed+uint64(i), 3000+(i*2357)%9000)
	}
	return files
}

func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for rel, b := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSimilarDir drives `sifctl similar DIR` through the real daemon: a
// tree copied under the root and edited (files changed, added, removed,
// renamed) is found with the right counts; copies nested in copies are
// each listed once, at their tops; the directory asked about, indexed, is
// never listed, nor are its ancestors; an empty directory and a directory
// of identical small files are answered.
func TestSimilarDir(t *testing.T) {
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

	// Unrelated files, and a directory of identical small files.
	for i := range 5 {
		e.write(fmt.Sprintf("other/f%d.txt", i), words(uint64(500+i), 6000))
	}
	small := words(4242, 1500)
	for i := range 8 {
		e.write(fmt.Sprintf("same/s%d.txt", i), small)
	}
	e.start()

	// The original, indexed, asked about: the copies, never itself.
	r, out := e.similarDir(orig)
	if r.code != 0 {
		t.Fatalf("similar DIR: exit %d, stderr %s", r.code, r.stderr)
	}
	if out.Query != orig || out.Files != len(proj) || out.Size != total {
		t.Errorf("query fields: %+v, want %s, %d files, %d bytes", out, orig, len(proj), total)
	}
	got := map[string]int{}
	for i, m := range out.Matches {
		got[m.Path] = i
		if inTreeOf(m.Path, orig) || inTreeOf(orig, m.Path) {
			t.Errorf("%s listed: the query directory, its ancestors and descendants are never candidates", m.Path)
		}
	}
	wantListed := []string{outer, inner, backup}
	for _, p := range wantListed {
		if _, ok := got[p]; !ok {
			t.Errorf("%s not listed; got %v", p, got)
		}
	}
	if len(got) != len(wantListed) {
		t.Errorf("listed %v, want exactly %v (no ancestors, no parts, nothing unrelated)", got, wantListed)
	}
	for _, m := range out.Matches {
		switch m.Path {
		case outer, inner:
			if m.Containment != 100 || m.Files.Identical != len(proj) || m.Files.Missing != 0 {
				t.Errorf("nested copy %s: %+v", m.Path, m)
			}
		case backup:
			// 7 files whole, 2 edited by a fifth, one missing.
			var whole, changed int64
			for _, rel := range []string{"README", "go.mod", "src/main.go", "src/util.go", "src/x/lexer.go", "src/x/token.go", "testdata/big.txt"} {
				whole += int64(len(proj[rel]))
			}
			changed = int64(len(proj["src/parse.go"]) + len(proj["docs/guide.txt"]))
			lo := 100 * float64(whole+changed*3/10) / float64(total)
			hi := 100 * float64(whole+changed*9/10) / float64(total)
			if m.Containment < lo || m.Containment > hi {
				t.Errorf("edited copy: containment %.2f%%, want %.1f..%.1f", m.Containment, lo, hi)
			}
			if m.Files.Identical != 7 || m.Files.Similar != 2 || m.Files.Missing != 1 {
				t.Errorf("edited copy: files %+v, want 7 identical, 2 similar, 1 missing", m.Files)
			}
			if m.IndexedFiles != int64(len(edited)) || m.ReverseContainment == nil || *m.ReverseContainment > 90 || *m.ReverseContainment < 60 ||
				m.Resemblance == nil || *m.Resemblance > m.Containment {
				t.Errorf("edited copy: %d files indexed (want %d), reverse %v, resemblance %v", m.IndexedFiles, len(edited), fmtp(m.ReverseContainment), fmtp(m.Resemblance))
			}
		}
	}
	if len(out.Matches) == 3 && out.Matches[2].Path != backup {
		t.Errorf("the edited copy is not last: %v", got)
	}

	// A copy outside the root, with a fifo and a symlink beside its
	// files: the original is the top match, whole, and the special files
	// are skipped without blocking.
	q := filepath.Join(e.dir, "q", "proj")
	writeTree(t, q, proj)
	if err := syscall.Mkfifo(filepath.Join(q, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(orig, "README"), filepath.Join(q, "link"))
	os.WriteFile(filepath.Join(q, "empty"), nil, 0o644)
	r, out = e.similarDir(q)
	if r.code != 0 || len(out.Matches) < 3 {
		t.Fatalf("copy outside the root: exit %d, %+v, stderr %s", r.code, out, r.stderr)
	}
	if m := out.Matches[0]; m.Containment != 100 || m.ReverseContainment == nil || *m.ReverseContainment != 100 ||
		m.Resemblance == nil || *m.Resemblance != 100 || m.Files.Identical != len(proj) || m.SharedBytes != total || m.Size != total {
		t.Errorf("top match %+v, want a whole copy (orig, outer or inner) at 100%%", m)
	}
	if top := out.Matches[0].Path; top != orig && top != inner {
		// outer holds inner: its reverse containment and resemblance are
		// 50%, so orig and inner tie at 100%.
		t.Errorf("top match %s, want %s or %s", top, orig, inner)
	}
	if out.Special != 2 || out.Empty != 1 || out.Unreadable != 0 {
		t.Errorf("skipped: %d special, %d empty, %d unreadable; want 2, 1, 0", out.Special, out.Empty, out.Unreadable)
	}

	// Filters: --prefix, --threshold, --limit.
	_, out = e.similarDir("--prefix", filepath.Join(e.root, "backup"), q)
	if len(out.Matches) != 1 || out.Matches[0].Path != backup {
		t.Errorf("--prefix backup: %+v", out.Matches)
	}
	_, out = e.similarDir("--threshold", "95", q)
	for _, m := range out.Matches {
		if m.Path == backup || m.Containment < 95 {
			t.Errorf("--threshold 95 lists %s at %.1f%%", m.Path, m.Containment)
		}
	}
	_, out = e.similarDir("--limit", "2", q)
	if len(out.Matches) != 2 {
		t.Errorf("--limit 2: %d matches", len(out.Matches))
	}

	// Human output: one line per copy.
	h := e.sifctl("similar", q)
	if h.code != 0 || !strings.Contains(h.stdout, "100%  "+orig+"  ") || !strings.Contains(h.stdout, backup+"  ") ||
		!strings.Contains(h.stdout, "7 identical, 2 similar, 1 missing") {
		t.Errorf("human output:\n%s", h.stdout)
	}

	// A directory of identical small files.
	sq := filepath.Join(e.dir, "smallq")
	for i := range 5 {
		writeTree(t, sq, map[string][]byte{fmt.Sprintf("copy%d", i): small})
	}
	r, out = e.similarDir(sq)
	same := filepath.Join(e.root, "same")
	if r.code != 0 || len(out.Matches) != 1 || out.Matches[0].Path != same || out.Matches[0].Containment != 100 ||
		out.Matches[0].Files.Identical != 5 || *out.Matches[0].ReverseContainment != 100 {
		t.Errorf("identical small files: exit %d, %+v", r.code, out.Matches)
	}

	// An empty directory: a clear answer, exit 1.
	empty := filepath.Join(e.dir, "empty")
	os.Mkdir(empty, 0o755)
	r, out = e.similarDir(empty)
	if r.code != 1 || out.Files != 0 || out.Matches == nil || len(out.Matches) != 0 {
		t.Errorf("empty directory: exit %d, %q", r.code, r.stdout)
	}
	if h := e.sifctl("similar", empty); h.code != 1 || !strings.Contains(h.stdout, "no file to compare") {
		t.Errorf("empty directory, text: exit %d, %q", h.code, h.stdout)
	}

	// Nothing like it: exit 1.
	nq := filepath.Join(e.dir, "new")
	writeTree(t, nq, project(7000))
	if r, out = e.similarDir(nq); r.code != 1 || len(out.Matches) != 0 {
		t.Errorf("unrelated directory: exit %d, %+v", r.code, out.Matches)
	}

	// A directory that does not exist: exit 2, named.
	if r := e.sifctl("similar", filepath.Join(e.dir, "nope")); r.code != 2 || !strings.Contains(r.stderr, "nope: no such file or directory") {
		t.Errorf("missing directory: exit %d, %q", r.code, r.stderr)
	}
}

func inTreeOf(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func fmtp(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%.2f", *p)
}
