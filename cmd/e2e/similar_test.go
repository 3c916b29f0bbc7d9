//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimilar drives a query through the real daemon: edited copies and a
// file containing half of the query are found with plausible percentages,
// identical files come first, the query file is not its own match, and an
// unrelated file is not listed.
func TestSimilar(t *testing.T) {
	e := newEnv(t)
	base := words(1, 30000)
	orig := e.write("src/orig.txt", base)
	copyPath := e.write("copy/orig-copy.txt", base)
	edited := e.write("src/edited.txt", edit(2, base, 0.2))
	half := e.write("half.txt", append(append([]byte(nil), base[:15000]...), words(4, 15000)...))
	e.write("other/unrelated.txt", words(3, 30000))
	e.start()

	r, out := e.similar(orig)
	if r.code != 0 || len(out) != 1 {
		t.Fatalf("similar: exit %d, %d lines; stderr %s", r.code, len(out), r.stderr)
	}
	got := map[string]float64{}
	for i, m := range out[0].Matches {
		got[m.Path] = m.Containment
		if m.Path == orig {
			t.Errorf("the query file is listed as its own match")
		}
		if m.Identical != (m.Path == copyPath) {
			t.Errorf("%s: identical = %v", m.Path, m.Identical)
		}
		if m.Identical && i != 0 {
			t.Errorf("identical file listed at %d, want first", i)
		}
		if m.Size <= 0 || m.Containment < 25 || m.Containment > 100 || m.Resemblance > m.Containment+1e-9 && m.Resemblance > m.ReverseContainment+1e-9 {
			t.Errorf("implausible match %+v", m)
		}
	}
	want := map[string][2]float64{copyPath: {100, 100}, edited: {45, 90}, half: {35, 65}}
	for p, rng := range want {
		c, ok := got[p]
		if !ok {
			t.Errorf("%s not found; got %v", p, got)
			continue
		}
		if c < rng[0] || c > rng[1] {
			t.Errorf("%s: containment %.1f%%, want %.0f..%.0f", p, c, rng[0], rng[1])
		}
	}
	if len(got) != len(want) {
		t.Errorf("matches %v, want exactly %d files", got, len(want))
	}
	if out[0].Query != orig || out[0].Size != int64(len(base)) || out[0].Fingerprints == 0 {
		t.Errorf("query fields: %+v", out[0])
	}

	// A query file outside every root works too: the client fingerprints it.
	outside := filepath.Join(e.dir, "query.txt")
	os.WriteFile(outside, edit(5, base, 0.25), 0o644)
	r, out = e.similar(outside)
	if r.code != 0 || len(out[0].Matches) < 2 || out[0].Matches[0].Path != copyPath && out[0].Matches[0].Path != orig {
		t.Fatalf("outside query: exit %d, %+v", r.code, out)
	}

	// Human output in the spirit of Manber's Figure 3.
	h := e.sifctl("similar", orig)
	if h.code != 0 || !strings.Contains(h.stdout, "100%  "+copyPath+"  30000  identical") {
		t.Errorf("human output:\n%s", h.stdout)
	}

	// Nothing similar: exit 1, and the human output says so.
	unrelatedQuery := filepath.Join(e.dir, "fresh.txt")
	os.WriteFile(unrelatedQuery, words(99, 30000), 0o644)
	h = e.sifctl("similar", unrelatedQuery)
	if h.code != 1 || !strings.Contains(h.stdout, "nothing similar") {
		t.Errorf("unrelated query: exit %d\n%s%s", h.code, h.stdout, h.stderr)
	}

	// Threshold and limit are applied.
	_, out = e.similar("--threshold", "90", orig)
	for _, m := range out[0].Matches {
		if m.Containment < 90 {
			t.Errorf("--threshold 90 listed %s at %.1f%%", m.Path, m.Containment)
		}
	}
	_, out = e.similar("--limit", "1", orig)
	if len(out[0].Matches) != 1 {
		t.Errorf("--limit 1 listed %d matches", len(out[0].Matches))
	}

	// Several files: one JSON line each.
	r, out = e.similar(orig, edited)
	if r.code != 0 || len(out) != 2 || out[1].Query != edited {
		t.Errorf("two queries: exit %d, %d lines", r.code, len(out))
	}
}

// TestSimilarJSONFields pins the documented --json field names, which other
// programs parse.
func TestSimilarJSONFields(t *testing.T) {
	e := newEnv(t)
	base := words(7, 8000)
	q := e.write("a.txt", base)
	e.write("b.txt", append(append([]byte(nil), base[:4000]...), words(9, 4000)...))
	e.start(append([]string{}, "--scheme", "chunks")...)
	r := e.sifctl("similar", "--json", q)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"query", "size", "matches"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("missing field %q in %s", k, r.stdout)
		}
	}
	var ms []map[string]json.RawMessage
	json.Unmarshal(raw["matches"], &ms)
	if len(ms) != 1 {
		t.Fatalf("matches: %s", raw["matches"])
	}
	for _, k := range []string{"path", "size", "containment", "reverse_containment", "resemblance", "shared_bytes", "identical"} {
		if _, ok := ms[0][k]; !ok {
			t.Errorf("missing match field %q in %s", k, r.stdout)
		}
	}
	var shared int64
	if err := json.Unmarshal(ms[0]["shared_bytes"], &shared); err != nil || shared <= 0 || shared > 8000 {
		t.Errorf("chunks scheme: shared_bytes %s, want a byte count", ms[0]["shared_bytes"])
	}
}

// TestTinyFile: a file too small to carry evidence is reported as such, and
// its identical copies are still found.
func TestTinyFile(t *testing.T) {
	e := newEnv(t)
	tiny := e.write("tiny.txt", []byte("hello, world\n"))
	e.write("elsewhere/tiny-copy.txt", []byte("hello, world\n"))
	e.start()
	r, out := e.similar(tiny)
	if r.code != 0 || !out[0].TooFew || len(out[0].Matches) != 1 || !out[0].Matches[0].Identical {
		t.Fatalf("tiny: exit %d %+v", r.code, out)
	}
	h := e.sifctl("similar", tiny)
	if !strings.Contains(h.stdout, "too small to judge similarity") {
		t.Errorf("human output does not say the file is too small:\n%s", h.stdout)
	}
}

// TestBoilerplateIsSkipped: a licence header shared by many files makes them
// look alike; above the --max-df cap its fingerprints are skipped, counted,
// and no longer link unrelated files.
func TestBoilerplateIsSkipped(t *testing.T) {
	e := newEnv(t)
	header := words(50, 6000)
	var paths []string
	for i := range 6 {
		body := words(uint64(60+i), 6000)
		paths = append(paths, e.write(fmt.Sprintf("f%d.txt", i), append(append([]byte(nil), header...), body...)))
	}
	e.start()
	// Without a cap the shared header (half of each file) links them all.
	r, out := e.similar("--max-df", "-1", paths[0])
	if r.code != 0 || len(out[0].Matches) != 5 || out[0].Skipped != 0 {
		t.Fatalf("no cap: exit %d, %d matches, %d skipped", r.code, len(out[0].Matches), out[0].Skipped)
	}
	// With a cap below the number of files holding the header, its
	// fingerprints are skipped and nothing else is shared.
	r, out = e.similar("--max-df", "3", paths[0])
	if r.code != 1 || len(out[0].Matches) != 0 || out[0].Skipped == 0 || out[0].Skipped >= out[0].Fingerprints {
		t.Fatalf("cap 3: exit %d, %d matches, %d of %d skipped", r.code, len(out[0].Matches), out[0].Skipped, out[0].Fingerprints)
	}
	h := e.sifctl("similar", "--max-df", "3", paths[0])
	if !strings.Contains(h.stdout, "too common to count") {
		t.Errorf("human output does not mention the skipped fingerprints:\n%s", h.stdout)
	}
}
