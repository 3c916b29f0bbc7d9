package exact

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkMeasure: a query against eight edited candidates of its size
// and one four times larger, prepared, measured and released as the
// daemon checks a query's best candidates, for queries of 2 kB (most
// files of a source tree), 50 kB and 500 kB.
func BenchmarkMeasure(b *testing.B) {
	for _, size := range []int{2_000, 50_000, 500_000} {
		b.Run(fmt.Sprintf("%dkB", size/1000), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			q := text(r, size)
			var cands [][]byte
			for i := range 8 {
				cands = append(cands, mutate(r, q, float64(i)/10))
			}
			cands = append(cands, bytes.Repeat(mutate(r, q, 0.5), 4))
			n := 0
			for _, c := range cands {
				n += len(c)
			}
			b.SetBytes(int64(len(q) + n))
			for b.Loop() {
				qu := NewQuery(q)
				for _, c := range cands {
					if _, err := qu.MeasureBytes(c); err != nil {
						b.Fatal(err)
					}
				}
				qu.Release()
			}
		})
	}
}

// BenchmarkMeasureLarge: a 2 kB query against one 8 MiB candidate that
// holds it, as a small file's check meets a large file sharing a few of
// its fingerprints: a sampled measure that reads the whole candidate.
func BenchmarkMeasureLarge(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	q := text(r, 2_000)
	c := append(text(r, 8<<20-len(q)), q...)
	b.SetBytes(int64(len(c)))
	for b.Loop() {
		qu := NewQuery(q)
		if _, err := qu.MeasureBytes(c); err != nil {
			b.Fatal(err)
		}
		qu.Release()
	}
}

func BenchmarkDeltaCost(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	basis := text(r, 100_000)
	target := mutate(r, basis, 0.05)
	b.SetBytes(int64(len(basis) + len(target)))
	for b.Loop() {
		if _, err := DeltaCost(bytes.NewReader(basis), int64(len(basis)), target); err != nil {
			b.Fatal(err)
		}
	}
}
