package exact

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// adversarialSignatures are signatures a client could send at level 4
// (the low 4 bits of every hash zero), n hashes each: patterns that pile
// up in a table placed by the raw bits of the hashes, and random ones.
func adversarialSignatures(n int) map[string][]uint64 {
	const level = 4
	sigs := map[string][]uint64{}
	add := func(name string, f func(i int) uint64) {
		s := make([]uint64, n)
		for i := range s {
			s[i] = f(i) << level
		}
		slices.Sort(s)
		sigs[name] = slices.Compact(s)
	}
	add("consecutive", func(i int) uint64 { return uint64(i) })
	add("shared high bits", func(i int) uint64 { return 0xabcdef<<36 | uint64(i) })
	add("shared low bits", func(i int) uint64 { return uint64(i)<<40 | 0x1234 })
	add("one bit each", func(i int) uint64 { return uint64(i%56+1)<<uint(i%56) ^ uint64(i)<<50 })
	r := rand.New(rand.NewPCG(7, 7))
	add("random", func(int) uint64 { return r.Uint64() >> level })
	return sigs
}

// longestRun returns the longest run of occupied slots of t: what a probe
// may have to walk.
func longestRun(t *table) int {
	best, run := 0, 0
	for _, v := range append(t.vals, t.vals...) { // runs wrap around
		if v != 0 {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return min(best, len(t.vals))
}

// TestTablePlacementAdversarial: whatever hashes a client sends, the
// query's table has no long run of occupied slots (a table placed by the
// hashes' own top bits put every consecutive hash in one run, and a
// measure took time quadratic in the signature's length).
func TestTablePlacementAdversarial(t *testing.T) {
	const n = 1 << 18
	for name, sig := range adversarialSignatures(n) {
		q, err := NewSignatureQuery(int64(n)<<4, 4, sig)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tb := q.base(4, len(sig))
		// At most half full, a table placed at random has runs of a few
		// dozen slots for this many hashes; one placed by raw bits had a
		// run as long as the signature.
		if r := longestRun(tb); r > 400 {
			t.Errorf("%s: a run of %d occupied slots in a table of %d for %d hashes", name, r, len(tb.keys), len(sig))
		}
		q.Release()
	}
}

// TestMeasureAdversarialSignature: a measure of such a signature against a
// candidate is still exact: it finds the candidate's own windows among
// the client's chosen ones.
func TestMeasureAdversarialSignature(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	data := text(r, 200_000)
	own := Signature(data, 4)
	for name, sig := range adversarialSignatures(1 << 16) {
		all := slices.Clone(sig)
		all = append(all, own...)
		slices.Sort(all)
		all = slices.Compact(all)
		q, err := NewSignatureQuery(ExactLimit, 4, all) // sampled at level 4
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m, err := q.MeasureBytes(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.SharedWindows != len(own) || m.CandidateWindows != len(own) {
			t.Errorf("%s: shared %d and candidate %d windows, want %d", name, m.SharedWindows, m.CandidateWindows, len(own))
		}
		q.Release()
	}
}

// BenchmarkMeasureSignature measures signatures of 1<<18 hashes of each
// adversarial pattern against a 200 kB candidate: each pattern's time
// beside the random one's.
func BenchmarkMeasureSignature(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	data := text(r, 200_000)
	for _, name := range []string{"random", "consecutive", "shared high bits", "shared low bits", "one bit each"} {
		sig := adversarialSignatures(1 << 18)[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(sig) * 8))
			for b.Loop() {
				// Of a 1 MiB query, so that every pattern is measured at
				// level 4, with all its hashes.
				q, err := NewSignatureQuery(ExactLimit, 4, sig)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := q.MeasureBytes(data); err != nil {
					b.Fatal(err)
				}
				q.Release()
			}
		})
	}
}
