package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkForwardList encodes and decodes forward lists of 100 entries
// (a file of about 25 KB under manber's defaults) on random fingerprint
// keys: with every weight 1, as manber's mostly are, and with weights of
// chunk lengths. MB/s counts the entries' in-memory size (12 bytes each).
func BenchmarkForwardList(b *testing.B) {
	for _, c := range []struct {
		name   string
		weight func(*rand.Rand) uint64
	}{
		{"ones", func(*rand.Rand) uint64 { return 1 }},
		{"lengths", func(rng *rand.Rand) uint64 { return 64 + rng.Uint64N(4000) }},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		es := make([]entry, 0, 100)
		for len(es) < cap(es) {
			es = append(es, entry{key: rng.Uint32(), weight: c.weight(rng)})
		}
		slices.SortFunc(es, func(x, y entry) int { return int(int64(x.key) - int64(y.key)) })
		es = slices.CompactFunc(es, func(x, y entry) bool { return x.key == y.key })
		v := encodeForward(nil, es)
		b.Run(c.name+"/encode", func(b *testing.B) {
			b.SetBytes(int64(12 * len(es)))
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = encodeForward(buf[:0], es)
			}
			b.ReportMetric(float64(len(v))/float64(len(es)), "bytes/entry")
		})
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(12 * len(es)))
			b.ReportAllocs()
			for b.Loop() {
				r := newForwardReader(v)
				for {
					if _, ok := r.next(); !ok {
						break
					}
				}
				if err := r.err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
