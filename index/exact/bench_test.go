package exact

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// BenchmarkMeasure: one 50 kB query against eight edited 50 kB candidates,
// as the daemon checks a query's best candidates.
func BenchmarkMeasure(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	q := text(r, 50_000)
	var cands [][]byte
	for i := range 8 {
		cands = append(cands, mutate(r, q, float64(i)/10))
	}
	b.SetBytes(int64(len(q) * 9))
	for b.Loop() {
		qu := NewQuery(q)
		for _, c := range cands {
			if _, err := qu.MeasureBytes(c); err != nil {
				b.Fatal(err)
			}
		}
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
