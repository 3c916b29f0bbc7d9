package fingerprint

// Comparison is what two sketches share.
type Comparison struct {
	// SharedWeight is the weight of the features both sketches hold, each
	// counted min(count in A, count in B) times.
	SharedWeight uint64
	// SharedFeatures is the number of distinct hashes both sketches hold.
	SharedFeatures int
	WeightA        uint64
	WeightB        uint64
	// Containment of A in B (share of A's weight found in B) and of B in A,
	// and the resemblance (shared over union weight), all in 0..1.
	AInB        float64
	BInA        float64
	Resemblance float64
	// SharedBytes is SharedWeight when the scheme knows lengths (a lower
	// bound on the bytes A and B have in common), else -1.
	SharedBytes int64
	Identical   bool // equal strong hash and size
	// SumDistance is the SimiHash sum-table distance.
	SumDistance uint64
}

// Compare compares two sketches made with equal Params. The features of both
// must be sorted by hash, as a [Sketch]'s are. Sketches of two levels
// ([Params.Level]) are compared at the higher one, as if both had been
// sampled at it: only features of that level or above count, in the shared
// weight and in WeightA and WeightB.
func Compare(a, b *Sketch) Comparison {
	lvl := max(a.Level(), b.Level())
	c := Comparison{WeightA: a.WeightAt(lvl), WeightB: b.WeightAt(lvl), SharedBytes: -1}
	i, j := 0, 0
	for i < len(a.Features) && j < len(b.Features) {
		fa, fb := a.Features[i], b.Features[j]
		switch {
		case fa.Hash < fb.Hash:
			i++
		case fa.Hash > fb.Hash:
			j++
		default:
			if a.Params.HashLevel(fa.Hash) >= lvl {
				c.SharedWeight += uint64(min(fa.Count, fb.Count)) * a.Params.Weight(fa)
				c.SharedFeatures++
			}
			i++
			j++
		}
	}
	c.AInB = Ratio(c.SharedWeight, c.WeightA)
	c.BInA = Ratio(c.SharedWeight, c.WeightB)
	c.Resemblance = Ratio(c.SharedWeight, c.WeightA+c.WeightB-c.SharedWeight)
	if a.Params.KnowsLengths() {
		c.SharedBytes = int64(c.SharedWeight)
	}
	c.Identical = a.Size == b.Size && a.Strong == b.Strong
	c.SumDistance = a.Sum.Distance(b.Sum)
	return c
}

// Ratio returns num/den, or 0 when den is 0.
func Ratio(num, den uint64) float64 {
	if den == 0 {
		return 0
	}
	return float64(num) / float64(den)
}
