package fingerprint

import (
	"errors"
	"fmt"
	"math/bits"
)

// Scheme names a fingerprinting scheme.
type Scheme string

const (
	// Manber keeps W-byte windows whose Karp-Rabin hash has its low k bits
	// zero (Manber 1994, §2), with k lowered for small files (see
	// [Params.Level]).
	Manber Scheme = "manber"
	// Chunks keeps every content-defined chunk (normalized chunking with a
	// gear hash, bounded by a minimum and maximum chunk length).
	Chunks Scheme = "chunks"
)

// Params is a scheme with its parameters. The zero value of a field means
// the scheme's default; [Params.Normalize] fills them in. Two indexes or a
// query and an index are comparable only when their normalized Params are
// equal.
type Params struct {
	Scheme Scheme `json:"scheme" toml:"scheme"`

	// Window is W, the window length in bytes (manber). Default 40 (the
	// paper used 50).
	Window int `json:"window,omitempty" toml:"window"`
	// Bits is k: a window is kept when the low k bits of its hash are zero,
	// about one window in 2^k (manber). Default 9.
	Bits int `json:"bits,omitempty" toml:"bits"`
	// ModBits selects the Karp-Rabin modulus 2^ModBits: 30 as in the paper,
	// or 64 (manber). Default 64.
	ModBits int `json:"mod_bits,omitempty" toml:"mod_bits"`
	// MinBits is the least k a small file is sampled with (manber): a file
	// too small to get Target fingerprints at Bits is sampled more densely,
	// down to MinBits ([Params.Level]). Default 2 (or Bits, when less); set
	// it to Bits for one density whatever the size.
	MinBits int `json:"min_bits,omitempty" toml:"min_bits"`
	// Target is the number of windows a file is sampled for, at least, when
	// Bits would give it fewer (manber): its level is the largest k in
	// MinBits..Bits with Target·2^k at most its number of windows, so it
	// gets about Target to 2·Target fingerprints. Default 16.
	Target int `json:"target,omitempty" toml:"target"`

	// MinChunk, AvgChunk and MaxChunk bound the chunk lengths in bytes
	// (chunks). AvgChunk must be a power of two. Defaults 64, 256, 2048.
	MinChunk int `json:"min_chunk,omitempty" toml:"min_chunk"`
	AvgChunk int `json:"avg_chunk,omitempty" toml:"avg_chunk"`
	MaxChunk int `json:"max_chunk,omitempty" toml:"max_chunk"`
}

// DefaultParams returns the scheme and density sif uses when none is
// configured. They were chosen by measurement (see SCHEMES.md in this
// directory, "Choosing the scheme").
func DefaultParams() Params {
	p, _ := Params{Scheme: Manber}.Normalize()
	return p
}

// ErrParams is wrapped by every error about invalid parameters.
var ErrParams = errors.New("fingerprint: invalid parameters")

// Normalize returns p with defaults filled in for its scheme and the fields of
// other schemes cleared, or an error wrapping [ErrParams] that names the bad
// field. An empty scheme means the default scheme.
func (p Params) Normalize() (Params, error) {
	switch p.Scheme {
	case "":
		d := DefaultParams()
		if p.Window == 0 && p.Bits == 0 && p.ModBits == 0 && p.MinBits == 0 && p.Target == 0 && p.MinChunk == 0 && p.AvgChunk == 0 && p.MaxChunk == 0 {
			return d, nil
		}
		p.Scheme = d.Scheme
		return p.Normalize()
	case Manber:
		q := Params{Scheme: Manber, Window: p.Window, Bits: p.Bits, ModBits: p.ModBits, MinBits: p.MinBits, Target: p.Target}
		if q.Window == 0 {
			q.Window = 40 // the paper's 50 loses recall on scattered edits; see SCHEMES.md
		}
		if q.Bits == 0 {
			q.Bits = 9
		}
		if q.ModBits == 0 {
			q.ModBits = 64
		}
		if q.MinBits == 0 {
			q.MinBits = min(2, q.Bits) // see SCHEMES.md, "Small files"
		}
		if q.Target == 0 {
			q.Target = 16
		}
		switch {
		case q.Window < 8 || q.Window > 4096:
			return Params{}, fmt.Errorf("%w: window %d: want 8..4096 bytes", ErrParams, q.Window)
		case q.Bits < 0 || q.Bits > 16:
			return Params{}, fmt.Errorf("%w: bits %d: want 0..16", ErrParams, q.Bits)
		case q.ModBits != 30 && q.ModBits != 64:
			return Params{}, fmt.Errorf("%w: mod_bits %d: want 30 or 64", ErrParams, q.ModBits)
		case q.MinBits < 0 || q.MinBits > q.Bits:
			return Params{}, fmt.Errorf("%w: min_bits %d: want 0..bits (%d)", ErrParams, q.MinBits, q.Bits)
		case q.Target < 1 || q.Target > 1<<20:
			return Params{}, fmt.Errorf("%w: target %d: want 1..1048576 fingerprints", ErrParams, q.Target)
		}
		return q, nil
	case Chunks:
		q := Params{Scheme: Chunks, MinChunk: p.MinChunk, AvgChunk: p.AvgChunk, MaxChunk: p.MaxChunk}
		if q.AvgChunk == 0 {
			q.AvgChunk = 256
		}
		if q.MinChunk == 0 {
			q.MinChunk = q.AvgChunk / 4
		}
		if q.MaxChunk == 0 {
			q.MaxChunk = q.AvgChunk * 8
		}
		switch {
		case q.AvgChunk < 16 || q.AvgChunk > 1<<20 || q.AvgChunk&(q.AvgChunk-1) != 0:
			return Params{}, fmt.Errorf("%w: avg_chunk %d: want a power of two in 16..1048576", ErrParams, q.AvgChunk)
		case q.MinChunk < 1 || q.MinChunk >= q.AvgChunk:
			return Params{}, fmt.Errorf("%w: min_chunk %d: want 1..avg_chunk-1 (%d)", ErrParams, q.MinChunk, q.AvgChunk-1)
		case q.MaxChunk <= q.AvgChunk || q.MaxChunk > 1<<24:
			return Params{}, fmt.Errorf("%w: max_chunk %d: want avg_chunk+1..16777216", ErrParams, q.MaxChunk)
		}
		return q, nil
	default:
		return Params{}, fmt.Errorf("%w: scheme %q: want %q or %q", ErrParams, p.Scheme, Manber, Chunks)
	}
}

// String renders p compactly, e.g. "manber(window=40,bits=8,mod_bits=64)".
func (p Params) String() string {
	switch p.Scheme {
	case Manber:
		return fmt.Sprintf("manber(window=%d,bits=%d,mod_bits=%d)", p.Window, p.Bits, p.ModBits)
	case Chunks:
		return fmt.Sprintf("chunks(min_chunk=%d,avg_chunk=%d,max_chunk=%d)", p.MinChunk, p.AvgChunk, p.MaxChunk)
	default:
		return fmt.Sprintf("%q", string(p.Scheme))
	}
}

// KnowsLengths reports whether the scheme's features carry the lengths of
// the bytes they cover, so shared weight is a lower bound on shared bytes.
func (p Params) KnowsLengths() bool { return p.Scheme == Chunks }

// Weight returns what one occurrence of f counts for under p: 1 for manber,
// the chunk length for chunks.
func (p Params) Weight(f Feature) uint64 {
	if p.Scheme == Chunks {
		return uint64(f.Len)
	}
	return 1
}

// Level returns the sampling level of a stream of size bytes under
// normalized p: the k its windows are kept with (manber), or 0 (chunks).
// It is the largest k in MinBits..Bits with Target·2^k at most the number
// of windows, size−Window+1 (MinBits when there are fewer than Target):
// a large file is sampled at Bits, a small one more densely, so that it
// gets about Target to 2·Target fingerprints. Since a window kept at level
// k has its low k bits zero, it is also kept at every lower level: two
// files are compared at the higher of their two levels ([Compare]).
func (p Params) Level(size int64) int {
	if p.Scheme != Manber {
		return 0
	}
	n := size - int64(p.Window) + 1
	k := p.MinBits
	for k < p.Bits && int64(p.Target)<<(k+1) <= n {
		k++
	}
	return k
}

// HashLevel returns the level of a fingerprint hash under normalized p: the
// highest level at which its window is kept, MinBits plus the number of
// trailing zero bits of the hash, at most Bits (manber); 0 for chunks.
func (p Params) HashLevel(hash uint64) int {
	if p.Scheme != Manber {
		return 0
	}
	if hash == 0 {
		return p.Bits
	}
	return min(p.Bits, p.MinBits+bits.TrailingZeros64(hash))
}
