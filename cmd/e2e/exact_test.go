//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// checkedJSON is one line of sifctl similar --json, with the check's count.
type checkedJSON struct {
	Query   string      `json:"query"`
	Checked int         `json:"checked"`
	Matches []ipc.Match `json:"matches"`
}

func (e *env) checkedSimilar(args ...string) checkedJSON {
	e.t.Helper()
	r := e.sifctl(append([]string{"similar", "--json"}, args...)...)
	if r.code != 0 {
		e.t.Fatalf("sifctl similar %v: exit %d: %s", args, r.code, r.stderr)
	}
	var out checkedJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		e.t.Fatalf("similar --json: %v\n%s", err, r.stdout)
	}
	return out
}

// topFast is topMatch with --fast: the index's own answer, unchecked.
func (e *env) topFast(query string) string {
	e.t.Helper()
	_, out := e.similar("--fast", query)
	if len(out) != 1 || len(out[0].Matches) == 0 {
		return ""
	}
	return out[0].Matches[0].Path
}

func paths(ms []ipc.Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Path)
	}
	return out
}

// truth is the exact containment of q in c, by the package the daemon
// checks with (itself tested against a naive count).
func truth(t *testing.T, q, c []byte) float64 {
	m, err := exact.NewQuery(q).MeasureBytes(c)
	if err != nil {
		t.Fatal(err)
	}
	return m.Containment * 100
}

// TestCheckRanksTrueBestFirst builds a decoy that keeps every piece of the
// query the fingerprints sample (and a third of the rest) and a near-copy
// with one byte changed in most sampled pieces: the index's estimate ranks
// the decoy first, the check ranks the near-copy first, with exact
// numbers.
func TestCheckRanksTrueBestFirst(t *testing.T) {
	e := newEnv(t)
	q := words(801, 20000)
	var fps []fingerprint.Fingerprint
	sk, err := fingerprint.NewSketcher(fingerprint.Params{}, func(f fingerprint.Fingerprint) { fps = append(fps, f) })
	if err != nil {
		t.Fatal(err)
	}
	sk.Write(q)
	sk.Finish()
	if len(fps) < 20 {
		t.Fatalf("the query has %d fingerprints; the construction needs more", len(fps))
	}
	decoy := words(802, len(q))
	copy(decoy, q[:len(q)/3])
	near := bytes.Clone(q)
	for i, f := range fps {
		copy(decoy[f.Offset:], q[f.Offset:f.Offset+int64(f.Len)])
		if i%10 < 7 {
			near[f.Offset+int64(f.Len)/2] ^= 0x20 // a letter's case
		}
	}
	decoyPath := e.write("a/decoy.txt", decoy)
	nearPath := e.write("b/near.txt", near)
	query := filepath.Join(e.dir, "query.txt")
	must(t, os.WriteFile(query, q, 0o644))
	e.start()

	fast := e.checkedSimilar("--fast", "--threshold", "10", query)
	if got := paths(fast.Matches); len(got) != 2 || got[0] != decoyPath {
		t.Fatalf("--fast: %v; the construction wants the estimate to rank the decoy %s first (did the fingerprint scheme change?)", got, decoyPath)
	}
	if fast.Checked != 0 || fast.Matches[0].Measure != ipc.MeasureEstimated {
		t.Fatalf("--fast checked %d, measure %q; want none, estimated", fast.Checked, fast.Matches[0].Measure)
	}
	res := e.checkedSimilar("--threshold", "10", query)
	if got := paths(res.Matches); len(got) != 2 || got[0] != nearPath {
		t.Fatalf("checked: %v; want the near-copy %s first", got, nearPath)
	}
	if res.Checked != 2 {
		t.Errorf("checked %d candidates, want 2", res.Checked)
	}
	for _, m := range res.Matches {
		c := map[string][]byte{nearPath: near, decoyPath: decoy}[m.Path]
		if m.Measure != ipc.MeasureExact {
			t.Errorf("%s: measure %q, want exact", m.Path, m.Measure)
		}
		if want := truth(t, q, c); m.Containment != float64(int(want*100+0.5))/100 {
			t.Errorf("%s: containment %v, exact %.4f", m.Path, m.Containment, want)
		}
		if m.SharedBytes == nil || *m.SharedBytes <= 0 {
			t.Errorf("%s: shared_bytes %v, want a count", m.Path, m.SharedBytes)
		}
	}
	t.Logf("estimate: decoy %.1f%%, near %.1f%%; exact: near %.1f%%, decoy %.1f%%",
		fast.Matches[0].Containment, fast.Matches[1].Containment, res.Matches[0].Containment, res.Matches[1].Containment)
}

// TestCheckTiesByResemblanceThenPath: candidates that all contain the
// query are ordered by resemblance, then by the path components they share
// with the query's path.
func TestCheckTiesByResemblanceThenPath(t *testing.T) {
	e := newEnv(t)
	q := words(811, 8000)
	small, large := words(812, 1000), words(813, 4000)
	query := e.write("near/q.txt", q) // indexed: not listed as its own match
	nearB := e.write("near/b.txt", append(bytes.Clone(q), small...))
	farB := e.write("aaa/b.txt", append(bytes.Clone(q), small...))
	farA := e.write("aaa/a.txt", append(bytes.Clone(q), large...))
	e.start()
	res := e.checkedSimilar(query)
	want := []string{nearB, farB, farA}
	if got := paths(res.Matches); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("order %v, want %v (ties by resemblance, then nearness of path)", got, want)
	}
	for _, m := range res.Matches {
		if m.Containment != 100 || m.Measure != ipc.MeasureExact {
			t.Errorf("%s: containment %v, measure %q; want 100, exact", m.Path, m.Containment, m.Measure)
		}
	}
	if res.Matches[0].Resemblance != res.Matches[1].Resemblance || res.Matches[1].Resemblance <= res.Matches[2].Resemblance {
		t.Errorf("resemblances %v, %v, %v", res.Matches[0].Resemblance, res.Matches[1].Resemblance, res.Matches[2].Resemblance)
	}
}

// TestCheckChangedAndVanished: a candidate changed since it was indexed is
// measured on its current bytes and flagged; one deleted is left out and
// counted, by similar and by basis.
func TestCheckChangedAndVanished(t *testing.T) {
	e := newEnv(t)
	q := words(821, 12000)
	changed := e.write("changed.txt", edit(1, q, 0.05))
	gone := e.write("gone.txt", edit(2, q, 0.05))
	kept := e.write("kept.txt", edit(3, q, 0.02))
	query := filepath.Join(e.dir, "query.txt")
	must(t, os.WriteFile(query, q, 0o644))
	// Changes wait an hour before they are applied: the index keeps the
	// old records while the files change under it.
	e.start("--settle-delay", "1h", "--max-settle-delay", "1h")
	before := e.checkedSimilar(query)
	if len(before.Matches) != 3 {
		t.Fatalf("before the changes: %v", paths(before.Matches))
	}
	now := append(q[:6000:6000], words(4, 3000)...) // half the query, and other text
	must(t, os.WriteFile(changed, now, 0o644))
	must(t, os.Remove(gone))

	c := ipc.NewClient(e.socket)
	ctx := context.Background()
	info, err := c.Info(ctx)
	must(t, err)
	sk, d, err := ipc.QueryFile(query, info.Params, ipc.ReadOptions{Compressed: true})
	must(t, err)
	req := ipc.NewSimilarRequest(query, sk)
	req.Attach(d)
	resp, err := c.Similar(ctx, req)
	must(t, err)
	if resp.Dropped != 1 || resp.Checked != 2 {
		t.Errorf("checked %d, dropped %d; want 2, 1", resp.Checked, resp.Dropped)
	}
	got := map[string]ipc.Match{}
	for _, m := range resp.Matches {
		got[m.Path] = m
	}
	if _, ok := got[gone]; ok {
		t.Errorf("the deleted %s is listed", gone)
	}
	m, ok := got[changed]
	switch {
	case !ok:
		t.Fatalf("the changed %s is not listed: %v", changed, paths(resp.Matches))
	case !m.Changed || m.Size != int64(len(now)) || m.Measure != ipc.MeasureExact:
		t.Errorf("changed file: %+v; want changed, size %d, exact", m, len(now))
	case m.Containment != float64(int(truth(t, q, now)*100+0.5))/100:
		t.Errorf("changed file: containment %v, exact on its current bytes %.2f", m.Containment, truth(t, q, now))
	}
	if m := got[kept]; m.Changed || m.Measure != ipc.MeasureExact {
		t.Errorf("unchanged file: %+v", m)
	}

	br, err := c.Basis(ctx, ipc.NewBasisRequest(query, sk, d))
	must(t, err)
	for _, bc := range br.Candidates {
		if bc.Path == gone {
			t.Errorf("basis lists the deleted %s", gone)
		}
		if bc.Path == changed && (!bc.Changed || bc.Size != int64(len(now))) {
			t.Errorf("basis: changed file %+v", bc)
		}
	}
	if br.Basis == nil || br.Basis.Path != kept {
		t.Errorf("basis %+v, want %s (the changed one kept only half)", br.Basis, kept)
	}
}

// basisJSON is one line of sifctl basis --json.
type basisJSON struct {
	Query           string               `json:"query"`
	Size            int64                `json:"size"`
	Basis           *ipc.BasisCandidate  `json:"basis"`
	CompressedBytes int64                `json:"compressed_bytes"`
	Candidates      []ipc.BasisCandidate `json:"candidates"`
}

// TestBasis: sifctl basis names the file with the smallest delta, says
// "nothing to send" for an identical one, "send it compressed" when no
// delta beats compression, and exits 0, 0, 1; an error is 2.
func TestBasis(t *testing.T) {
	e := newEnv(t)
	base := words(831, 40000)
	e.write("old/v1.txt", edit(5, base, 0.3))
	best := e.write("moved/renamed.txt", edit(6, base, 0.02))
	ident := e.write("copy/same.txt", base[:20000])
	e.write("other.txt", words(832, 30000))
	qdir := filepath.Join(e.dir, "q")
	must(t, os.Mkdir(qdir, 0o755))
	query := filepath.Join(qdir, "v2.txt")
	must(t, os.WriteFile(query, base, 0o644))
	same := filepath.Join(qdir, "same.txt")
	must(t, os.WriteFile(same, base[:20000], 0o644))
	fresh := filepath.Join(qdir, "fresh.txt")
	must(t, os.WriteFile(fresh, words(833, 20000), 0o644))
	e.start()

	basis := func(file string) (result, basisJSON) {
		r := e.sifctl("basis", "--json", file)
		var b basisJSON
		if r.code != 2 {
			if err := json.Unmarshal([]byte(r.stdout), &b); err != nil {
				t.Fatalf("basis --json %s: %v\n%s", file, err, r.stdout)
			}
		}
		return r, b
	}
	r, b := basis(query)
	if r.code != 0 || b.Basis == nil || b.Basis.Path != best || b.Basis.Method != ipc.BasisDelta {
		t.Fatalf("basis of v2: exit %d, %s; want %s by delta", r.code, r.stdout, best)
	}
	if b.Size != int64(len(base)) || b.Basis.EstimatedBytes >= b.CompressedBytes || len(b.Candidates) < 2 {
		t.Errorf("basis of v2: %+v", b)
	}
	for i := 1; i < len(b.Candidates); i++ {
		if b.Candidates[i].EstimatedBytes < b.Candidates[i-1].EstimatedBytes {
			t.Errorf("candidates not cheapest first: %+v", b.Candidates)
		}
	}
	r, b = basis(same)
	if r.code != 0 || b.Basis == nil || b.Basis.Path != ident || !b.Basis.Identical || b.Basis.EstimatedBytes != 0 {
		t.Errorf("basis of an identical file: exit %d, %s", r.code, r.stdout)
	}
	r, b = basis(fresh)
	if r.code != 1 || b.Basis != nil || b.CompressedBytes <= 0 || b.CompressedBytes >= int64(20000) {
		t.Errorf("basis of a new file: exit %d, %s; want exit 1, basis null, its compressed size", r.code, r.stdout)
	}
	if r := e.sifctl("basis", fresh); r.code != 1 || !strings.Contains(r.stdout, "no basis: send it compressed") {
		t.Errorf("basis, text: exit %d: %s", r.code, r.stdout)
	}
	if r := e.sifctl("basis", same); r.code != 0 || !strings.Contains(r.stdout, "identical to "+ident+": nothing to send") {
		t.Errorf("basis, text: exit %d: %s", r.code, r.stdout)
	}
	if r := e.sifctl("basis", filepath.Join(qdir, "missing.txt")); r.code != 2 || !strings.Contains(r.stderr, "missing.txt") {
		t.Errorf("basis of a missing file: exit %d: %s", r.code, r.stderr)
	}
}
