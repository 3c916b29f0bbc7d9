package fingerprint

import (
	"fmt"
	"sort"
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
// emit callback for [NewSketcher]. It holds one entry per distinct hash.
type Collector struct {
	m map[uint64]Feature
}

// Add records one occurrence of fp.
func (c *Collector) Add(fp Fingerprint) {
	if c.m == nil {
		c.m = make(map[uint64]Feature)
	}
	f := c.m[fp.Hash]
	f.Hash = fp.Hash
	f.Count++
	f.Len = fp.Len
	c.m[fp.Hash] = f
}

// Features returns the collected features sorted by hash. The caller owns
// the slice.
func (c *Collector) Features() []Feature {
	out := make([]Feature, 0, len(c.m))
	for _, f := range c.m {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Hash < out[j].Hash })
	return out
}

// Reset forgets everything collected.
func (c *Collector) Reset() { clear(c.m) }
