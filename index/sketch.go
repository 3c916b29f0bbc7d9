package index

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sif-dev/sif/index/fingerprint"
)

// entry is one feature of a file as the index stores it: a fingerprint key
// and its weight in the file, summed over every hash of the file with that
// key.
type entry struct {
	key    uint32
	weight uint64
	// level is the fingerprint.Params.HashLevel of the entry's hash (the
	// least of them, if several hashes share the key). Only entries made
	// from a sketch have it: forward lists do not store it.
	level uint8
}

// fingerprintKey returns the 32-bit fingerprint key of a 64-bit fingerprint
// hash: the high half of murmur3's fmix64 finalizer of it. fmix64 is a
// bijection that spreads every input bit over every output bit, so the key
// uses the whole hash even when the scheme fills only some of its bits
// (manber with mod_bits=30 gives hashes of 22 significant bits), and keys
// are uniform whatever the hashes look like. The function is part of the
// storage format: changing it needs a new format version.
func fingerprintKey(hash uint64) uint32 {
	h := hash
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return uint32(h >> 32)
}

// sketchEntries checks that sk was made with the index's parameters (zero
// Params are taken to be the index's) and returns its entries.
func (ix *Index) sketchEntries(sk *fingerprint.Sketch) ([]entry, error) {
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
	return entriesOf(ix.params, sk.Features, ix.params.Level(sk.Size)), nil
}

// entriesOf returns the entries of features fs under p, in canonical form:
// sorted by fingerprint key, no key twice, no zero weight. A feature weighs
// count × p.Weight (1 per occurrence for manber, the chunk length for
// chunks); features whose hashes share a key are merged into one entry
// whose weight is the sum of theirs. fs need not be sorted and may repeat a
// hash; features of weight 0, and those below level lvl (which a file of
// that level does not keep: fingerprint.Params.HashLevel), are dropped. The
// caller owns the result.
func entriesOf(p fingerprint.Params, fs []fingerprint.Feature, lvl int) []entry {
	es := make([]entry, 0, len(fs))
	sorted := true
	for _, f := range fs {
		w := satMul(uint64(f.Count), p.Weight(f))
		if w == 0 || p.HashLevel(f.Hash) < lvl {
			continue
		}
		e := entry{key: fingerprintKey(f.Hash), weight: w, level: uint8(p.HashLevel(f.Hash))}
		if n := len(es); n > 0 && es[n-1].key >= e.key {
			sorted = false
		}
		es = append(es, e)
	}
	if sorted {
		return es
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.key, b.key) })
	n := 0
	for _, e := range es {
		if n > 0 && es[n-1].key == e.key {
			es[n-1].weight = satAdd(es[n-1].weight, e.weight)
			es[n-1].level = min(es[n-1].level, e.level)
			continue
		}
		es[n] = e
		n++
	}
	return es[:n]
}

// levelWeights returns the weights of es, entries of a file of level lvl
// (those made by sketchEntries), at each level above lvl up to top: the
// FileRecord.LevelWeights of the file.
func levelWeights(es []entry, lvl, top int) []uint64 {
	if lvl >= top {
		return nil
	}
	ws := make([]uint64, top-lvl)
	for _, e := range es {
		for l := lvl + 1; l <= min(int(e.level), top); l++ {
			ws[l-lvl-1] = satAdd(ws[l-lvl-1], e.weight)
		}
	}
	return ws
}

// totalWeight returns the weight of es.
func totalWeight(es []entry) uint64 {
	var w uint64
	for _, e := range es {
		w = satAdd(w, e.weight)
	}
	return w
}

// satAdd and satMul add and multiply, saturating at math.MaxUint64 rather
// than wrapping. No real file comes near; a crafted sketch must not make
// weights wrap around.
func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}
