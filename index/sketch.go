package index

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sif-dev/sif/index/fingerprint"
)

// sketchFeatures checks that sk was made with the index's parameters (zero
// Params are taken to be the index's) and returns its features in canonical
// form: sorted by hash, no hash twice, no zero count. It returns
// sk.Features itself when they are canonical already, else a copy.
func (ix *Index) sketchFeatures(sk *fingerprint.Sketch) ([]fingerprint.Feature, error) {
	if sk == nil {
		return nil, errors.New("no sketch")
	}
	if sk.Params != (fingerprint.Params{}) {
		p, err := sk.Params.Normalize()
		if err != nil || p != ix.params {
			return nil, fmt.Errorf("%w: the sketch was made with %s, the index uses %s",
				ErrParamsMismatch, sk.Params, ix.params)
		}
	}
	return canonical(sk.Features), nil
}

// canonical returns fs sorted by hash with equal hashes merged (their counts
// added) and zero counts dropped; fs itself when it is so already.
func canonical(fs []fingerprint.Feature) []fingerprint.Feature {
	ok := true
	for i, f := range fs {
		if f.Count == 0 || i > 0 && fs[i-1].Hash >= f.Hash {
			ok = false
			break
		}
	}
	if ok {
		return fs
	}
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b fingerprint.Feature) int { return cmp.Compare(a.Hash, b.Hash) })
	n := 0
	for _, f := range out {
		switch {
		case f.Count == 0:
		case n > 0 && out[n-1].Hash == f.Hash:
			out[n-1].Count = uint32(min(uint64(out[n-1].Count)+uint64(f.Count), math.MaxUint32))
			out[n-1].Len = max(out[n-1].Len, f.Len)
		default:
			out[n] = f
			n++
		}
	}
	return out[:n]
}

// totalWeight returns the weight of fs under p.
func totalWeight(p fingerprint.Params, fs []fingerprint.Feature) uint64 {
	var w uint64
	for _, f := range fs {
		w += uint64(f.Count) * p.Weight(f)
	}
	return w
}
