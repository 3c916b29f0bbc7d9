package explain

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index/fingerprint"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// text makes n lines of word-like text from seed.
func text(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0xe4))
	var b bytes.Buffer
	for range n {
		for w := range 3 + r.IntN(8) {
			if w > 0 {
				b.WriteByte(' ')
			}
			for range 2 + r.IntN(7) {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// binary makes n bytes of binary content (with NULs) from seed.
func binary(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0xb1))
	b := make([]byte, n)
	for i := range b {
		if r.IntN(4) == 0 {
			continue // NUL
		}
		b[i] = byte(r.Uint32())
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func crlf(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }

const licence = `// Copyright 2024 The Example Authors. All rights reserved.
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.
`

type goldenCase struct {
	name string
	a, b []byte
	// common, when set, are the bytes whose fingerprints the index holds
	// too often to count (the licence).
	common []byte
	color  bool
}

func goldenCases() []goldenCase {
	p, q, r, s := text(1, 12), text(2, 9), text(3, 15), text(4, 7)
	z := text(5, 10)
	bin := binary(6, 6000)
	return []goldenCase{
		// Blocks moved: B holds A's four blocks in another order, one line
		// of r edited.
		{name: "moved", a: cat(p, q, r, s), b: cat(p, s, bytes.Replace(r, r[40:48], []byte("CHANGED!"), 1), q)},
		// A is wholly contained in a larger B.
		{name: "contained", a: q, b: cat(p, q, r)},
		// A licence header shared by both, too common to count, and a
		// distinctive block shared too.
		{name: "licence", a: cat([]byte(licence), p, z), b: cat([]byte(licence), s, z), common: []byte(licence), color: true},
		// CRLF against LF line ends, one line changed.
		{name: "crlf", a: cat(p, q), b: crlf(cat(p, []byte("a new line in the middle of it all\n"), q[20:]))},
		// Binary: a block inserted, another moved to the end.
		{name: "binary", a: bin, b: cat(bin[:1000], binary(7, 300), bin[2500:], bin[1000:2500])},
		{name: "empty", a: nil, b: nil},
		{name: "empty-text", a: nil, b: p},
		{name: "self", a: cat(p, q), b: cat(p, q)},
		{name: "self-binary", a: bin, b: bin},
	}
}

func TestGolden(t *testing.T) {
	params := fingerprint.DefaultParams()
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			e, err := Explain(c.a, c.b, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.A.Path, e.B.Path = c.name+".a", c.name+".b"
			checkRuns(t, e, c.a, c.b)
			if c.common != nil {
				fps, err := Fingerprints(c.a, params)
				if err != nil {
					t.Fatal(err)
				}
				common, err := Fingerprints(c.common, params)
				if err != nil {
					t.Fatal(err)
				}
				var hs []uint64
				for _, fp := range common {
					hs = append(hs, fp.Hash)
				}
				e.MarkBoilerplate(fps, CommonSet(hs))
			}
			var out bytes.Buffer
			j, err := json.MarshalIndent(e, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out.Write(j)
			out.WriteString("\n\n")
			if err := e.WriteText(&out, c.a, c.b, &TextOptions{Width: 100}); err != nil {
				t.Fatal(err)
			}
			if c.color {
				out.WriteString("\n")
				if err := e.WriteText(&out, c.a, c.b, &TextOptions{Width: 100, Color: true}); err != nil {
					t.Fatal(err)
				}
			}
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("output differs from %s (run with -update to accept):\n%s", golden, out.String())
			}
		})
	}
}

// TestPromises holds the golden cases to what the view promises, apart
// from the exact figures.
func TestPromises(t *testing.T) {
	cs := map[string]goldenCase{}
	for _, c := range goldenCases() {
		cs[c.name] = c
	}
	explain := func(name string) *Explanation {
		e, err := Explain(cs[name].a, cs[name].b, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// Contained: one run, all of A, at q's place in B.
	if e := explain("contained"); len(e.Runs) != 1 || e.Runs[0].ALines != [2]int{1, 9} || e.Runs[0].BLines != [2]int{13, 21} {
		t.Errorf("contained: runs %+v, want A 1-9 = B 13-21", e.Runs)
	} else if a, _ := e.Shared(false); a != e.A.Size {
		t.Errorf("contained: A shared %d of %d bytes", a, e.A.Size)
	}
	// Moved: p, q and s are found whole where they went.
	e := explain("moved")
	want := map[[2]int][2]int{{1, 12}: {1, 12}, {13, 21}: {35, 43}, {37, 43}: {13, 19}}
	for _, r := range e.Runs {
		if w, ok := want[r.ALines]; ok && w == r.BLines {
			delete(want, r.ALines)
		}
	}
	if len(want) > 0 {
		t.Errorf("moved: runs %+v lack %v", e.Runs, want)
	}
	// CRLF: the lines before the change, and those after, in two runs,
	// whatever their line ends.
	if e := explain("crlf"); e.Unit != Lines || len(e.Runs) != 2 || e.Runs[0].ALines != [2]int{1, 12} || e.Runs[0].BLines != [2]int{1, 12} {
		t.Errorf("crlf: %+v", e.Runs)
	} else if e.Runs[0].BLen != e.Runs[0].ALen+12 {
		t.Errorf("crlf: A %d bytes, B %d: want 12 more, one CR a line", e.Runs[0].ALen, e.Runs[0].BLen)
	}
	// Self: one run, the whole file.
	for _, n := range []string{"self", "self-binary"} {
		e := explain(n)
		if len(e.Runs) != 1 || e.Runs[0].ALen != e.A.Size || e.Runs[0].AOff != 0 || e.Runs[0].BOff != 0 {
			t.Errorf("%s: %+v", n, e.Runs)
		}
	}
	// Binary: ranges in bytes, the moved block found where it went.
	e = explain("binary")
	if e.Unit != Bytes {
		t.Fatalf("binary: unit %s", e.Unit)
	}
	found := false
	for _, r := range e.Runs {
		if r.AOff == 1000 && r.ALen == 1500 && r.BOff == 1000+300+3500 {
			found = true
		}
	}
	if !found {
		t.Errorf("binary: no run A 1000+1500 = B 4800: %+v", e.Runs)
	}
	// Empty: nothing shared, shares of 0.
	if e := explain("empty"); len(e.Runs) != 0 || e.Unit != Lines {
		t.Errorf("empty: %+v", e)
	}
}

// checkRuns holds every run to the promises of doc.go: equal on both
// sides, in A's order without overlap, maximal, within the files.
func checkRuns(t *testing.T, e *Explanation, a, b []byte) {
	t.Helper()
	var end int64
	for i, r := range e.Runs {
		if r.AOff < end || r.ALen <= 0 || r.AOff+r.ALen > int64(len(a)) || r.BOff < 0 || r.BOff+r.BLen > int64(len(b)) {
			t.Fatalf("run %d %+v: out of order or out of bounds (A %d, B %d bytes)", i, r, len(a), len(b))
		}
		end = r.AOff + r.ALen
		if !equalRun(e, a, b, r) {
			t.Fatalf("run %d %+v: sides differ", i, r)
		}
		if e.Unit == Bytes {
			if r.AOff+r.ALen < int64(len(a)) && r.BOff+r.BLen < int64(len(b)) && a[r.AOff+r.ALen] == b[r.BOff+r.BLen] {
				t.Errorf("run %d %+v: could go on", i, r)
			}
			continue
		}
		if r.ALines[1]-r.ALines[0] != r.BLines[1]-r.BLines[0] {
			t.Fatalf("run %d %+v: line counts differ", i, r)
		}
		la, lb := splitLines(a), splitLines(b)
		if x, y := r.ALines[1], r.BLines[1]; x < len(la.lines) && y < len(lb.lines) && bytes.Equal(la.body(x), lb.body(y)) {
			t.Errorf("run %d %+v: could go on", i, r)
		}
	}
}

// equalRun reports whether run r's two sides are equal under the unit's
// rule.
func equalRun(e *Explanation, a, b []byte, r Run) bool {
	as, bs := a[r.AOff:r.AOff+r.ALen], b[r.BOff:r.BOff+r.BLen]
	if e.Unit == Bytes {
		return bytes.Equal(as, bs)
	}
	la, lb := splitLines(as), splitLines(bs)
	if len(la.lines) != len(lb.lines) || len(la.lines) != r.ALines[1]-r.ALines[0]+1 {
		return false
	}
	for i := range la.lines {
		if !bytes.Equal(la.body(i), lb.body(i)) {
			return false
		}
	}
	return true
}

// TestRandomEdits: files made of shuffled, edited and repeated blocks;
// every run keeps its promises, and every block of 3 lines or more that
// both hold unedited is covered.
func TestRandomEdits(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		var blocks [][]byte
		for k := range 2 + r.IntN(8) {
			blocks = append(blocks, text(seed*100+uint64(k), 1+r.IntN(20)))
		}
		var a, b []byte
		for _, k := range r.Perm(len(blocks)) {
			a = append(a, blocks[k]...)
		}
		for _, k := range r.Perm(len(blocks)) {
			if r.IntN(5) == 0 {
				continue
			}
			blk := blocks[k]
			if r.IntN(4) == 0 {
				blk = crlf(blk)
			}
			b = append(b, blk...)
			if r.IntN(6) == 0 {
				b = append(b, blk...) // twice
			}
		}
		if r.IntN(3) == 0 {
			a, b = binary(seed, 100+r.IntN(3000)), cat(binary(seed+1, r.IntN(500)), binary(seed, 3000))
		}
		e, err := Explain(a, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkRuns(t, e, a, b)
	}
}

func TestTooLarge(t *testing.T) {
	_, err := Explain(make([]byte, 100), nil, &Options{MaxSize: 99})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "A has 100 bytes") {
		t.Fatalf("err %v, want ErrTooLarge naming A", err)
	}
}

// TestRepetitive: files of one line repeated, and of zeros, are explained
// in one run each, in bounded work.
func TestRepetitive(t *testing.T) {
	a := bytes.Repeat([]byte("the same line again\n"), 50000)
	b := cat([]byte("a first line, different from the others\n"), a)
	e, err := Explain(a, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Runs) != 1 || e.Runs[0].ALines != [2]int{1, 50000} || e.Runs[0].BLines != [2]int{2, 50001} {
		t.Errorf("lines: %+v", e.Runs)
	}
	z := make([]byte, 1<<20)
	e, err = Explain(z, cat([]byte{1, 2, 3}, z), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Runs) != 1 || e.Runs[0].ALen != 1<<20 || e.Runs[0].BOff != 3 {
		t.Errorf("zeros: %+v", e.Runs)
	}
}

// TestTypeAgrees: the text/binary rule is package fingerprint's.
func TestTypeAgrees(t *testing.T) {
	inputs := [][]byte{nil, []byte("plain\n"), {0}, []byte("a\x01b\x02c\x03d\x04e\x05"), text(1, 100), binary(1, 100),
		cat(bytes.Repeat([]byte("x"), 9000), []byte{0})}
	for i, in := range inputs {
		sk, err := fingerprint.SketchReader(bytes.NewReader(in), fingerprint.DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := typeOf(in), sk.Type.String(); got != want {
			t.Errorf("input %d: type %s, fingerprint says %s", i, got, want)
		}
	}
}

func BenchmarkExplainText(b *testing.B) {
	a := text(1, 20000)
	c := cat(a[len(a)/2:], text(2, 500), a[:len(a)/2])
	b.SetBytes(int64(len(a) + len(c)))
	for b.Loop() {
		if _, err := Explain(a, c, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExplainBinary(b *testing.B) {
	a := binary(1, 1<<20)
	c := cat(a[len(a)/2:], binary(2, 5000), a[:len(a)/2])
	b.SetBytes(int64(len(a) + len(c)))
	for b.Loop() {
		if _, err := Explain(a, c, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzExplain: whatever the two files, every run keeps its promises and
// the shares stay within the files.
func FuzzExplain(f *testing.F) {
	f.Add([]byte("a\nb\r\nc\n"), []byte("c\nb\na\n"))
	f.Add(text(1, 5), cat(text(2, 3), text(1, 5)))
	f.Add(binary(1, 200), cat(binary(2, 40), binary(1, 200)))
	f.Add([]byte{}, []byte("x"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		e, err := Explain(a, b, &Options{MinRunBytes: 4, BlockSize: 8})
		if err != nil {
			t.Fatal(err)
		}
		checkRuns(t, e, a, b)
		as, bs := e.Shared(false)
		if as > int64(len(a)) || bs > int64(len(b)) {
			t.Fatalf("shared %d of %d, %d of %d", as, len(a), bs, len(b))
		}
		if err := e.WriteText(io.Discard, a, b, nil); err != nil {
			t.Fatal(err)
		}
	})
}
