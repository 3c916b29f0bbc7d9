package fingerprint

// Naive reference implementations, written straight from the definitions,
// and the helpers the tests share.

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"
)

// naiveManber recomputes every window's hash by Horner's rule, reducing mod
// M = 2^ModBits at every step, and keeps, at the stream's level k, every
// window whose hash has its low k bits zero, except that windows whose low
// Bits bits are zero (the top level) are kept greedily without overlap
// among themselves.
func naiveManber(data []byte, p Params) []Fingerprint {
	pr, mod := uint64(manberPrime64), ^uint64(0)
	if p.ModBits == 30 {
		pr, mod = manberPrime30, 1<<30-1
	}
	lvl := naiveLevel(int64(len(data)), p)
	sel := uint64(1)<<lvl - 1
	top := uint64(1)<<p.Bits - 1
	var out []Fingerprint
	next := 0 // the first window start that does not overlap a kept top-level window
	for i := 0; i+p.Window <= len(data); i++ {
		var f uint64
		for _, t := range data[i : i+p.Window] {
			f = (f*pr + uint64(t)) & mod
		}
		if f&sel != 0 {
			continue
		}
		if f&top == 0 {
			if i < next {
				continue
			}
			next = i + p.Window
		}
		out = append(out, Fingerprint{Hash: f >> p.MinBits, Offset: int64(i), Len: uint32(p.Window)})
	}
	return out
}

// naiveLevel is Params.Level from its definition: the largest k in
// MinBits..Bits with Target·2^k at most the number of windows, else MinBits.
func naiveLevel(size int64, p Params) int {
	n := size - int64(p.Window) + 1
	best := p.MinBits
	for k := p.MinBits; k <= p.Bits; k++ {
		if float64(p.Target)*math.Pow(2, float64(k)) <= float64(n) {
			best = k
		}
	}
	return best
}

// naiveChunks cuts data one chunk at a time, exactly as the chunking is
// defined: a chunk starting at s ends just after the first byte p in
// [s+MinChunk, s+MaxChunk) whose gear hash passes the mask for p−s (strict
// while p−s < AvgChunk, loose after), or at MaxChunk bytes, or at the end of
// data. The gear hash of p is computed afresh for every p from the 64 bytes
// ending there (naiveGear), not rolled.
func naiveChunks(data []byte, p Params) []Fingerprint {
	c := newChunker(p, func(Fingerprint) {})
	var out []Fingerprint
	for start := 0; start < len(data); {
		n := len(data) - start
		length := min(n, p.MaxChunk)
		for i := p.MinChunk; i < min(n, p.MaxChunk); i++ {
			mask := c.maskL
			if i < p.AvgChunk {
				mask = c.maskS
			}
			if naiveGear(data, start+i)&mask == 0 {
				length = i + 1
				break
			}
		}
		chunk := data[start : start+length]
		out = append(out, Fingerprint{Hash: xxh3.Hash(chunk), Offset: int64(start), Len: uint32(length)})
		start += length
	}
	return out
}

// naiveGear returns the gear hash of data at p: the sum of G[data[j]]·2^(p−j)
// mod 2^64 over the 64 bytes ending at p (all the bytes up to p when p < 63),
// the other bytes' terms being multiples of 2^64.
func naiveGear(data []byte, p int) uint64 {
	var h uint64
	for j := max(0, p-63); j <= p; j++ {
		h += gear[data[j]] << (p - j)
	}
	return h
}

// naiveSum slides an 8-bit window over data one bit at a time and counts
// each tag's matches, skipping the 7 bits after a counted match of that tag.
func naiveSum(data []byte) SumTable {
	var t SumTable
	var next [NumTags]int
	for b := 0; b+8 <= 8*len(data); b++ {
		q, r := b/8, b%8
		w := data[q]
		if r > 0 {
			w = data[q]<<r | data[q+1]>>(8-r)
		}
		for i, tag := range tags {
			if w == tag && b >= next[i] {
				t[i]++
				next[i] = b + 8
			}
		}
	}
	return t
}

// naiveType classifies data from the definition.
func naiveType(data []byte) Type {
	data = data[:min(len(data), 8192)]
	ctrl := 0
	for _, c := range data {
		switch {
		case c == 0:
			return TypeBinary
		case c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == '\b' || c == 0x1b:
		case c < 0x20 || c == 0x7f:
			ctrl++
		}
	}
	if 10*ctrl > len(data) {
		return TypeBinary
	}
	return TypeText
}

// naive returns the fingerprints the naive references give for p.
func naive(data []byte, p Params) []Fingerprint {
	if p.Scheme == Chunks {
		return naiveChunks(data, p)
	}
	return naiveManber(data, p)
}

// sketch writes data through a Sketcher in pieces of the given sizes (the
// rest in one Write) and returns the fingerprints and the Summary.
func sketch(tb testing.TB, p Params, data []byte, sizes []int) ([]Fingerprint, Summary) {
	tb.Helper()
	var fps []Fingerprint
	s, err := NewSketcher(p, func(f Fingerprint) { fps = append(fps, f) })
	if err != nil {
		tb.Fatal(err)
	}
	for _, n := range sizes {
		n = min(n, len(data))
		if k, err := s.Write(data[:n]); k != n || err != nil {
			tb.Fatalf("Write(%d bytes) = %d, %v", n, k, err)
		}
		data = data[n:]
	}
	if _, err := s.Write(data); err != nil {
		tb.Fatal(err)
	}
	return fps, s.Finish()
}

// randomSizes returns Write sizes summing to at least n: mostly small, some
// empty, some large.
func randomSizes(r *rand.Rand, n int) []int {
	var sizes []int
	for total := 0; total < n; {
		var k int
		switch r.IntN(4) {
		case 0:
			k = r.IntN(3)
		case 1:
			k = r.IntN(64)
		case 2:
			k = r.IntN(4096)
		default:
			k = r.IntN(200 << 10)
		}
		sizes = append(sizes, k)
		total += k
	}
	return sizes
}

// The generators below draw only on PCG's Uint64, whose output is fixed by
// its definition, so the golden outputs do not depend on how a Go release
// implements IntN or the like.

// randomBytes returns n bytes from a PCG seeded with seed.
func randomBytes(seed uint64, n int) []byte {
	r := rand.NewPCG(seed, 0x5eed)
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		x := r.Uint64()
		for j := i; j < min(n, i+8); j++ {
			b[j] = byte(x)
			x >>= 8
		}
	}
	return b
}

// textBytes returns n bytes of text-like data: words from a random vocabulary
// of 2000, the low-numbered ones far more frequent (roughly a Zipf law), with
// spaces, punctuation and line breaks.
func textBytes(seed uint64, n int) []byte {
	r := rand.NewPCG(seed, 0x7e47)
	below := func(n int) int { return int(r.Uint64() % uint64(n)) }
	vocab := make([]string, 2000)
	for i := range vocab {
		w := make([]byte, 1+below(9))
		for j := range w {
			w[j] = "etaoinshrdlcumwfgypbvkjxqz"[min(below(26), below(26))]
		}
		vocab[i] = string(w)
	}
	b := make([]byte, 0, n+16)
	col := 0
	for len(b) < n {
		// The product of two uniform draws favours small indexes.
		w := vocab[below(len(vocab))*below(len(vocab))/len(vocab)]
		b = append(b, w...)
		col += len(w) + 1
		switch x := below(60); {
		case x < 5:
			b = append(b, ". "...)
		case x < 9:
			b = append(b, ", "...)
		case col > 72:
			b = append(b, '\n')
			col = 0
		default:
			b = append(b, ' ')
		}
	}
	return b[:n]
}

// tagSoup returns n bytes drawn from the tags, their rotations and the bytes
// that make long runs, so that SimiHash matches of one tag are dense and
// often overlap.
func tagSoup(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x7a95))
	var alphabet []byte
	for _, t := range tags {
		for k := range 8 {
			alphabet = append(alphabet, t<<k|t>>(8-k))
		}
	}
	alphabet = append(alphabet, 0xff, ' ', '-', 0xaa, 0x55)
	b := make([]byte, 0, n)
	for len(b) < n {
		c := alphabet[r.IntN(len(alphabet))]
		k := 1
		if r.IntN(4) == 0 {
			k = r.IntN(40)
		}
		for range k {
			b = append(b, c)
		}
	}
	return b[:n]
}

// testInputs are named inputs that exercise the fast paths' corner cases.
func testInputs() map[string][]byte {
	zeros := make([]byte, 70000)
	mixed := slices.Concat(randomBytes(7, 5000), make([]byte, 3000), textBytes(8, 5000), tagSoup(9, 5000))
	periodic := make([]byte, 20000)
	for i := range periodic {
		periodic[i] = "ab\x00e\xe3t"[i%6]
	}
	return map[string][]byte{
		"empty":    nil,
		"one":      {0},
		"random":   randomBytes(1, 300000),
		"text":     textBytes(2, 200000),
		"tagsoup":  tagSoup(3, 200000),
		"zeros":    zeros,
		"ones":     slices.Repeat([]byte{0xff}, 50000),
		"mixed":    mixed,
		"periodic": periodic,
		// Small inputs, sampled below the top level, at several levels.
		"text256":    textBytes(10, 256),
		"text300":    textBytes(11, 300),
		"random927":  randomBytes(12, 927),
		"text2100":   textBytes(13, 2100),
		"random4100": randomBytes(14, 4100),
		"zeros600":   make([]byte, 600),
	}
}

// testParams are parameter sets the tests run every scheme with.
func testParams() []Params {
	return []Params{
		{Scheme: Manber},
		{Scheme: Manber, ModBits: 30},
		{Scheme: Manber, Bits: 6},
		{Scheme: Manber, Bits: 0},
		{Scheme: Manber, Bits: 16, Window: 8},
		{Scheme: Manber, Bits: 3, Window: 8, ModBits: 30},
		{Scheme: Manber, Bits: 4, Window: 4096},
		{Scheme: Manber, MinBits: 8},
		{Scheme: Manber, MinBits: 0, Target: 64},
		{Scheme: Manber, Bits: 12, MinBits: 5, Target: 3, ModBits: 30},
		{Scheme: Chunks},
		{Scheme: Chunks, AvgChunk: 1024},
		{Scheme: Chunks, MinChunk: 1, AvgChunk: 16, MaxChunk: 17},
		{Scheme: Chunks, MinChunk: 15, AvgChunk: 16, MaxChunk: 4096},
		{Scheme: Chunks, MinChunk: 3000, AvgChunk: 4096, MaxChunk: 1 << 16},
		{Scheme: Chunks, AvgChunk: 64},
		{Scheme: Chunks, MinChunk: 63, AvgChunk: 128},
		{Scheme: Chunks, MinChunk: 64, AvgChunk: 128},
		{Scheme: Chunks, MinChunk: 65, AvgChunk: 128},
	}
}

func mustNormalize(tb testing.TB, p Params) Params {
	tb.Helper()
	q, err := p.Normalize()
	if err != nil {
		tb.Fatal(err)
	}
	return q
}
