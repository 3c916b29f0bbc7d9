package fingerprint

import (
	"crypto/sha256"
	"testing"
)

// Every benchmark scans the same 1 MiB of random data, and the text-like
// variants 1 MiB of random words, so MB/s compare directly with ByteSum.

var (
	benchRandom = randomBytes(100, 1<<20)
	benchText   = textBytes(101, 1<<20)
	benchSink   uint64
)

func benchInputs() []struct {
	name string
	data []byte
} {
	return []struct {
		name string
		data []byte
	}{{"random", benchRandom}, {"text", benchText}}
}

// BenchmarkByteSum is the baseline: the cheapest loop that reads every byte.
func BenchmarkByteSum(b *testing.B) {
	for _, in := range benchInputs() {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			for b.Loop() {
				benchSink += byteSum(in.data)
			}
		})
	}
}

// byteSum is not inlined so that its sum stays in a register: inlined into the
// benchmark closure, the compiler keeps it on the stack.
//
//go:noinline
func byteSum(b []byte) uint64 {
	var s uint64
	for _, c := range b {
		s += uint64(c)
	}
	return s
}

// benchScanner benchmarks a scheme's scanner alone.
func benchScanner(b *testing.B, p Params) {
	p = mustNormalize(b, p)
	for _, in := range benchInputs() {
		b.Run(in.name, func(b *testing.B) {
			n := 0
			emit := func(Fingerprint) { n++ }
			var sc scanner
			if p.Scheme == Manber {
				sc = newManber(p, emit)
			} else {
				sc = newChunker(p, emit)
			}
			b.SetBytes(int64(len(in.data)))
			for b.Loop() {
				sc.reset()
				sc.write(in.data)
				sc.finish()
			}
			benchSink += uint64(n)
		})
	}
}

func BenchmarkManber(b *testing.B)      { benchScanner(b, Params{Scheme: Manber}) }
func BenchmarkManberMod30(b *testing.B) { benchScanner(b, Params{Scheme: Manber, ModBits: 30}) }
func BenchmarkChunks(b *testing.B)      { benchScanner(b, Params{Scheme: Chunks}) }

func BenchmarkSimiHash(b *testing.B) {
	for _, in := range benchInputs() {
		b.Run(in.name, func(b *testing.B) {
			var s simiHash
			b.SetBytes(int64(len(in.data)))
			for b.Loop() {
				s.reset()
				s.write(in.data)
				benchSink += uint64(s.sum()[0])
			}
		})
	}
}

func BenchmarkStrongHash(b *testing.B) {
	h := sha256.New()
	var sum [32]byte
	b.SetBytes(int64(len(benchRandom)))
	for b.Loop() {
		h.Reset()
		h.Write(benchRandom)
		h.Sum(sum[:0])
	}
}

// BenchmarkSketcher runs everything a stream gets: the scheme, SHA-256,
// SimiHash and the type; the nosimi variants skip SimiHash, as sifd does.
func BenchmarkSketcher(b *testing.B) {
	for _, p := range []Params{{Scheme: Manber}, {Scheme: Chunks}} {
		for _, in := range benchInputs() {
			for _, skip := range []bool{false, true} {
				name := string(p.Scheme) + "/" + in.name
				if skip {
					name = string(p.Scheme) + "/nosimi/" + in.name
				}
				b.Run(name, func(b *testing.B) {
					n := 0
					s, err := NewSketcher(p, func(Fingerprint) { n++ })
					if err != nil {
						b.Fatal(err)
					}
					if skip {
						s.SkipSimiHash()
					}
					b.SetBytes(int64(len(in.data)))
					for b.Loop() {
						s.Reset()
						s.Write(in.data)
						s.Finish()
					}
					benchSink += uint64(n)
				})
			}
		}
	}
}
