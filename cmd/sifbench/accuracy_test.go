package main

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) map[string]string {
	t.Helper()
	paths := map[string]string{}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	return paths
}

// TestBruteTruth checks the window truth on files whose windows are known:
// random bytes have no repeated 32-byte window, so a file of n bytes has
// n-31 of them.
func TestBruteTruth(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a := randomBytes(r, 4000)
	b := randomBytes(r, 3000)
	dir := t.TempDir()
	p := writeFiles(t, dir, map[string][]byte{
		"ix/a": a, "ix/b": b, "ix/tiny": a[:31],
		"ix/ab":  append(append([]byte(nil), a[:1000]...), b[:1000]...),
		"q/half": a[:2000], "q/new": randomBytes(r, 500), "q/short": a[:20],
	})
	files := []string{p["ix/a"], p["ix/b"], p["ix/tiny"], p["ix/ab"]}
	queries := []string{p["q/half"], p["q/new"], p["q/short"]}
	tr, err := bruteTruth(queries, files)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.QWindows; got[0] != 1969 || got[1] != 469 || got[2] != 0 {
		t.Errorf("query windows %v, want [1969 469 0]", got)
	}
	if got := tr.FWindows; got[0] != 3969 || got[1] != 2969 || got[2] != 0 || got[3] != 1969 {
		t.Errorf("file windows %v, want [3969 2969 0 1969]", got)
	}
	if c := tr.Containment(0, 0); c != 1 {
		t.Errorf("containment of a's first half in a = %v, want 1", c)
	}
	if r, want := tr.Resemblance(0, 0), 1969.0/3969; math.Abs(r-want) > 1e-12 {
		t.Errorf("resemblance of a's first half and a = %v, want %v", r, want)
	}
	// ab holds a[:1000]: 969 windows of the query.
	if got := tr.Inter[0][3]; got != 969 {
		t.Errorf("|W(half) ∩ W(ab)| = %d, want 969", got)
	}
	if _, ok := tr.Inter[0][1]; ok {
		t.Errorf("a's half shares windows with b: %v", tr.Inter[0])
	}
	if len(tr.Inter[1]) != 0 || tr.MaxContainment(1) != 0 {
		t.Errorf("a new random file matches %v", tr.Inter[1])
	}
	if tr.MaxInter[0] != 1969 || tr.MaxContainment(0) != 1 {
		t.Errorf("max intersection %d, want 1969", tr.MaxInter[0])
	}
}

// TestMeasure checks best F1 and the first-answer figure on a truth and
// answers worked out by hand.
func TestMeasure(t *testing.T) {
	// Query 0 has 100 windows: file 0 holds all of them (and 100 more),
	// file 1 holds 60, file 2 holds 10. Query 1 has 100 windows, 90 in
	// file 2. Query 2 matches nothing.
	tr := &truth{
		QWindows: []int32{100, 100, 100},
		FWindows: []int32{200, 60, 100},
		Inter:    []map[int32]int32{{0: 100, 1: 60, 2: 10}, {2: 90}, {}},
		MaxInter: []int32{100, 90, 0},
	}
	// containment >= 50 %: (0,0), (0,1), (1,2). >= 80 %: (0,0), (1,2).
	// resemblance >= 50 %: (0,0) 100/200, (0,1) 60/100, (1,2) 90/110.
	// resemblance >= 95 %: none.
	good := &toolRun{Name: "good", Answers: [][]answer{
		{{File: 0, Cont: 100, Res: 50}, {File: 1, Cont: 60, Res: 60}, {File: 2, Cont: 10, Res: 5}},
		{{File: 2, Cont: 90, Res: 82}},
		nil,
	}}
	// bad ranks file 1 first for query 0, misses query 1, and answers
	// query 2 with file 0 at a high score.
	bad := &toolRun{Name: "bad", Answers: [][]answer{
		{{File: 1, Cont: 70, Res: 70}, {File: 0, Cont: 40, Res: 40}},
		nil,
		{{File: 0, Cont: 80, Res: 80}},
	}}
	bm := measure("all", []int{0, 1, 2}, tr, []*toolRun{good, bad})
	if want := []int{3, 2, 3, 0}; !equalInts(bm.Positives, want) {
		t.Fatalf("positives %v, want %v", bm.Positives, want)
	}
	if bm.WithMatch != 2 {
		t.Errorf("queries with a match %d, want 2", bm.WithMatch)
	}
	g, b := bm.Tools[0], bm.Tools[1]
	for ri := range relations {
		if want := float64(min(1, bm.Positives[ri])); g.F1[ri].F1 != want {
			t.Errorf("good tool, %s: best F1 %v, want %v", relations[ri].Name, g.F1[ri], want)
		}
	}
	if g.F1[0].Threshold != 60 || g.F1[1].Threshold != 90 {
		t.Errorf("good tool thresholds %v %v, want 60 and 90", g.F1[0].Threshold, g.F1[1].Threshold)
	}
	// bad, containment >= 50 %: scores 80 (neg), 70 (pos), 40 (pos) of 3
	// positives: at 40, tp 2 fp 1 fn 1, F1 = 4/6.
	if got := b.F1[0].F1; math.Abs(got-4.0/6) > 1e-12 {
		t.Errorf("bad tool, containment >= 50%%: best F1 %v, want %v", got, 4.0/6)
	}
	// containment >= 80 %: only (0,0) at 40 is positive: tp 1 fp 2 fn 1, F1 = 2/5.
	if got := b.F1[1].F1; math.Abs(got-0.4) > 1e-12 {
		t.Errorf("bad tool, containment >= 80%%: best F1 %v, want 0.4", got)
	}
	if g.FirstRight != 1 || b.FirstRight != 0 {
		t.Errorf("first right: good %v bad %v, want 1 and 0", g.FirstRight, b.FirstRight)
	}
	if g.Nothing != 1 || b.Nothing != 1 {
		t.Errorf("answered nothing: good %d bad %d, want 1 and 1", g.Nothing, b.Nothing)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestModifications checks the shapes of modified queries: an excerpt is
// contained in its source, a splice contains its source, and an edit
// changes about the share asked for.
func TestModifications(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src := randomText(r, 20000)
	for range 20 {
		e := excerpt(r, src, 0.5)
		if !bytes.Contains(src, e) || len(e) < 9000 || len(e) > 11000 {
			t.Fatalf("excerpt of %d bytes is not a half of its source", len(e))
		}
		o := randomText(r, 5000)
		s := splice(r, src, o, 0.1)
		if len(s) < len(src)+1500 || len(s) > len(src)+2500 {
			t.Fatalf("splice of 10%% made %d bytes of %d", len(s), len(src))
		}
		e = editLines(r, src, 0.3)
		if bytes.Equal(e, src) {
			t.Fatal("edit changed nothing")
		}
	}
	if bucketOf(255) != -1 || bucketOf(256) != 0 || bucketOf(4096) != 1 || bucketOf(1<<20) != 2 || bucketOf(1<<20+1) != -1 {
		t.Error("size buckets do not cut at 256 B, 4 KiB and 1 MiB")
	}
}

// TestPeers runs ssdeep and TLSH through runSsdeep and runTLSH on a small
// tree: each finds a file's near-copy, and TLSH cannot hash a short query.
func TestPeers(t *testing.T) {
	if err := checkPeers(); err != nil {
		t.Skipf("peers not installed: %v", err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	a, b := randomText(r, 8000), randomText(r, 8000)
	near := append(append([]byte(nil), a[:7000]...), randomText(r, 500)...)
	dir := t.TempDir()
	p := writeFiles(t, dir, map[string][]byte{"ix/a": a, "ix/b": b, "q/near": near, "q/short": []byte("too short for tlsh\n")})
	fileID := map[string]int32{p["ix/a"]: 0, p["ix/b"]: 1}
	queries := []string{p["q/near"], p["q/short"]}
	ctx := context.Background()
	ss, err := runSsdeep(ctx, dir, filepath.Join(dir, "ix"), fileID, queries)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.Answers[0]) == 0 || ss.Answers[0][0].File != 0 || ss.Answers[0][0].Cont < 50 {
		t.Errorf("ssdeep answers for a near-copy of a: %v", ss.Answers[0])
	}
	tl, err := runTLSH(ctx, dir, filepath.Join(dir, "ix"), filepath.Join(dir, "q"), fileID, queries)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Answers[0]) == 0 || tl.Answers[0][0].File != 0 || -tl.Answers[0][0].Cont > 100 {
		t.Errorf("tlsh answers for a near-copy of a: %v", tl.Answers[0])
	}
	if !tl.Unhashed[1] || len(tl.Answers[1]) != 0 {
		t.Errorf("tlsh hashed a %d-byte query: %v", 19, tl.Answers[1])
	}
}
