package fingerprint

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// mapFeatures is what a Collector must return for fps: one feature per
// distinct hash, with the number of its occurrences and the largest of
// their lengths, sorted by hash.
func mapFeatures(fps []Fingerprint) []Feature {
	m := make(map[uint64]Feature)
	for _, fp := range fps {
		f := m[fp.Hash]
		f.Hash, f.Count, f.Len = fp.Hash, f.Count+1, max(f.Len, fp.Len)
		m[fp.Hash] = f
	}
	out := make([]Feature, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Feature) int {
		if a.Hash < b.Hash {
			return -1
		}
		if a.Hash > b.Hash {
			return 1
		}
		return 0
	})
	return out
}

// A Collector returns the features of the fingerprints added since its
// last Reset, folded whether it folded them once at the end or many times
// along the way (a stream of more than collectorFold fingerprints).
func TestCollector(t *testing.T) {
	defer func(n int) { collectorFold = n }(collectorFold)
	r := rand.New(rand.NewPCG(5, 6))
	var c Collector
	for i := range 200 {
		collectorFold = []int{1 << 16, 1, 7, 64}[i%4]
		n := r.IntN(3000)
		distinct := 1 + r.IntN(n+1)
		fps := make([]Fingerprint, n)
		for j := range fps {
			h := uint64(r.IntN(distinct)) * 0x9e3779b97f4a7c15
			fps[j] = Fingerprint{Hash: h, Offset: int64(j), Len: uint32(h%3) + 30 + uint32(r.IntN(2))}
		}
		c.Reset()
		for _, fp := range fps {
			c.Add(fp)
		}
		got, want := c.Features(), mapFeatures(fps)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d (%d fingerprints, fold every %d): %d features, want %d", i, n, collectorFold, len(got), len(want))
		}
		if len(got) > 0 {
			got[0].Count = 1e9 // the caller owns the slice
			if again := c.Features(); !slices.Equal(again, want) {
				t.Fatalf("case %d: Features again after its result was changed: differs", i)
			}
		}
		if len(c.fs) > 2*len(want)+collectorFold+1 {
			t.Errorf("case %d: %d entries held for %d distinct hashes, fold every %d", i, len(c.fs), len(want), collectorFold)
		}
	}
	var empty Collector
	if f := empty.Features(); f == nil || len(f) != 0 {
		t.Errorf("Features of an empty Collector: %#v, want an empty slice", f)
	}
}

// BenchmarkCollector collects the fingerprints of source-like text of
// 9 KB (a first scan's average file) and 64 KB, with the Collector and
// with the map it replaced.
func BenchmarkCollector(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	words := strings.Fields("func return if else for range var const type struct interface map chan go defer select case switch err nil := = == != { } ( ) [ ] . , ; + - * / % < > x y n i j k buf data len cap append make new")
	for _, size := range []int{9 << 10, 64 << 10} {
		var text strings.Builder
		for text.Len() < size {
			text.WriteString(words[r.IntN(len(words))])
			text.WriteByte(" \n\t"[r.IntN(3)])
		}
		var fps []Fingerprint
		sk, err := NewSketcher(DefaultParams(), func(fp Fingerprint) { fps = append(fps, fp) })
		if err != nil {
			b.Fatal(err)
		}
		sk.Write([]byte(text.String()))
		sk.Finish()
		b.Run(fmt.Sprintf("%dKB/collector", size>>10), func(b *testing.B) {
			var c Collector
			for b.Loop() {
				c.Reset()
				for _, fp := range fps {
					c.Add(fp)
				}
				c.Features()
			}
			b.ReportMetric(float64(len(fps)), "fingerprints")
		})
		b.Run(fmt.Sprintf("%dKB/map", size>>10), func(b *testing.B) {
			m := make(map[uint64]Feature)
			for b.Loop() {
				clear(m)
				for _, fp := range fps {
					f := m[fp.Hash]
					f.Hash, f.Count, f.Len = fp.Hash, f.Count+1, fp.Len
					m[fp.Hash] = f
				}
				out := make([]Feature, 0, len(m))
				for _, f := range m {
					out = append(out, f)
				}
				sort.Slice(out, func(i, j int) bool { return out[i].Hash < out[j].Hash })
			}
			b.ReportMetric(float64(len(fps)), "fingerprints")
		})
	}
}
