package server

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestFingerprintRangeEnds: the two ends of the range, as their
// definition computes them for a 30,000-byte query and basis (level 9:
// 58.5 fingerprints compared; blocks of 256 bytes), and the estimate their
// geometric mean.
func TestFingerprintRangeEnds(t *testing.T) {
	p := fingerprint.DefaultParams()
	for _, tc := range []struct {
		c                float64
		size, basis      int64
		wantLow, wantHig int64
	}{
		// 0.6·0.2·30000 + 256/2; f = (0.2·58.52+1)/59.52, 30000·(1−(1−f)^12.8).
		{0.8, 30000, 30000, 5 + 3600 + 128, 5 + 28612 + 8},
		// Every fingerprint held: half a block at the low end; one unseen
		// change in 59.52 fingerprints' windows at the high end.
		{1, 30000, 30000, 5 + 128, 5 + 5849 + 8},
		// Nothing held: the whole query as literals at the high end.
		{0, 30000, 30000, 5 + 18128, 5 + 30000 + 8},
		// More held than the query has (rounding): as 1.
		{1.2, 30000, 30000, 5 + 128, 5 + 5849 + 8},
		// The low end never exceeds the query; a basis of 1 MiB has
		// blocks of 1024 bytes.
		{0, 100, 1 << 20, 5 + 100, 5 + 100 + 8},
	} {
		low, est, high := fingerprintRange(tc.c, tc.size, tc.basis, p)
		if low != tc.wantLow || math.Abs(float64(high-tc.wantHig)) > 1 {
			t.Errorf("containment %v, size %d, basis %d: range %d..%d, want %d..%d", tc.c, tc.size, tc.basis, low, high, tc.wantLow, tc.wantHig)
		}
		if want := int64(math.Round(math.Sqrt(float64(low) * float64(high)))); est != want {
			t.Errorf("containment %v: estimate %d, want the geometric mean of %d and %d, %d", tc.c, est, low, high, want)
		}
	}
}

// TestFingerprintRangeOrdered: over sizes, bases and containments (and
// NaN), low <= estimate <= high, the low end at least rdiff's 5 fixed
// bytes, the high end no more than the query sent whole; and more
// containment never raises either end.
func TestFingerprintRangeOrdered(t *testing.T) {
	for _, p := range []fingerprint.Params{fingerprint.DefaultParams(), mustParams(t, fingerprint.Params{Scheme: fingerprint.Chunks})} {
		for _, size := range []int64{0, 1, 40, 300, 4096, 30000, 1 << 20, 1 << 30} {
			for _, basis := range []int64{0, 1, 300, 30000, 1 << 20, 1 << 34} {
				prevLow, prevHigh := int64(math.MaxInt64), int64(math.MaxInt64)
				for _, c := range []float64{math.NaN(), -1, 0, 0.1, 0.5, 0.9, 0.99, 1, 2} {
					low, est, high := fingerprintRange(c, size, basis, p)
					if !(deltaFixed <= low && low <= est && est <= high && high <= size+deltaFixed+deltaOverLiteral) {
						t.Fatalf("%s, containment %v, size %d, basis %d: %d <= %d <= %d out of order or bounds", p.Scheme, c, size, basis, low, est, high)
					}
					if low > prevLow || high > prevHigh {
						t.Errorf("%s, size %d, basis %d: containment %v raised the range to %d..%d from %d..%d", p.Scheme, size, basis, c, low, high, prevLow, prevHigh)
					}
					prevLow, prevHigh = low, high
				}
			}
		}
	}
}

// TestFingerprintRangeHoldsDeltas: for a text edited in one run and in
// scattered runs (10 to 40 % of its bytes), the delta rdiff would make
// (exact.DeltaCost) lies in the range estimated from the containment of
// the edited text's fingerprints in the original.
func TestFingerprintRangeHoldsDeltas(t *testing.T) {
	p := fingerprint.DefaultParams()
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 77))
		base := text(byte(seed), 20000+r.IntN(40000))
		for _, frac := range []float64{0.1, 0.2, 0.4} {
			for _, run := range []int{int(frac * float64(len(base))), 40} {
				q := append([]byte(nil), base...)
				for n := 0; float64(n) < frac*float64(len(q)); n += run {
					at := r.IntN(len(q) - run)
					copy(q[at:], text(byte(r.Uint32()), run))
				}
				sb, err := fingerprint.SketchQuery(bytes.NewReader(base), p)
				if err != nil {
					t.Fatal(err)
				}
				sq, err := fingerprint.SketchQuery(bytes.NewReader(q), p)
				if err != nil {
					t.Fatal(err)
				}
				c := fingerprint.Compare(sq, sb).AInB
				d, err := exact.DeltaCost(bytes.NewReader(base), int64(len(base)), q)
				if err != nil {
					t.Fatal(err)
				}
				low, est, high := fingerprintRange(c, int64(len(q)), int64(len(base)), p)
				if d.Bytes < low || d.Bytes > high {
					t.Errorf("seed %d, %.0f %% changed in runs of %d bytes: containment %.3f, range %d..%d (estimate %d), rdiff's delta %d", seed, 100*frac, run, c, low, high, est, d.Bytes)
				}
			}
		}
	}
}
