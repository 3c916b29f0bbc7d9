package exact

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// naive measures over sets of 32-byte strings.
func naive(q, c []byte) (cont, rev, res float64, shared int64) {
	set := func(b []byte) map[string]bool {
		m := map[string]bool{}
		for i := 0; i+Window <= len(b); i++ {
			m[string(b[i:i+Window])] = true
		}
		return m
	}
	qs, cs := set(q), set(c)
	n := 0
	for w := range qs {
		if cs[w] {
			n++
		}
	}
	if len(qs) == 0 {
		if bytes.Equal(q, c) {
			return 1, 1, 1, int64(len(q))
		}
		return 0, 0, 0, 0
	}
	cov := make([]bool, len(q))
	for i := 0; i+Window <= len(q); i++ {
		if cs[string(q[i:i+Window])] {
			for j := i; j < i+Window; j++ {
				cov[j] = true
			}
		}
	}
	for _, b := range cov {
		if b {
			shared++
		}
	}
	cont = float64(n) / float64(len(qs))
	if len(cs) > 0 {
		rev = float64(n) / float64(len(cs))
	}
	res = float64(n) / float64(len(qs)+len(cs)-n)
	return
}

// text returns n bytes of words from a small vocabulary, so windows repeat.
func text(r *rand.Rand, n int) []byte {
	words := []string{"the ", "file ", "index ", "sif ", "window ", "func ", "return ", "err ", "nil ", "\n", "\t", "{", "}", "x := 1\n"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.Bytes()[:n]
}

// mutate substitutes runs of 20 random bytes over about frac of b.
func mutate(r *rand.Rand, b []byte, frac float64) []byte {
	out := bytes.Clone(b)
	for k := 0; k < int(frac*float64(len(b)))/20; k++ {
		if len(out) < 20 {
			break
		}
		at := r.IntN(len(out) - 19)
		for j := range 20 {
			out[at+j] = byte(r.Uint32())
		}
	}
	return out
}

func TestMeasureMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := [][2][]byte{
		{nil, nil},
		{[]byte("short"), []byte("short")},
		{[]byte("short"), []byte("shorter")},
		{bytes.Repeat([]byte("a"), 100), bytes.Repeat([]byte("a"), 40)},
		{bytes.Repeat([]byte("ab"), 100), []byte("zz")},
	}
	for range 40 {
		q := text(r, 32+r.IntN(5000))
		var c []byte
		switch r.IntN(4) {
		case 0:
			c = mutate(r, q, r.Float64())
		case 1:
			c = append(text(r, r.IntN(3000)), mutate(r, q, 0.1)...)
		case 2:
			c = text(r, r.IntN(4000))
		default:
			c = mutate(r, q[:r.IntN(len(q))], 0.2)
		}
		cases = append(cases, [2][]byte{q, c})
	}
	for i, tc := range append(cases, cases...) {
		q, c := tc[0], tc[1]
		qu := NewQuery(q)
		// Measure twice: a Query is reused across candidates.
		for range 2 {
			m, err := qu.MeasureBytes(c)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			cont, rev, res, shared := naive(q, c)
			if m.Level != 0 || m.Containment != cont || m.ReverseContainment != rev || m.Resemblance != res || m.SharedBytes != shared {
				t.Fatalf("case %d (%d, %d bytes): got %+v; naive containment %v reverse %v resemblance %v shared %d",
					i, len(q), len(c), m, cont, rev, res, shared)
			}
			if m.Size != int64(len(c)) {
				t.Fatalf("case %d: size %d, want %d", i, m.Size, len(c))
			}
		}
		// Released, its buffers serve the next cases as they are, not
		// zeroed: what they held must not count.
		qu.Release()
	}
}

// TestHasherStreams: hashing in pieces gives the hashes of the whole.
func TestHasherStreams(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := text(r, 10000)
	want := Hashes(data)
	var h Hasher
	var got []uint64
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+r.IntN(100))
		got = h.Append(got, rest[:n])
		rest = rest[n:]
	}
	if len(got) != len(want) {
		t.Fatalf("%d hashes, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("hash %d differs", i)
		}
	}
	// Equal windows hash equal wherever they sit; the hash is of the
	// window alone.
	w := data[500 : 500+Window]
	if Hashes(w)[0] != want[500] {
		t.Fatal("a window's hash depends on what precedes it")
	}
}

// TestHasherKeeps: AppendKept, in pieces of any size, keeps exactly the
// hashes of the whole that its mask keeps, in order.
func TestHasherKeeps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	data := text(r, 20000)
	all := Hashes(data)
	for _, level := range []int{0, 1, 3, 6} {
		var want []uint64
		for _, x := range all {
			if Keep(x, level) {
				want = append(want, x)
			}
		}
		var h Hasher
		var got []uint64
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+r.IntN(3*Window))
			got = h.AppendKept(got, rest[:n], levelMask(level))
			rest = rest[n:]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("level %d: kept %d hashes, want %d (or another order)", level, len(got), len(want))
		}
	}
}

// TestSampledMeasure: a signature's estimate is near the exact measure,
// and the level follows the sizes.
func TestSampledMeasure(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	q := make([]byte, 300_000)
	for i := range q {
		q[i] = byte(r.Uint32())
	}
	c := mutate(r, q, 0.4)
	exactM, err := NewQuery(q).MeasureBytes(c)
	if err != nil {
		t.Fatal(err)
	}
	level := SignatureLevel(int64(len(q)))
	if level != MinSignatureLevel {
		t.Fatalf("signature level of 300 kB: %d, want %d", level, MinSignatureLevel)
	}
	sq, err := NewSignatureQuery(int64(len(q)), level, Signature(q, level))
	if err != nil {
		t.Fatal(err)
	}
	m, err := sq.MeasureBytes(c)
	if err != nil {
		t.Fatal(err)
	}
	if m.Level != level {
		t.Fatalf("level %d, want %d", m.Level, level)
	}
	for name, pair := range map[string][2]float64{
		"containment": {m.Containment, exactM.Containment},
		"reverse":     {m.ReverseContainment, exactM.ReverseContainment},
		"resemblance": {m.Resemblance, exactM.Resemblance},
	} {
		if math.Abs(pair[0]-pair[1]) > 0.03 {
			t.Errorf("%s: sampled %.4f, exact %.4f", name, pair[0], pair[1])
		}
	}
	// A candidate over ExactLimit is sampled even for an exact query.
	big := append(bytes.Clone(q), make([]byte, ExactLimit)...)
	for i := len(q); i < len(big); i++ {
		big[i] = byte(r.Uint32())
	}
	m, err = NewQuery(q).MeasureBytes(big)
	if err != nil {
		t.Fatal(err)
	}
	if m.Level != LevelFor(int64(len(big))) || m.Level == 0 {
		t.Fatalf("candidate of %d bytes measured at level %d, want %d", len(big), m.Level, LevelFor(int64(len(big))))
	}
	if math.Abs(m.Containment-1) > 0.001 {
		t.Fatalf("containment of a prefix sampled: %v, want 1", m.Containment)
	}
}

func TestCheckSignature(t *testing.T) {
	for _, tc := range []struct {
		sig   []uint64
		level int
		ok    bool
	}{
		{[]uint64{0x10, 0x20}, 4, true},
		{[]uint64{0x20, 0x10}, 4, false},
		{[]uint64{0x10, 0x10}, 4, false},
		{[]uint64{0x11}, 4, false},
		{nil, 33, false},
		{nil, -1, false},
	} {
		err := CheckSignature(tc.sig, tc.level)
		if (err == nil) != tc.ok {
			t.Errorf("CheckSignature(%x, %d) = %v", tc.sig, tc.level, err)
		}
	}
	if _, err := NewSignatureQuery(-1, 4, nil); err == nil {
		t.Error("negative size accepted")
	}
}

func TestBlockLen(t *testing.T) {
	// rdiff 2.3's choices, read from the headers of its signatures.
	for size, want := range map[int64]int{0: 256, 1000: 256, 100_000: 256, 1_000_000: 896, 10_000_000: 3072} {
		if got := BlockLen(size); got != want {
			t.Errorf("BlockLen(%d) = %d, want %d", size, got, want)
		}
	}
}

func TestDeltaCostShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	basis := make([]byte, 50_000)
	for i := range basis {
		basis[i] = byte(r.Uint32())
	}
	d, err := DeltaCost(bytes.NewReader(basis), int64(len(basis)), basis)
	if err != nil {
		t.Fatal(err)
	}
	if d.Literal != 0 || d.Commands != 1 || d.Copied != int64(len(basis)) {
		t.Fatalf("identical: %+v, want one copy of everything", d)
	}
	other := make([]byte, 20_000)
	for i := range other {
		other[i] = byte(r.Uint32())
	}
	d, err = DeltaCost(bytes.NewReader(basis), int64(len(basis)), other)
	if err != nil {
		t.Fatal(err)
	}
	if d.Literal != int64(len(other)) || d.Commands != 1 {
		t.Fatalf("unrelated: %+v, want all literal", d)
	}
	// An insertion in the middle: two copies around a literal.
	ins := append(append(bytes.Clone(basis[:25_600]), []byte("inserted")...), basis[25_600:]...)
	d, err = DeltaCost(bytes.NewReader(basis), int64(len(basis)), ins)
	if err != nil {
		t.Fatal(err)
	}
	if d.Literal != 8 || d.Commands != 3 {
		t.Fatalf("insertion at a block boundary: %+v, want 8 literal bytes in 3 commands", d)
	}
}

// TestDeltaCostAgainstRdiff compares the simulation with librsync's rdiff
// on edited files.
func TestDeltaCostAgainstRdiff(t *testing.T) {
	rdiff, err := exec.LookPath("rdiff")
	if err != nil {
		t.Skip("rdiff is not installed (Debian package rdiff)")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(9, 10))
	for i, size := range []int{300, 5000, 70_000, 400_000} {
		basis := text(r, size)
		for _, frac := range []float64{0, 0.01, 0.1, 0.5} {
			target := mutate(r, basis, frac)
			if i%2 == 1 { // shifted too
				target = append([]byte("prefix that shifts everything\n"), target...)
			}
			bp, tp := filepath.Join(dir, "basis"), filepath.Join(dir, "target")
			sp, dp := filepath.Join(dir, "sig"), filepath.Join(dir, "delta")
			os.WriteFile(bp, basis, 0o644)
			os.WriteFile(tp, target, 0o644)
			os.Remove(sp)
			os.Remove(dp)
			if out, err := exec.Command(rdiff, "signature", bp, sp).CombinedOutput(); err != nil {
				t.Fatalf("rdiff signature: %v: %s", err, out)
			}
			if out, err := exec.Command(rdiff, "delta", sp, tp, dp).CombinedOutput(); err != nil {
				t.Fatalf("rdiff delta: %v: %s", err, out)
			}
			st, err := os.Stat(dp)
			if err != nil {
				t.Fatal(err)
			}
			d, err := DeltaCost(bytes.NewReader(basis), int64(len(basis)), target)
			if err != nil {
				t.Fatal(err)
			}
			real := st.Size()
			if diff := math.Abs(float64(d.Bytes-real)) / float64(real); diff > 0.02 && math.Abs(float64(d.Bytes-real)) > 16 {
				t.Errorf("size %d, %.0f%% edited: simulated %d bytes, rdiff %d", size, frac*100, d.Bytes, real)
			}
		}
	}
}

// FuzzMeasure: the measure of any two inputs equals the naive count, and
// the delta simulation copies and sends exactly the target's bytes.
func FuzzMeasure(f *testing.F) {
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice over"), []byte("a quick brown fox jumps over the lazy dog"))
	f.Add([]byte{}, []byte("x"))
	f.Fuzz(func(t *testing.T, q, c []byte) {
		m, err := NewQuery(q).MeasureBytes(c)
		if err != nil {
			t.Fatal(err)
		}
		cont, rev, res, shared := naive(q, c)
		if m.Containment != cont || m.ReverseContainment != rev || m.Resemblance != res || m.SharedBytes != shared {
			t.Fatalf("got %+v; naive %v %v %v %d", m, cont, rev, res, shared)
		}
		d, err := DeltaCost(bytes.NewReader(c), int64(len(c)), q)
		if err != nil {
			t.Fatal(err)
		}
		if d.Literal+d.Copied != int64(len(q)) || d.Bytes < 5+d.Literal {
			t.Fatalf("delta %+v of %d bytes", d, len(q))
		}
	})
}
