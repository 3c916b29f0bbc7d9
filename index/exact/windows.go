package exact

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
)

// Window is the length of a window, in bytes.
const Window = 32

// Prime is the Karp-Rabin multiplier of window hashes.
const Prime uint64 = 0x9e3779b97f4a7c55

// Limits of the measures (see the package doc).
const (
	// ExactLimit is the largest file measured exactly: a query or a
	// candidate larger than this is measured on samples.
	ExactLimit = 1 << 20
	// MaxSamples is about the most windows a sampled measure keeps of a
	// file: LevelFor picks the level that keeps at most this many.
	MaxSamples = 1 << 16
	// MaxLevel is the highest level a signature may have.
	MaxLevel = 32
	// MinSignatureLevel is the level SignatureLevel never goes below, so a
	// signature costs at most about 1/16 of the file's windows.
	MinSignatureLevel = 4
)

// ErrBadSignature: a signature that is not sorted, has repeats, or has a
// hash that its level would not keep.
var ErrBadSignature = errors.New("exact: bad signature")

// pow32 is Prime^32, the weight of the byte leaving a window.
var pow32 = func() uint64 {
	x := uint64(1)
	for range Window {
		x *= Prime
	}
	return x
}()

// fmix64 is murmur3's 64-bit finalizer, a bijection.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Hasher computes the hashes of the windows of a stream. The zero value is
// ready to use.
type Hasher struct {
	f    uint64
	ring [Window]byte
	pos  int
	n    int64 // bytes seen
}

// Append appends to dst the hash of every window that ends in p, in order,
// and returns the extended slice.
func (h *Hasher) Append(dst []uint64, p []byte) []uint64 { return h.AppendKept(dst, p, 0) }

// AppendKept is Append keeping only the hashes whose bits under mask are
// zero: with a level's mask, that level's sample, the others never stored
// (a sampled measure of a large file keeps one hash in 2^level).
func (h *Hasher) AppendKept(dst []uint64, p []byte, mask uint64) []uint64 {
	f, n := h.f, h.n
	ring := &h.ring
	// The first bytes of p push out the bytes of the ring, the others the
	// bytes of p Window before them.
	head := min(len(p), Window)
	for i, c := range p[:head] {
		out := ring[(h.pos+i)&(Window-1)]
		// The ring starts zeroed, so before the first full window the
		// byte leaving is 0 and contributes nothing.
		f = f*Prime + uint64(c) - uint64(out)*pow32
		n++
		if x := fmix64(f); n >= Window && x&mask == 0 {
			dst = append(dst, x)
		}
	}
	if len(p) > Window {
		if mask == 0 {
			dst = slices.Grow(dst, len(p)-head)
			for i := head; i < len(p); i++ {
				f = f*Prime + uint64(p[i]) - uint64(p[i-Window])*pow32
				dst = append(dst, fmix64(f))
			}
		} else {
			for i := head; i < len(p); i++ {
				f = f*Prime + uint64(p[i]) - uint64(p[i-Window])*pow32
				if x := fmix64(f); x&mask == 0 {
					dst = append(dst, x)
				}
			}
		}
		n += int64(len(p) - head)
	}
	// Keep the last Window bytes in the ring, oldest at pos.
	if len(p) >= Window {
		copy(ring[:], p[len(p)-Window:])
		h.pos = 0
	} else {
		for i, c := range p {
			ring[(h.pos+i)&(Window-1)] = c
		}
		h.pos = (h.pos + len(p)) & (Window - 1)
	}
	h.f, h.n = f, n
	return dst
}

// Reset makes h ready for a new stream.
func (h *Hasher) Reset() { *h = Hasher{} }

// Hashes returns the hash of every window of data, in order.
func Hashes(data []byte) []uint64 {
	var h Hasher
	return h.Append(make([]uint64, 0, max(len(data)-Window+1, 0)), data)
}

// Keep reports whether a level L sample keeps the window of hash h.
func Keep(h uint64, level int) bool { return h&levelMask(level) == 0 }

func levelMask(level int) uint64 {
	if level >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(level) - 1
}

// LevelFor returns the level at which a file of size bytes is sampled: 0
// (every window, an exact measure) up to ExactLimit, else the lowest level
// that keeps about MaxSamples windows or fewer.
func LevelFor(size int64) int {
	if size <= ExactLimit {
		return 0
	}
	l := 0
	for size>>uint(l) > MaxSamples {
		l++
	}
	return l
}

// SignatureLevel returns the level of the signature a client sends for a
// file of size bytes: at least MinSignatureLevel, and at least LevelFor's
// past MaxSamples << MinSignatureLevel bytes, so a signature holds at most
// about MaxSamples hashes (8 bytes each).
func SignatureLevel(size int64) int {
	l := MinSignatureLevel
	for size>>uint(l) > MaxSamples {
		l++
	}
	return l
}

// Signature returns the level L sample of data's window set: the distinct
// kept hashes, sorted ascending.
func Signature(data []byte, level int) []uint64 {
	return SignatureOf(Hashes(data), level)
}

// SignatureOf returns the level L sample of a window set given as the
// hashes of a file's windows (in any order, with repeats). It sorts and
// reuses hs.
func SignatureOf(hs []uint64, level int) []uint64 {
	m := levelMask(level)
	out := hs[:0]
	for _, h := range hs {
		if h&m == 0 {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CheckSignature checks that sig is a level L sample: sorted, without
// repeats, every hash kept at level. Errors wrap ErrBadSignature and name
// the index.
func CheckSignature(sig []uint64, level int) error {
	if level < 0 || level > MaxLevel {
		return fmt.Errorf("%w: level %d: want 0 to %d", ErrBadSignature, level, MaxLevel)
	}
	m := levelMask(level)
	for i, h := range sig {
		if h&m != 0 {
			return fmt.Errorf("%w: hashes[%d] %016x: not kept at level %d (its low %d bits must be zero)", ErrBadSignature, i, h, level, level)
		}
		if i > 0 && h <= sig[i-1] {
			return fmt.Errorf("%w: hashes[%d]: must be sorted ascending, without repeats", ErrBadSignature, i)
		}
	}
	return nil
}

// placeSeed is drawn once per process and mixed into every hash before it
// is placed in a table (see place).
var placeSeed = rand.Uint64()

// place returns where a table puts the window hash h: a seeded bijection
// of h, so that the slot and region of a hash (its top bits, see table and
// partition) are as good as random whatever the hashes are. The hashes of a
// file's windows are already fmix64 outputs, but a signature's come from
// the client, which could otherwise choose them (0, 1, 2, ..., or any set
// sharing their top bits) to pile them all into one run of slots and make
// every probe walk it: quadratic time in the size of one request. Being a
// bijection, place keeps distinct hashes distinct, so a table of placed
// hashes answers membership exactly as one of the hashes would.
func place(h uint64) uint64 { return fmix64(h ^ placeSeed) }

// table is an open-addressing hash set of placed window hashes (see place)
// with an int32 value per hash; value 0 marks an empty slot. The slot is
// taken from the high bits.
type table struct {
	keys  []uint64
	vals  []int32
	shift uint
	n     int
}

func newTable(capacity int) *table {
	size := tableSize(capacity)
	if p := tablePool(size); p != nil {
		if t, ok := p.Get().(*table); ok {
			t.reset(capacity)
			return t
		}
	}
	t := &table{}
	t.reset(capacity)
	return t
}

// tablePools keep released tables by size (a power of two), so a query
// does not allocate, and the collector free, megabytes each time.
var tablePools [32]sync.Pool

func tablePool(size int) *sync.Pool {
	i := bits.Len(uint(size)) - 1
	if i < 0 || i >= len(tablePools) || 1<<i != size {
		return nil
	}
	return &tablePools[i]
}

// release gives t back for reuse; t must not be used afterwards.
func (t *table) release() {
	if p := tablePool(len(t.keys)); p != nil && len(t.keys) <= 1<<22 {
		p.Put(t)
	}
}

// reset empties t and sizes it for capacity entries at most half full.
func (t *table) reset(capacity int) {
	size := tableSize(capacity)
	if cap(t.keys) >= size {
		t.keys, t.vals = t.keys[:size], t.vals[:size]
		clear(t.keys)
		clear(t.vals)
	} else {
		t.keys, t.vals = make([]uint64, size), make([]int32, size)
	}
	t.shift = uint(64 - bits.Len(uint(size-1)))
	t.n = 0
}

// tableSize is the number of slots of a table for capacity entries.
func tableSize(capacity int) int { return 1 << max(10, bits.Len(uint(2*capacity))) }

// slot returns the slot of the placed hash h: where it is, or the empty slot where it
// would go.
func (t *table) slot(h uint64) int {
	mask := len(t.keys) - 1
	i := int(h>>t.shift) & mask
	for t.vals[i] != 0 && t.keys[i] != h {
		i = (i + 1) & mask
	}
	return i
}

// insert puts h with value v (not 0) in the empty slot i that slot(h)
// returned, growing t when it is half full; it returns false when t grew
// (the caller's slots are then stale).
func (t *table) insert(i int, h uint64, v int32) bool {
	t.keys[i], t.vals[i] = h, v
	t.n++
	if 2*t.n <= len(t.keys) {
		return true
	}
	keys, vals := t.keys, t.vals
	t.keys, t.vals = make([]uint64, 2*len(keys)), make([]int32, 2*len(keys))
	t.shift--
	for j, k := range keys {
		if vals[j] != 0 {
			s := t.slot(k)
			t.keys[s], t.vals[s] = k, vals[j]
		}
	}
	return false
}
