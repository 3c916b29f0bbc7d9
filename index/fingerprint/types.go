package fingerprint

import (
	"cmp"
	"fmt"
	"slices"
)

// Fingerprint is one kept piece of a stream.
type Fingerprint struct {
	Hash   uint64 // equal pieces have equal hashes
	Offset int64  // of the piece's first byte in the stream
	Len    uint32 // bytes covered: the window (manber) or the chunk (chunks)
}

// Feature is a distinct fingerprint hash of one file and how often it occurs.
type Feature struct {
	Hash  uint64
	Count uint32 // occurrences in the file, at least 1
	Len   uint32 // bytes one occurrence covers
}

// Type is a coarse content type. Manber compares only files of one type.
type Type uint8

const (
	TypeUnknown Type = iota
	TypeText
	TypeBinary
)

func (t Type) String() string {
	switch t {
	case TypeText:
		return "text"
	case TypeBinary:
		return "binary"
	default:
		return "unknown"
	}
}

// MarshalText encodes t as "text", "binary" or "unknown".
func (t Type) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText is the inverse of MarshalText.
func (t *Type) UnmarshalText(b []byte) error {
	switch string(b) {
	case "text":
		*t = TypeText
	case "binary":
		*t = TypeBinary
	case "unknown", "":
		*t = TypeUnknown
	default:
		return fmt.Errorf("fingerprint: unknown type %q: want text or binary", b)
	}
	return nil
}

// NumTags is the number of SimiHash tags.
const NumTags = 16

// SumTable counts, per SimiHash tag, the non-overlapping matches of the tag
// at every bit offset of the stream.
type SumTable [NumTags]uint32

// Distance is the SimiHash sum-table distance: the sum of the absolute
// differences of the entries.
func (s SumTable) Distance(o SumTable) uint64 {
	var d uint64
	for i := range s {
		if s[i] > o[i] {
			d += uint64(s[i] - o[i])
		} else {
			d += uint64(o[i] - s[i])
		}
	}
	return d
}

// Summary is what every file gets whatever the scheme.
type Summary struct {
	Size   int64    // bytes written to the Sketcher
	Strong [32]byte // SHA-256 of the content
	Type   Type
	Sum    SumTable // SimiHash sum table
	Key    uint32   // SimiHash skew key (a weighted sum of four tags)
}

// Sketch is a file's features, sorted by hash with no hash twice, and its
// summary.
type Sketch struct {
	Summary
	Params   Params
	Features []Feature
}

// Weight returns the total weight of s's features under s.Params.
func (s *Sketch) Weight() uint64 {
	var w uint64
	for _, f := range s.Features {
		w += uint64(f.Count) * s.Params.Weight(f)
	}
	return w
}

// Level returns the level s was sampled at: s.Params.Level(s.Size).
func (s *Sketch) Level() int { return s.Params.Level(s.Size) }

// WeightAt returns the total weight of s's features of level lvl or above
// ([Params.HashLevel]): its weight had it been sampled at lvl, when lvl is
// at least its own level.
func (s *Sketch) WeightAt(lvl int) uint64 {
	var w uint64
	for _, f := range s.Features {
		if s.Params.HashLevel(f.Hash) >= lvl {
			w += uint64(f.Count) * s.Params.Weight(f)
		}
	}
	return w
}

// Occurrences returns the number of fingerprints s was built from.
func (s *Sketch) Occurrences() uint64 {
	var n uint64
	for _, f := range s.Features {
		n += uint64(f.Count)
	}
	return n
}

// Collector gathers emitted fingerprints into features. Its Add method is an
// emit callback for [NewSketcher]. It appends each fingerprint to a list,
// which it sorts by hash and folds into features (one per distinct hash,
// with its count) when Features is called, and whenever the list has
// doubled since the last fold: it holds at most about twice as many entries
// as the stream has distinct hashes, plus collectorFold. A map from hash to
// feature, updated at each fingerprint and sorted by reflection at the end,
// took 3.5 to 4.5 times as long on source-like text of 9 and 64 KB
// (BenchmarkCollector).
type Collector struct {
	fs     []Feature // features folded (fs[:folded], sorted, distinct), then fingerprints
	folded int
	next   int // len(fs) at which to fold again
}

// collectorFold is the number of entries a Collector appends before its
// first fold; a variable so that tests can make it small.
var collectorFold = 1 << 16

// Add records one occurrence of fp.
func (c *Collector) Add(fp Fingerprint) {
	if len(c.fs) >= c.next && len(c.fs) >= collectorFold {
		c.fold()
		c.next = 2 * len(c.fs)
	}
	c.fs = append(c.fs, Feature{Hash: fp.Hash, Count: 1, Len: fp.Len})
}

// fold sorts c.fs by hash and folds the entries of one hash into one
// feature: their counts summed, the largest of their lengths (equal hashes
// cover equal bytes, so their lengths differ only if two pieces collide).
func (c *Collector) fold() {
	if c.folded == len(c.fs) {
		return
	}
	slices.SortFunc(c.fs, func(a, b Feature) int { return cmp.Compare(a.Hash, b.Hash) })
	out := c.fs[:0]
	for _, f := range c.fs {
		if n := len(out); n > 0 && out[n-1].Hash == f.Hash {
			out[n-1].Count += f.Count
			out[n-1].Len = max(out[n-1].Len, f.Len)
			continue
		}
		out = append(out, f)
	}
	c.fs, c.folded = out, len(out)
}

// Features returns the collected features sorted by hash. The caller owns
// the slice.
func (c *Collector) Features() []Feature {
	c.fold()
	return append(make([]Feature, 0, len(c.fs)), c.fs...)
}

// Reset forgets everything collected. It keeps the list's memory for the
// next stream, unless a large stream grew it past collectorFold entries.
func (c *Collector) Reset() {
	if cap(c.fs) > collectorFold {
		c.fs = nil
	}
	c.fs, c.folded, c.next = c.fs[:0], 0, 0
}
