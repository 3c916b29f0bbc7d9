package fingerprint

import (
	"fmt"
	"math"
)

// SimiFind (Sadowski and Levin 2011, §4.3) judges two files by their
// SimiHash summaries in three steps, from the cheapest to the finest:
//
//  1. keys: the candidate's skew key must lie within the key tolerance of
//     the query's. Keys grow about in proportion to a file's size, so the
//     tolerance is a fraction of the query's size; an index keeps keys in
//     order, and this step is one range of them.
//  2. sizes: the smaller of the two sizes must be at least SizeRatio of
//     the larger.
//  3. sum tables: the L1 distance of the two sum tables must be within the
//     sum tolerance, also a fraction of the query's size.
//
// A pair whose sum tables are equal is then checked for identity: equal
// sizes and strong hashes.
//
// What it finds is near-identical files: an edit changes only the tag
// matches of the bits around it, so each changed byte moves the sum table
// by a couple of matches at most, and a file differing in a few percent of
// its bytes stays within the tolerances. Files that merely share a part
// (one contained in another, two versions a quarter apart) are not what it
// finds: manber's containment is for those. Its known weaknesses are those
// of counting: files that are mostly one large header (PostScript), and
// large files of random-looking data, whose counts all tend to the same
// averages, look alike to it.

// Tolerances are SimiFind's parameters. The zero value of a field means its
// default (DefaultTolerances).
type Tolerances struct {
	// Key is the key tolerance as a fraction of the query's size: a
	// candidate's skew key is within Key·size of the query's.
	Key float64 `json:"key,omitempty"`
	// SizeRatio is the least ratio of the smaller size to the larger.
	SizeRatio float64 `json:"size_ratio,omitempty"`
	// Sum is the sum-table tolerance as a fraction of the query's size:
	// the L1 distance of the sum tables is within Sum·size.
	Sum float64 `json:"sum,omitempty"`
}

// DefaultTolerances returns SimiFind's default tolerances: keys within 2 %
// of the query's size, sizes within 5 % of each other (a ratio of 0.95),
// sum tables within 2 % of the query's size.
//
// They were chosen on 214 Go source files of 2 to 200 KB (a sample of Go's
// own sources), each against a copy with a share of its bytes replaced by
// random letters. With 1 % replaced, the key distance was at most 0.7 % of
// the size and the sum distance 1.1 % (99th percentiles); with 2 %, 1.4 %
// and 2.1 %. Unrelated files of neighbouring sizes were at least 2.2 % of
// their size apart in sum distance, 7 % for the closest hundredth, and 19 %
// at the median. Random bytes are the hard case (their counts all tend to
// the same means): two unrelated random files are about 5 % apart at 4 KB
// but 1.2 % at 64 KB, within the default sum tolerance.
func DefaultTolerances() Tolerances {
	return Tolerances{Key: 0.02, SizeRatio: 0.95, Sum: 0.02}
}

// Normalize returns t with the defaults filled in for its zero fields, or
// an error naming a field out of range.
func (t Tolerances) Normalize() (Tolerances, error) {
	d := DefaultTolerances()
	if t.Key == 0 {
		t.Key = d.Key
	}
	if t.SizeRatio == 0 {
		t.SizeRatio = d.SizeRatio
	}
	if t.Sum == 0 {
		t.Sum = d.Sum
	}
	switch {
	case !(t.Key > 0 && t.Key <= 16):
		return Tolerances{}, fmt.Errorf("fingerprint: key tolerance %v: want a fraction of the size in (0, 16]", t.Key)
	case !(t.SizeRatio > 0 && t.SizeRatio <= 1):
		return Tolerances{}, fmt.Errorf("fingerprint: size ratio %v: want (0, 1]", t.SizeRatio)
	case !(t.Sum > 0 && t.Sum <= 16):
		return Tolerances{}, fmt.Errorf("fingerprint: sum tolerance %v: want a fraction of the size in (0, 16]", t.Sum)
	}
	return t, nil
}

// KeyTolerance returns the key tolerance for a query of size bytes under
// normalized t.
func (t Tolerances) KeyTolerance(size int64) uint64 { return fracOf(t.Key, size) }

// SumTolerance returns the sum-table tolerance for a query of size bytes
// under normalized t.
func (t Tolerances) SumTolerance(size int64) uint64 { return fracOf(t.Sum, size) }

// SizesClose reports whether sizes a and b are within t.SizeRatio of each
// other. Two empty files are.
func (t Tolerances) SizesClose(a, b int64) bool {
	lo, hi := min(a, b), max(a, b)
	return hi == 0 || float64(lo) >= t.SizeRatio*float64(hi)
}

func fracOf(f float64, size int64) uint64 {
	v := f * float64(max(size, 0))
	if v >= math.MaxUint64/2 {
		return math.MaxUint64 / 2
	}
	return uint64(v)
}

// KeyRange returns the least and greatest keys within the key tolerance of
// a query with key key and size bytes, under normalized t.
func (t Tolerances) KeyRange(key uint32, size int64) (lo, hi uint32) {
	tol := t.KeyTolerance(size)
	lo, hi = 0, math.MaxUint32
	if uint64(key) > tol {
		lo = key - uint32(tol)
	}
	if tol < math.MaxUint32-uint64(key) {
		hi = key + uint32(tol)
	}
	return lo, hi
}

// SimiVerdict is SimiFind's judgement of a candidate against a query.
type SimiVerdict struct {
	KeyDistance  uint64 // |key of the query − key of the candidate|
	KeyTolerance uint64 // the largest key distance a candidate may have
	SizesClose   bool   // the sizes are within the size ratio
	SumDistance  uint64 // the L1 distance of the sum tables
	SumTolerance uint64 // the largest sum distance a similar candidate may have
	// Similar is SimiFind's answer: key distance and sum distance within
	// their tolerances, and sizes close.
	Similar bool
	// Identical is set when the sum distance is zero and the sizes and
	// strong hashes are equal (and known).
	Identical bool
}

// Judge judges candidate c against query q under normalized t, the
// tolerances taken from q's size.
func (t Tolerances) Judge(q, c *Summary) SimiVerdict {
	v := SimiVerdict{
		KeyDistance:  keyDistance(q.Key, c.Key),
		KeyTolerance: t.KeyTolerance(q.Size),
		SizesClose:   t.SizesClose(q.Size, c.Size),
		SumDistance:  q.Sum.Distance(c.Sum),
		SumTolerance: t.SumTolerance(q.Size),
	}
	v.Similar = v.KeyDistance <= v.KeyTolerance && v.SizesClose && v.SumDistance <= v.SumTolerance
	v.Identical = v.SumDistance == 0 && q.Size == c.Size && q.Strong == c.Strong && q.Strong != ([32]byte{})
	return v
}

func keyDistance(a, b uint32) uint64 {
	if a > b {
		return uint64(a - b)
	}
	return uint64(b - a)
}
