package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestCompareRuns checks the agreement of two runs on answers worked out
// by hand.
func TestCompareRuns(t *testing.T) {
	queries := []string{"q0", "q1", "q2"}
	// At 50 %: a lists (0,0) 90, (0,1) 80, (1,3) 85, (2,4) 55; b lists
	// (0,0) 88, (0,1) 79.5, (0,2) 52, (1,3) 85. Both: 3 of 5, with
	// containments 2, 0.5 and 0 points apart. q0 has a pair only b
	// lists, q2 one only a lists.
	// At 80 %: a lists (0,0), (0,1), (1,3); b (0,0), (1,3). Both: 2 of 3,
	// 2 and 0 points apart; q0 has a pair only a lists.
	a := &toolRun{Name: "a", Answers: [][]answer{
		{{File: 0, Cont: 90}, {File: 1, Cont: 80}, {File: 2, Cont: 40}},
		{{File: 3, Cont: 85}},
		{{File: 4, Cont: 55}},
	}, Template: map[int]bool{2: true}, Skipped: map[int]bool{2: true}}
	b := &toolRun{Name: "b", Answers: [][]answer{
		{{File: 0, Cont: 88}, {File: 1, Cont: 79.5}, {File: 2, Cont: 52}},
		{{File: 3, Cont: 85}},
		nil,
	}, Template: map[int]bool{0: true}, Skipped: map[int]bool{0: true, 1: false}, Capped: map[int]bool{2: true}}
	ag := compareRuns(a, b, queries)
	if ag.A != "a" || ag.B != "b" || len(ag.Cuts) != 2 {
		t.Fatalf("compared %s and %s at %d cuts, want a and b at 2", ag.A, ag.B, len(ag.Cuts))
	}
	want := []cutAgreement{
		{Cut: 50, PairsA: 4, PairsB: 4, Both: 3, Jaccard: 0.6, DiffMedian: 0.5, DiffP90: 0.5, DiffMax: 2,
			Differ: 2, TemplateA: 1, TemplateB: 1, SkippedA: 1, SkippedB: 1, CappedB: 1, Examples: []differingQuery{
				{Query: "q0", OnlyB: 1, TemplateB: true, SkippedB: true},
				{Query: "q2", OnlyA: 1, TemplateA: true, SkippedA: true, CappedB: true},
			}},
		{Cut: 80, PairsA: 3, PairsB: 2, Both: 2, Jaccard: 2.0 / 3, DiffMedian: 0, DiffP90: 0, DiffMax: 2,
			Differ: 1, TemplateB: 1, SkippedB: 1, Examples: []differingQuery{{Query: "q0", OnlyA: 1, TemplateB: true, SkippedB: true}}},
	}
	for i, w := range want {
		if got := ag.Cuts[i]; !reflect.DeepEqual(got, w) {
			t.Errorf("at %g %%:\n got %+v\nwant %+v", w.Cut, got, w)
		}
	}
	// Neither lists anything: they agree.
	if c := compareAt(a, b, queries, 95); c.Jaccard != 1 || c.Differ != 0 || c.DiffMax != 0 {
		t.Errorf("at 95 %%, where neither lists a pair: %+v, want Jaccard 1 and nothing differing", c)
	}
}

// TestWithFleetTable checks that the configuration --fleet writes keeps
// the file it adds to, even one that ends in a table without a newline.
func TestWithFleetTable(t *testing.T) {
	dir := t.TempDir()
	base := "max_size = 1048576\n[scheme]\nscheme = \"chunks\"\navg_chunk = 512"
	urlFile, root := filepath.Join(dir, "fleet.url"), filepath.Join(dir, "tree")
	text, err := withFleetTable([]byte(base), urlFile, root)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sifd.toml")
	if err := os.WriteFile(p, text, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(p)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if f.MaxFileSize != 1048576 || f.Params.Scheme != fingerprint.Chunks || f.Params.AvgChunk != 512 {
		t.Errorf("the base file's settings are lost: max_size %d, scheme %v, avg_chunk %d\n%s", f.MaxFileSize, f.Params.Scheme, f.Params.AvgChunk, text)
	}
	if f.Fleet == nil || f.Fleet.URLFile != urlFile || f.Fleet.Host != accFleetHost || !reflect.DeepEqual(f.Fleet.Publish, []string{root}) {
		t.Errorf("[fleet] read as %+v, want url_file %s, host %s, publish [%s]\n%s", f.Fleet, urlFile, accFleetHost, root, text)
	}
}
