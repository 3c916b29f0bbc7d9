package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/server"
)

// TestCompareSimiHashDistance: compare works out the SimiHash distance
// of the two files (the query sketches skip SimiHash; compare must not):
// zero for identical files, more for files that differ.
func TestCompareSimiHashDistance(t *testing.T) {
	dir := t.TempDir()
	a, b := randomText(1, 30000), randomText(2, 30000)
	for name, data := range map[string][]byte{"a": a, "a2": a, "b": append(a[:15000:15000], b[:15000]...)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	distance := func(x, y string) int {
		t.Helper()
		r := sifctl(t, "compare", filepath.Join(dir, x), filepath.Join(dir, y))
		m := regexp.MustCompile(`sum-table distance +(\d+) \(`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("compare %s %s: exit %d, no distance in %q (stderr %q)", x, y, r.code, r.stdout, r.stderr)
		}
		d, _ := strconv.Atoi(m[1])
		return d
	}
	if d := distance("a", "a2"); d != 0 {
		t.Errorf("identical files: distance %d, want 0", d)
	}
	if d := distance("a", "b"); d == 0 {
		t.Error("different files: distance 0: SimiHash was not computed")
	}
}

// oneMatchDaemon answers every similar query with one match, the file at
// path, with an estimate far from the truth, and lets the real server
// check it against the file's bytes (server.ContentOpener), as sifd does.
type oneMatchDaemon struct {
	fakeDaemon
	path string
}

func (d *oneMatchDaemon) meta() (index.FileMeta, error) {
	st, err := os.Stat(d.path)
	if err != nil {
		return index.FileMeta{}, err
	}
	return index.FileMeta{Path: d.path, Size: st.Size(), MtimeNs: st.ModTime().UnixNano()}, nil
}

func (d *oneMatchDaemon) Similar(context.Context, index.Query, index.QueryOptions) (*index.Result, error) {
	m, err := d.meta()
	if err != nil {
		return nil, err
	}
	rec := index.FileRecord{ID: 1, Content: 1, FileMeta: m}
	return &index.Result{QueryFeatures: 100, QueryWeight: 100,
		Matches: []index.Match{{FileRecord: rec, SharedWeight: 50, Containment: 0.5, ReverseContainment: 0.5, Resemblance: 0.33, SharedBytes: -1}}}, nil
}

func (d *oneMatchDaemon) OpenIndexed(path string) (io.ReadCloser, index.FileMeta, error) {
	m, err := d.meta()
	if err != nil || path != d.path {
		return nil, index.FileMeta{}, fmt.Errorf("%s: %w", path, server.ErrGone)
	}
	f, err := os.Open(path)
	return f, m, err
}

// startChecking serves d, checking its matches, until the test ends and
// returns the socket.
func startChecking(t *testing.T, d *oneMatchDaemon) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := server.Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- server.New(server.Backend{Query: d, Control: d, Content: d}, server.Options{Version: "test"}).Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return sock
}

// compareJSON runs compare --json on a and b and decodes its answer.
func compareJSON(t *testing.T, a, b string) compareLine {
	t.Helper()
	r := sifctl(t, "--socket", filepath.Join(t.TempDir(), "none.sock"), "--json", "compare", a, b)
	var c compareLine
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil || r.code == exitError {
		t.Fatalf("compare %s %s: exit %d, %v, stdout %q, stderr %q", a, b, r.code, err, r.stdout, r.stderr)
	}
	return c
}

// editedPair writes a file b of Go-like text and a, an edited copy of b
// that also repeats 600 bytes of it, and returns their paths.
func editedPair(t *testing.T, dir string) (a, b string) {
	t.Helper()
	var src []byte
	for i := range 300 {
		src = fmt.Appendf(src, "func f%d(x int) int { return x*%d + %d } // line %d\n", i, i*7, i%13, i)
	}
	ed := slices.Concat(src[:6000], src[6000:6600], src[6000:])
	ed = bytes.Replace(ed, []byte("return x*14"), []byte("return y*14"), 1)
	a, b = filepath.Join(dir, "a.go"), filepath.Join(dir, "b.go")
	for p, data := range map[string][]byte{a: ed, b: src} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

// TestCompareAgreesWithSimilar: compare's checked containments are the
// ones sifctl similar reports for the same pair, each way, after the real
// server's check; its estimates are the fingerprints', which differ.
func TestCompareAgreesWithSimilar(t *testing.T) {
	dir := t.TempDir()
	a, b := editedPair(t, dir)
	c := compareJSON(t, a, b)
	if c.Checked == nil || c.Checked.Measure != ipc.MeasureExact {
		t.Fatalf("compare: checked %+v, want an exact check", c.Checked)
	}
	similar := func(query, match string) ipc.Match {
		t.Helper()
		sock := startChecking(t, &oneMatchDaemon{path: match})
		r := sifctl(t, "--socket", sock, "--json", "similar", "--threshold", "0", query)
		var l similarLine
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || len(l.Matches) != 1 {
			t.Fatalf("similar %s: exit %d, %v, stdout %q, stderr %q", query, r.code, err, r.stdout, r.stderr)
		}
		if m := l.Matches[0]; m.Measure != ipc.MeasureExact {
			t.Fatalf("similar %s: match %+v not checked", query, m)
		}
		return l.Matches[0]
	}
	ab, ba := similar(a, b), similar(b, a)
	if c.Checked.Containment != ab.Containment || c.Checked.ReverseContainment != ba.Containment || c.Checked.Resemblance != ab.Resemblance {
		t.Errorf("compare a b: checked %+v; similar a lists b at %v%% (resemblance %v%%), similar b lists a at %v%%",
			c.Checked, ab.Containment, ab.Resemblance, ba.Containment)
	}
	if c.Checked.Containment == 100 || c.Checked.Containment == c.Schemes[0].AInB {
		t.Errorf("containment of a in b: checked %v%%, estimated %v%%: the pair does not tell the check from the estimate", c.Checked.Containment, c.Schemes[0].AInB)
	}
	r := sifctl(t, "--socket", filepath.Join(dir, "none.sock"), "compare", a, b)
	for _, want := range []string{
		fmt.Sprintf("containment of A in B %6.2f%%   (similar A lists B at this)", ab.Containment),
		fmt.Sprintf("containment of B in A %6.2f%%   (similar B lists A at this)", ba.Containment),
		"estimated from", "(as similar --fast reports it)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("compare: no %q in\n%s", want, r.stdout)
		}
	}
}

// TestCompareSharedBytesWithinSizes: A repeats 600 bytes it shares with
// B, so the bytes of A lying in a window of B (what the check counts, for
// the query) are more than B holds; compare's shared bytes are the smaller
// of the counts made from each side, at most either size.
func TestCompareSharedBytesWithinSizes(t *testing.T) {
	dir := t.TempDir()
	a, b := editedPair(t, dir)
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	q := exact.NewQuery(da)
	m, err := q.MeasureBytes(db)
	q.Release()
	if err != nil || m.SharedBytes <= int64(len(db)) {
		t.Fatalf("A's bytes in a window of B: %d of B's %d (%v): the pair does not repeat shared bytes", m.SharedBytes, len(db), err)
	}
	c := compareJSON(t, a, b)
	if c.Checked == nil || c.Checked.SharedBytes > min(c.SizeA, c.SizeB) || c.Checked.SharedBytes < int64(len(db))*9/10 {
		t.Errorf("shared bytes %+v of files of %d and %d bytes: want at most the smaller, nearly all of it", c.Checked, c.SizeA, c.SizeB)
	}
	for _, s := range c.Schemes {
		if s.SharedBytes != nil && *s.SharedBytes > min(c.SizeA, c.SizeB) {
			t.Errorf("%s: shared bytes %d of files of %d and %d bytes", s.Params, *s.SharedBytes, c.SizeA, c.SizeB)
		}
	}
}

// TestCompareSimiHashRelative: the SimiHash line gives both distances, in
// percent of A's size, each beside its tolerance.
func TestCompareSimiHashRelative(t *testing.T) {
	dir := t.TempDir()
	a, b := editedPair(t, dir)
	c := compareJSON(t, a, b)
	h := c.SimiHash
	if h.KeyDistance == 0 || h.SumDistance == 0 || h.SumDistance != c.SumDistance {
		t.Fatalf("simihash %+v (simihash_distance %d): want both distances above 0, the sum distance twice", h, c.SumDistance)
	}
	if d := uint64(max(h.KeyA, h.KeyB) - min(h.KeyA, h.KeyB)); d != h.KeyDistance {
		t.Errorf("key distance %d of keys %d and %d", h.KeyDistance, h.KeyA, h.KeyB)
	}
	if want := pct(float64(h.SumDistance) / float64(c.SizeA)); h.SumPct != want {
		t.Errorf("sum-table distance %d of %d bytes: %v%%, want %v%%", h.SumDistance, c.SizeA, h.SumPct, want)
	}
	r := sifctl(t, "--socket", filepath.Join(dir, "none.sock"), "compare", a, b)
	want := fmt.Sprintf("sum-table distance  %d (%.2f%% of A's size), tolerance %d (2%% of A's size)", h.SumDistance, h.SumPct, h.SumTolerance)
	if !strings.Contains(r.stdout, want) {
		t.Errorf("compare: no %q in\n%s", want, r.stdout)
	}
}

// TestCompareSimiHashVerdict: compare says whether SimiFind calls the
// pair similar under the default tolerances, taken from A's size: a copy
// with one word changed is; a different random text of the same size is
// not, for its sum-table distance (its key is close: random texts have
// nearly equal tag counts, the paper's law of large numbers); the
// tolerances are 2 % of A's size.
func TestCompareSimiHashVerdict(t *testing.T) {
	dir := t.TempDir()
	a := randomText(1, 20000)
	edited := slices.Clone(a)
	copy(edited[10000:], "sif")
	files := map[string][]byte{"a": a, "edited": edited, "other": randomText(2, 20000)}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := fingerprint.DefaultTolerances()
	for _, tc := range []struct {
		b       string
		similar bool
		line    string
	}{
		{"a", true, "similar: 'sifctl similar --by simihash A' lists B"},
		{"edited", true, "similar: 'sifctl similar --by simihash A' lists B"},
		{"other", false, "not similar by SimiHash: the sum-table distance is over its tolerance"},
	} {
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, tc.b)
		h := compareJSON(t, pa, pb).SimiHash
		if h.Tolerances != d || h.KeyTolerance != uint64(d.Key*20000) || h.SumTolerance != uint64(d.Sum*20000) || !h.SizesClose {
			t.Errorf("a, %s: tolerances %+v, key %d, sum %d, sizes close %v: want %+v, 2 %% of 20000 bytes each, close", tc.b, h.Tolerances, h.KeyTolerance, h.SumTolerance, h.SizesClose, d)
		}
		within := h.KeyDistance <= h.KeyTolerance && h.SumDistance <= h.SumTolerance
		if h.Similar != tc.similar || within != tc.similar {
			t.Errorf("a, %s: similar %v with key distance %d and sum distance %d (tolerances %d, %d), want %v", tc.b, h.Similar, h.KeyDistance, h.SumDistance, h.KeyTolerance, h.SumTolerance, tc.similar)
		}
		if tc.b == "edited" && h.SumDistance == 0 {
			t.Errorf("a, edited: sum distance 0: the edit changed no tag count")
		}
		r := sifctl(t, "--socket", filepath.Join(dir, "none.sock"), "compare", pa, pb)
		if !strings.Contains(r.stdout, tc.line) {
			t.Errorf("compare a %s: no %q in\n%s", tc.b, tc.line, r.stdout)
		}
	}
}

// randomText returns n bytes of pseudo-random lower-case words from seed.
func randomText(seed uint32, n int) []byte {
	b := make([]byte, 0, n)
	for x := seed; len(b) < n; {
		x = x*1664525 + 1013904223
		b = append(b, 'a'+byte(x>>24)%26)
		if x>>20&7 == 0 {
			b = append(b, ' ')
		}
	}
	return b
}
