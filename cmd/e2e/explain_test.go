//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// explainJSON is the "explain" object of sifctl's --explain --json.
type explainJSON struct {
	A, B struct {
		Path    string `json:"path"`
		Size    int64  `json:"size"`
		Lines   int    `json:"lines"`
		Changed bool   `json:"changed_since_indexed"`
	}
	Unit string `json:"unit"`
	Runs []struct {
		ALines      []int   `json:"a_lines"`
		BLines      []int   `json:"b_lines"`
		ABytes      []int64 `json:"a_bytes"`
		BBytes      []int64 `json:"b_bytes"`
		Boilerplate bool    `json:"boilerplate"`
	} `json:"runs"`
	AShare            float64 `json:"a_share"`
	BShare            float64 `json:"b_share"`
	ABoilerplateShare float64 `json:"a_boilerplate_share"`
	Judged            bool    `json:"boilerplate_judged"`
	Note              string  `json:"note"`
}

// runsOf renders the runs as "A first-last = B first-last" (lines) or
// "A off+len = B off+len" (bytes), boilerplate marked with "~".
func (x *explainJSON) runsOf() string {
	var s []string
	for _, r := range x.Runs {
		mark := "="
		if r.Boilerplate {
			mark = "~"
		}
		if x.Unit == "lines" {
			s = append(s, fmt.Sprintf("%d-%d%s%d-%d", r.ALines[0], r.ALines[1], mark, r.BLines[0], r.BLines[1]))
		} else {
			s = append(s, fmt.Sprintf("%d+%d%s%d+%d", r.ABytes[0], r.ABytes[1], mark, r.BBytes[0], r.BBytes[1]))
		}
	}
	return strings.Join(s, " ")
}

// lines makes n lines of word-like text from seed.
func lines(seed uint64, n int) []byte {
	b := bytes.ReplaceAll(words(seed, 60*n), []byte("\n"), []byte(" "))
	var out []byte
	for i := range n {
		out = append(out, bytes.TrimSpace(b[60*i:60*i+59])...)
		out = append(out, '\n')
	}
	return out
}

var licenceText = bytes.Repeat([]byte("// Licensed under the Example License; you may not use this file except in compliance.\n"+
	"// Distributed on an AS IS BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, express or implied.\n"), 8)

// TestExplainSimilar: the real sifd and sifctl explain each match of a
// query on the bytes sifctl reads: moved blocks in exact line ranges, a
// licence header too common to count marked as boilerplate, a match
// changed since it was indexed explained as it is now, and one sifctl
// cannot read said to be so.
func TestExplainSimilar(t *testing.T) {
	e := newEnv(t)
	p1, p2, p3 := lines(1, 40), lines(2, 30), lines(3, 50)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for i := range 4 {
		e.write(fmt.Sprintf("other/h%d.txt", i), cat(licenceText, lines(uint64(10+i), 60)))
	}
	q := e.write("q.txt", cat(licenceText, p1, p2, p3))
	e.write("c.txt", cat(licenceText, p3, p1, p2))
	d := e.write("d.txt", cat(licenceText, p1, p2, p3, lines(4, 5)))
	f := e.write("f.txt", cat(p1, p2, p3, lines(5, 10)))
	e.start("--no-watch") // what changes below stays unseen
	if err := os.WriteFile(d, cat(licenceText, p1, lines(6, 7), p3), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(f, 0o644); err != nil {
		t.Fatal(err)
	}

	// The licence is in 7 files, the rest of q in 4.
	r := e.sifctl("--json", "similar", "--explain", "--fast", "--max-df", "5", q)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var line struct {
		Matches []struct {
			Path         string       `json:"path"`
			Explain      *explainJSON `json:"explain"`
			ExplainError string       `json:"explain_error"`
		} `json:"matches"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &line); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	got := map[string]int{}
	for i, m := range line.Matches {
		got[filepath.Base(m.Path)] = i
	}
	for _, name := range []string{"c.txt", "d.txt", "f.txt"} {
		if _, ok := got[name]; !ok {
			t.Fatalf("%s not listed: %s", name, r.stdout)
		}
	}
	nl := bytes.Count(licenceText, []byte("\n")) // 16
	// c: the licence, boilerplate; p1, p2 and p3 moved.
	x := line.Matches[got["c.txt"]].Explain
	if x == nil {
		t.Fatalf("c.txt: no explanation: %s", r.stdout)
	}
	want := fmt.Sprintf("1-%d~1-%d %d-%d=%d-%d %d-%d=%d-%d", nl, nl,
		nl+1, nl+70, nl+51, nl+120, // p1 and p2, one block in both
		nl+71, nl+120, nl+1, nl+50) // p3, moved to the front
	if got := x.runsOf(); got != want || !x.Judged || x.AShare != 100 || x.BShare != 100 || x.B.Changed {
		t.Errorf("c.txt: runs %s, judged %v, shares %v and %v, changed %v; want %s, judged, 100 and 100, unchanged",
			got, x.Judged, x.AShare, x.BShare, x.B.Changed, want)
	}
	x0 := want
	if x.ABoilerplateShare <= 0 {
		t.Errorf("c.txt: boilerplate share %v", x.ABoilerplateShare)
	}
	// d changed since it was indexed: explained as it is now, p2 gone.
	// The licence and p1 follow each other in both: one run, which
	// counts.
	x = line.Matches[got["d.txt"]].Explain
	st, _ := os.Stat(d)
	if x == nil || !x.B.Changed || x.B.Size != st.Size() {
		t.Fatalf("d.txt: %+v, want it changed and of its current size %d", x, st.Size())
	}
	want = fmt.Sprintf("1-%d=1-%d %d-%d=%d-%d", nl+40, nl+40, nl+71, nl+120, nl+48, nl+97)
	if got := x.runsOf(); got != want {
		t.Errorf("d.txt: runs %s, want %s", got, want)
	}
	// f is now a fifo: sifctl says it cannot read it.
	if m := line.Matches[got["f.txt"]]; m.Explain != nil || !strings.Contains(m.ExplainError, "cannot read it") || !strings.Contains(m.ExplainError, "not a regular file") {
		t.Errorf("f.txt: %+v", m)
	}

	// The query from standard input: the same runs.
	cmd := exec.Command(sifctlBin, "--socket", e.socket, "--json", "similar", "--explain", "--fast", "--max-df", "5", "-")
	cmd.Stdin = bytes.NewReader(cat(licenceText, p1, p2, p3))
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("similar -: %v", err)
	}
	line.Matches = nil
	if err := json.Unmarshal(stdout, &line); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(line.Matches) == 0 {
		t.Fatalf("standard input: no match: %s", stdout)
	}
	for _, m := range line.Matches {
		if filepath.Base(m.Path) == "c.txt" {
			if m.Explain == nil || m.Explain.A.Path != "-" || m.Explain.runsOf() != x0 {
				t.Errorf("standard input: %+v, want runs %s", m.Explain, x0)
			}
		}
	}

	// The text view, piped: plain, the licence row marked "~".
	r = e.sifctl("similar", "--explain", "--fast", "--max-df", "5", q)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, s := range []string{fmt.Sprintf("~ 1-%d ", nl), "changed since indexed: explained as it is now", "f.txt: cannot explain: cannot read it"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("text view lacks %q:\n%s", s, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("colours on a pipe:\n%s", r.stdout)
	}
}

// TestExplainCompare: compare --explain through the real binaries, with
// a daemon to judge the boilerplate and without one, for text with CRLF
// and LF line ends and for binary files.
func TestExplainCompare(t *testing.T) {
	e := newEnv(t)
	p1, p2 := lines(1, 40), lines(2, 30)
	for i := range 4 {
		e.write(fmt.Sprintf("other/h%d.txt", i), append(append([]byte{}, licenceText...), lines(uint64(10+i), 60)...))
	}
	a := e.write("a.txt", bytes.Join([][]byte{licenceText, p1, p2}, nil))
	b := e.write("b.txt", bytes.ReplaceAll(bytes.Join([][]byte{licenceText, p2, lines(7, 3), p1}, nil), []byte("\n"), []byte("\r\n")))
	e.start()

	r := e.sifctl("--json", "compare", "--explain", "--max-df", "3", a, b)
	var out struct {
		Explain *explainJSON `json:"explain"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Explain == nil {
		t.Fatalf("exit %d, %v: %s %s", r.code, err, r.stdout, r.stderr)
	}
	nl := bytes.Count(licenceText, []byte("\n"))
	want := fmt.Sprintf("1-%d~1-%d %d-%d=%d-%d %d-%d=%d-%d", nl, nl, nl+1, nl+40, nl+34, nl+73, nl+41, nl+70, nl+1, nl+30)
	if got := out.Explain.runsOf(); got != want || !out.Explain.Judged {
		t.Errorf("runs %s (judged %v), want %s", got, out.Explain.Judged, want)
	}

	r = e.sifctl("compare", "--explain", "--max-df", "3", a, b)
	if !strings.Contains(r.stdout, fmt.Sprintf("~ 1-%d ", nl)) || !strings.Contains(r.stdout, "shared: 100.00% of A") || strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("text view:\n%s", r.stdout)
	}

	// No daemon: the runs all the same, the boilerplate not judged.
	none := filepath.Join(e.dir, "none.sock")
	r = run(t, sifctlBin, "--socket", none, "--json", "compare", "--explain", a, b)
	out.Explain = nil
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Explain == nil {
		t.Fatalf("exit %d, %v: %s %s", r.code, err, r.stdout, r.stderr)
	}
	want = strings.Replace(want, "~", "=", 1)
	if got := out.Explain.runsOf(); got != want || out.Explain.Judged || !strings.Contains(out.Explain.Note, "no sifd on "+none) {
		t.Errorf("no daemon: runs %s, judged %v, note %q; want %s, not judged", got, out.Explain.Judged, out.Explain.Note, want)
	}

	// Binary files: byte ranges.
	rnd := rand.New(rand.NewPCG(9, 9))
	bin := make([]byte, 9000)
	for i := range bin {
		if i%5 != 0 {
			bin[i] = byte(rnd.Uint32())
		}
	}
	x := e.write("x.bin", bin)
	y := e.write("y.bin", append(append([]byte("HEADER\x00\x01"), bin[4000:]...), bin[:4000]...))
	r = run(t, sifctlBin, "--socket", none, "--json", "compare", "--explain", x, y)
	out.Explain = nil
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Explain == nil {
		t.Fatalf("exit %d, %v: %s %s", r.code, err, r.stdout, r.stderr)
	}
	if got, want := out.Explain.runsOf(), "0+4000=5008+4000 4000+5000=8+5000"; out.Explain.Unit != "bytes" || got != want {
		t.Errorf("binary: unit %s, runs %s; want bytes, %s", out.Explain.Unit, got, want)
	}
}
