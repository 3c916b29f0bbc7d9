package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writeQueryDetails lists every file of true containment ≥ 80 % and of
// resemblance ≥ 50 %, in the order of the indexed files, with each tool's own measure of it
// and nothing for a tool that did not answer it.
func TestWriteQueryDetails(t *testing.T) {
	files := []string{"/t/c", "/t/a", "/t/b", "/t/d"}
	// Query 0 has 10 windows; file 3 (/t/d) has 40, so it holds 9 of
	// the query's windows (90 %) but resembles it only 9/41.
	tr := &truth{
		QWindows: []int32{10},
		FWindows: []int32{10, 12, 20, 40},
		Inter:    []map[int32]int32{{0: 10, 1: 9, 2: 6, 3: 9}},
		MaxInter: []int32{10},
	}
	runs := []*toolRun{
		{Name: "sif", Answers: [][]answer{{{File: 0, Cont: 100, Res: 100}, {File: 3, Cont: 85, Res: 20}}}},
		{Name: "peer", Answers: [][]answer{{{File: 1, Cont: 70, Res: 60}}}},
	}
	p := filepath.Join(t.TempDir(), "queries.json")
	if err := writeQueryDetails(p, []accQuery{{Path: "/q"}}, files, tr, runs); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		t.Fatal("no line written")
	}
	var d queryDetail
	if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	paths := func(ps []similarPair) (out []string) {
		for _, p := range ps {
			out = append(out, p.Path)
		}
		return out
	}
	// Containment ≥ 80 %: c (100 %), a (90 %), d (90 %), in file order.
	if got, want := paths(d.Contained), []string{"/t/c", "/t/a", "/t/d"}; !slices.Equal(got, want) {
		t.Errorf("contained_80 %v, want %v", got, want)
	}
	// Resemblance ≥ 50 %: c (1), a (9/13), b (6/24 = 0.25, no), d (9/41, no).
	if got, want := paths(d.Similar), []string{"/t/c", "/t/a"}; !slices.Equal(got, want) {
		t.Errorf("similar_50 %v, want %v", got, want)
	}
	for _, sp := range d.Contained {
		switch sp.Path {
		case "/t/d":
			if sp.Tools["sif"] != 85 || len(sp.Tools) != 1 {
				t.Errorf("/t/d in contained_80: tools %v, want sif's containment 85 alone", sp.Tools)
			}
			if sp.Truth != 0.9 {
				t.Errorf("/t/d truth %v, want 0.9", sp.Truth)
			}
		case "/t/a":
			if sp.Tools["peer"] != 70 || len(sp.Tools) != 1 {
				t.Errorf("/t/a in contained_80: tools %v, want peer's containment 70 alone", sp.Tools)
			}
		}
	}
	for _, sp := range d.Similar {
		if sp.Path == "/t/a" && sp.Tools["peer"] != 60 {
			t.Errorf("/t/a in similar_50: tools %v, want peer's resemblance 60", sp.Tools)
		}
	}
	if d.Positives != 4 {
		t.Errorf("positives_50 %d, want 4", d.Positives)
	}
}
