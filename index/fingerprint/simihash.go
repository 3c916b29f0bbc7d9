package fingerprint

import (
	"math"
	"math/bits"
	"strings"

	"github.com/zeebo/xxh3"
)

// SimiHash (Sadowski and Levin 2011, §4–5).
//
// The stream is read as a string of bits, each byte most significant bit
// first. An 8-bit window slides over it one bit at a time, across byte
// boundaries; wherever the window equals one of the 16 tags, that tag has a
// match. Each tag has a skip counter: after a counted match of a tag at bit b,
// its matches at bits b+1 … b+7 are not counted, so matches of one tag never
// overlap (two zero bytes give two matches of 0x00, not nine). The sum table
// holds each tag's count; the skew key is a weighted sum of four of them.

// Tags are the 16 SimiHash tags, in sum-table order. As the paper advises,
// they include 0x00 (the strongest single signal: padding versus dense data),
// 'e' and 't' (text) and non-ASCII bytes (rare in text); the rest are spread
// over the byte range: nine tags are at or above 0x80, three are control bytes
// (with 0x00) and four printable ASCII.
//
// A tag matches in the same places as its bit rotations, so each tag stands
// for its own rotation class: no two tags are rotations of each other, and
// apart from 0x00 none is a rotation of a byte that often comes in long runs
// (0xff, space, tab, '\n', '-', '=', '*', '#', '_', '.', '/', '0', '~', 0xaa,
// 0xcc, 0x0f and the like). That leaves 16 rotation classes for the 13 free
// tags; the three dropped and the member picked in each class are those whose
// matches least often come within 8 bits of each other in Go source, Markdown
// and HTML, and executables, which keeps the scanner on its fast path.
var Tags = [NumTags]byte{
	0x00, 'e', 't', 0xce, // the four skew-key tags, heaviest first
	0xea, 0xa6, 0xc7, 0xde, 0xd6, 0x86, 'N', 0xdc, 0x16, '%', 0x13, 0xd8,
}

// keyWeights weighs the sum-table entries of Tags[0..3] (0x00, 'e', 't' and
// 0xce) in the skew key. 0x00 weighs most, as in the paper's skew key; no
// weight is an order of magnitude above the next, which the paper notes would
// amount to ignoring the lighter tag.
var keyWeights = [4]uint64{8, 4, 2, 1}

// SkewKey returns the SimiHash skew key of a sum table: 8·n(0x00) + 4·n('e')
// + 2·n('t') + n(0xce), saturating at math.MaxUint32.
func SkewKey(s SumTable) uint32 {
	var k uint64
	for i, w := range keyWeights {
		k += w * uint64(s[i])
	}
	return uint32(min(k, math.MaxUint32))
}

// ExtKey returns the extension-aware SimiHash key (Sadowski and Levin, §4.2):
// a hash of the first three bytes of the lowercased extension in the high 32
// bits and key in the low 32, so keys of files with one extension sort
// together and keys of different extensions lie far apart. ext may carry its
// leading dot: ".TXT" and "txt" give the same high half, and so do "tex" and
// ".text" (only three bytes count). An empty extension is hashed like any
// other.
func ExtKey(key uint32, ext string) uint64 {
	ext = strings.ToLower(strings.TrimPrefix(ext, "."))
	if len(ext) > 3 {
		ext = ext[:3]
	}
	return xxh3.HashString(ext)>>32<<32 | uint64(key)
}

// Lane layout: the scanner keeps one 4-bit lane per tag in a uint64, lane i
// (bits 4i…4i+3) for Tags[i]. spread4 puts bit i of a tag mask at bit 4i.
func spread4(m uint16) uint64 {
	var x uint64
	for i := range NumTags {
		x |= uint64(m>>i&1) << (4 * i)
	}
	return x
}

// lanes4 has bit 0 of every lane set.
const lanes4 = 0x1111111111111111

// lanesVar is lanes4 in a variable: the compiler rematerializes a 64-bit
// constant in the scan loop at every step, but keeps a variable in a register.
var lanesVar uint64 = lanes4

var (
	// tagOf[w] has bit i set when w == Tags[i].
	tagOf [256]uint16
	// simStep describes the 8 windows that end in a byte cur, given the byte
	// prev before it: the windows starting at bits 1…7 of prev, and cur. It
	// is indexed with (prev | cur<<8) & 0xff7f: the two bytes read
	// little-endian, without prev's top bit, which is in none of the windows.
	// In lane i, bit 0 (the match bit) is set when Tags[i] matches any of the
	// windows, and bit 1 when it matches but not the first one: counted at
	// its first match, it then blocks windows of the next step. Bits 2 and 3
	// are clear, so that e>>1 puts the blocking bits on the match bits and
	// nothing else there (bit 3 receives the next lane's match bit, which the
	// match bits ignore).
	simStep [1 << 16]uint64
)

func init() {
	for i, t := range Tags {
		tagOf[t] |= 1 << i
	}
	for prev := range 128 {
		for cur := range 256 {
			v := prev<<8 | cur
			var m uint16
			for s := range 8 {
				m |= tagOf[byte(v>>s)]
			}
			first := tagOf[byte(v>>7)]
			simStep[prev|cur<<8] = spread4(m) | spread4(m&^first)<<1
		}
	}
}

// simiHash computes the sum table of a stream written to it in pieces.
//
// The scan goes a byte at a time. A step handles the 8 windows that end in the
// new byte; they are numbered r = 0…7 in stream order (window r starts r+1
// bits into the previous byte; window 7 is the new byte). Since the 8 windows
// of a step lie within 8 bits, at most one match per tag counts per step. A
// tag's state between steps is how many leading windows of the next step its
// last counted match blocks: counted at window r, it blocks r windows.
//
// The fast path assumes that every tag matching in a step starts it
// unblocked: then the tag counts once, at its first matching window r, and
// blocks r windows of the next step, which is none exactly when its first
// match is window 0. One table lookup gives both facts for all tags, as lanes.
// The tags that block windows of the next step are kept as lanes too
// (blocked), and a step needs the slow path, which looks at the windows of the
// tags concerned one by one, only when a blocked tag matches in it. With the
// tags chosen that is about one step in a hundred on random data and rarer on
// text and executables; it is every step in a run of zero bytes, for which
// the slow path has a short cut.
type simiHash struct {
	n int64  // bytes seen
	v uint32 // the last three bytes seen, the last one lowest

	blocked uint64 // bit 0 of lane i set when Tags[i] blocks windows of the next step
	// The slow path records the exact state of the tags it handled: state[i]
	// is valid for tag i when bit i of stateTags is set and the slow step was
	// the previous one (at byte stateAt). The state of the other blocked tags
	// is recomputed from the previous step's windows.
	stateTags uint16
	stateAt   int64
	state     [NumTags]uint8

	// Counts go to acc's 4-bit lanes, which take 15 steps, then to acc8's
	// 8-bit lanes, which take 17 flushes of acc.
	acc     uint64
	pend    int             // steps in acc
	acc8    [2]uint64       // even and odd tags' lanes of acc, widened
	flushes int             // flushes of acc into acc8
	counts  [NumTags]uint64 // flushed counts
}

func (s *simiHash) reset() { *s = simiHash{} }

// write scans b, which continues the stream.
func (s *simiHash) write(b []byte) {
	// The steps of the first two bytes look at bytes of earlier writes.
	for i := range min(len(b), 2) {
		s.step(b[i])
	}
	if len(b) <= 2 {
		return
	}
	base := s.n - 2 // stream index of b[0]
	for i := 2; i < len(b); {
		i += s.fast(b[i-2:])
		if i < len(b) {
			v := uint32(b[i-2])<<16 | uint32(b[i-1])<<8 | uint32(b[i])
			s.slowStep(v, base+int64(i))
			i++
		}
	}
	s.n = base + int64(len(b))
	s.v = uint32(b[len(b)-3])<<16 | uint32(b[len(b)-2])<<8 | uint32(b[len(b)-1])
}

// fast scans the steps of b[2:], whose previous bytes are b[0] and b[1], up to
// the first in which a blocked tag matches, and returns how many it scanned.
func (s *simiHash) fast(b []byte) int {
	tab, lanes := &simStep, lanesVar
	acc, blocked, pend := s.acc, s.blocked, s.pend
	done := 0
	for {
		// At most 15-pend steps before acc must be flushed; g[j] is the
		// byte of step j-2.
		g := b[:min(len(b), 17-pend)]
		j := 2
		for ; j < len(g); j++ {
			e := tab[(uint(g[j-1])|uint(g[j])<<8)&0xff7f]
			if e&blocked != 0 {
				break
			}
			blocked = e >> 1
			acc += e & lanes
		}
		n := j - 2
		done += n
		pend += n
		if pend == 15 {
			s.acc = acc
			s.flush()
			acc, pend = 0, 0
		}
		if j < len(g) || j == len(b) {
			break
		}
		b = b[n:]
	}
	s.acc, s.blocked, s.pend = acc, blocked, pend
	return done
}

// step scans one byte c, which continues the stream.
func (s *simiHash) step(c byte) {
	at := s.n
	v := s.v<<8 | uint32(c)
	s.n, s.v = at+1, v
	if at == 0 {
		// The first byte is the only window that ends in it: window 7,
		// which blocks 7 windows of the next step.
		m := tagOf[c]
		s.blocked = spread4(m)
		s.stateTags, s.stateAt = m, 0
		if m != 0 {
			s.state[bits.TrailingZeros16(m)] = 7
		}
		s.count(spread4(m))
		return
	}
	e := simStep[(v>>8&0x7f)|(v&0xff)<<8]
	if e&s.blocked != 0 {
		s.slowStep(v, at)
		return
	}
	s.blocked = e >> 1
	s.count(e & lanes4)
}

// count adds the count bits of m to the counts.
func (s *simiHash) count(m uint64) {
	s.acc += m
	if s.pend++; s.pend == 15 {
		s.flush()
		s.pend = 0
	}
}

// flush moves acc into acc8 and, every 17 times, acc8 into counts.
func (s *simiHash) flush() {
	const nib = 0x0f0f0f0f0f0f0f0f
	s.acc8[0] += s.acc & nib
	s.acc8[1] += s.acc >> 4 & nib
	s.acc = 0
	if s.flushes++; s.flushes == 17 {
		s.flush8()
	}
}

func (s *simiHash) flush8() {
	for j := range 8 {
		s.counts[2*j] += s.acc8[0] >> (8 * j) & 0xff
		s.counts[2*j+1] += s.acc8[1] >> (8 * j) & 0xff
	}
	s.acc8 = [2]uint64{}
	s.flushes = 0
}

// sum returns the sum table so far, each count saturating at math.MaxUint32.
func (s *simiHash) sum() SumTable {
	s.flush()
	s.flush8()
	s.pend = 0
	var t SumTable
	for i, c := range s.counts {
		t[i] = uint32(min(c, math.MaxUint32))
	}
	return t
}

// windows returns, for the step whose byte is the lowest of v, a mask with bit
// r set when window r equals tag.
func windows(v uint32, tag byte) uint8 {
	if v&0x7fff == 0 {
		// Fifteen zero bits: every window is 0x00.
		if tag == 0 {
			return 0xff
		}
		return 0
	}
	var m uint32
	for r := range 8 {
		// 1 when the window equals tag: x-1 borrows only from x == 0.
		x := uint32(byte(v>>(7-r)) ^ tag)
		m |= (x - 1) >> 31 << r
	}
	return uint8(m)
}

// slowStep scans a step in which some matching tags are blocked. v holds the
// step's byte and the two before it, at is the stream index of the step's
// byte.
func (s *simiHash) slowStep(v uint32, at int64) {
	e := simStep[(v>>8&0x7f)|(v&0xff)<<8]
	conflict := e & s.blocked
	count := e & lanes4
	next := e >> 1 // the unblocked tags, as on the fast path
	exact := s.stateAt == at-1
	handled := uint16(0)
	for conflict != 0 {
		i := bits.TrailingZeros64(conflict) / 4
		lane := uint64(1) << (4 * i)
		conflict &^= lane
		handled |= 1 << i
		var r uint8 // windows of this step blocked for tag i
		if exact && s.stateTags&(1<<i) != 0 {
			r = s.state[i]
		} else {
			// The previous step was fast for this tag: it counted at its
			// first matching window r, and so blocks r windows.
			r = uint8(bits.TrailingZeros8(windows(v>>8, Tags[i])))
		}
		open := windows(v, Tags[i]) &^ (1<<r - 1)
		if open == 0 {
			count &^= lane // every match is blocked: none counts
			next &^= lane
			s.state[i] = 0
			continue
		}
		w := uint8(bits.TrailingZeros8(open))
		s.state[i] = w
		if w == 0 {
			next &^= lane
		} else {
			next |= lane
		}
	}
	s.stateTags, s.stateAt = handled, at
	s.blocked = next
	s.count(count)
}
