package fingerprint

import (
	"math"
	"math/bits"
	"strings"
	"sync"

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

// tags are the 16 SimiHash tags, in sum-table order. As the paper advises,
// they include 0x00 (the strongest single signal: padding versus dense data),
// 'e' and 't' (text) and non-ASCII bytes (rare in text); the rest are spread
// over the byte range and over the bit patterns: nine tags are at or above
// 0x80, two are control bytes besides 0x00, and five printable ASCII.
//
// Apart from 0x00, 'e' and 't', every tag is unbordered: no proper prefix of
// its 8 bits equals a suffix, so two of its matches can never overlap and its
// skip counter never skips anything. Only the three bordered tags ever take
// the scanner off its fast path (see simiHash). No two tags are bit rotations of each other
// (a rotation matches in much the same places); 0x00, 'e' and 't' aside,
// there are 30 rotation classes of unbordered bytes, and the tags come from
// 13 of them, avoiding the classes of 'e' and 't'.
var tags = [NumTags]byte{
	0x00, 'e', 't', 0xd0, // the four skew-key tags, heaviest first
	0x90, 0xc2, 0x17, 0xd8, 0xa4, '\'', 0xd2, '/', 0xdc, 'g', 'W', 0xe0,
}

// Tags returns the SimiHash tags: entry i of a [SumTable] counts Tags()[i].
func Tags() [NumTags]byte { return tags }

// keyWeights weighs the sum-table entries of tags[0..3] (0x00, 'e', 't' and
// 0xd0) in the skew key. 0x00 weighs most, as in the paper's skew key; no
// weight is an order of magnitude above the next, which the paper notes would
// amount to ignoring the lighter tag.
var keyWeights = [4]uint64{8, 4, 2, 1}

// SkewKey returns the SimiHash skew key of a sum table: 8·n(0x00) + 4·n('e')
// + 2·n('t') + n(0xd0), saturating at math.MaxUint32.
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
// (bits 4i…4i+3) for tags[i]. spread4 puts bit i of a tag mask at bit 4i.
func spread4(m uint16) uint64 {
	var x uint64
	for i := range NumTags {
		x |= uint64(m>>i&1) << (4 * i)
	}
	return x
}

const (
	lanes4  = 0x1111111111111111 // bit 0 of every lane: the count bits
	blocks4 = lanes4 << 2        // bit 2 of every lane: the blocking bits
)

// lanesVar and blocksVar are lanes4 and blocks4 in variables: the compiler
// rematerializes a 64-bit constant in the scan loop at every step, but keeps
// a variable in a register.
var lanesVar, blocksVar uint64 = lanes4, blocks4

var (
	// tagOf[w] has bit i set when w == tags[i].
	tagOf [256]uint16
)

// bordered has bit i set when tags[i] is bordered: a proper prefix of its 8
// bits equals a suffix, so that two of its matches can overlap.
var bordered uint16

func init() {
	for i, t := range tags {
		tagOf[t] |= 1 << i
		for l := 1; l < 8; l++ {
			if t>>(8-l) == t&(1<<l-1) {
				bordered |= 1 << i
			}
		}
	}
}

// simStep describes the 8 windows that end in a byte cur, given the byte
// prev before it: the windows starting at bits 1…7 of prev, and cur. It
// is indexed with (prev | cur<<8) & 0xff7f: the two bytes read
// little-endian, without prev's top bit, which is in none of the windows.
// In lane i, bit 0 (the count bit) is set when tags[i] matches any of the
// windows. The other bits are only for bordered tags: an unbordered tag
// cannot match again in the windows its last match blocks, so its blocks
// never matter. Bit 1 is set when the tag matches but not in the first
// window, so that, counted at its first match, it blocks windows of the
// next step; (e<<1)&blocks4 moves it to bit 2 to mark the tag blocked.
// Bit 2 is set when the tag matches in one of windows 0…6, the only ones
// a block can cover: e&blocked is not zero when a blocked tag matches
// where it might be blocked.
//
// It takes 512 KiB and about a millisecond to fill, so it is filled when a
// stream is first scanned (simStepOnce), not when the package is loaded: a
// client that never computes a SimiHash (sifctl, a sync tool) does not pay
// for it, in time or in memory (the zero array is not backed until it is
// written).
var (
	simStep     [1 << 16]uint64
	simStepOnce sync.Once
)

func fillSimStep() {
	t := &simStep
	for prev := range 128 {
		for cur := range 256 {
			v := prev<<8 | cur
			var m uint16
			for s := range 8 {
				m |= tagOf[byte(v>>s)]
			}
			first := tagOf[byte(v>>7)]
			var m06 uint16 // matches in windows 0…6
			for s := 1; s < 8; s++ {
				m06 |= tagOf[byte(v>>s)]
			}
			t[prev|cur<<8] = spread4(m) | spread4(m&^first&bordered)<<1 | spread4(m06&bordered)<<2
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
// tags concerned one by one, only when a blocked tag matches in a window its
// block might cover (0…6). Only the bordered tags, 0x00, 'e' and 't', are
// ever marked blocked, so that happens in about one step in three hundred on
// random data and hardly ever on text. It happens at every step of a run of
// zero bytes that does not start on a byte boundary; such runs are skipped
// in one go.
type simiHash struct {
	n int64  // bytes seen
	v uint32 // the last three bytes seen, the last one lowest

	blocked uint64 // bit 2 of lane i set when tags[i] blocks windows of the next step
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
	simStepOnce.Do(fillSimStep)
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
		if i >= len(b) {
			break
		}
		v := uint32(b[i-2])<<16 | uint32(b[i-1])<<8 | uint32(b[i])
		s.slowStep(v, base+int64(i))
		i++
		if v&0x7fff == 0 {
			// A run of zero bytes, with 0x00 blocked (it is the only
			// tag that matches 0x00 windows). At every further zero
			// byte 0x00 counts once, at the first window its state
			// leaves open, and its state stays the same; no other tag
			// matches. So the state recorded for this step holds to
			// the end of the run.
			k := i
			for k < len(b) && b[k] == 0 {
				k++
			}
			s.counts[0] += uint64(k - i)
			s.stateAt += int64(k - i)
			i = k
		}
	}
	s.n = base + int64(len(b))
	s.v = uint32(b[len(b)-3])<<16 | uint32(b[len(b)-2])<<8 | uint32(b[len(b)-1])
}

// fast scans the steps of b[2:], whose previous bytes are b[0] and b[1], up to
// the first in which a blocked tag matches, and returns how many it scanned.
func (s *simiHash) fast(b []byte) int {
	const nib = 0x0f0f0f0f0f0f0f0f
	tab, lanes, blocks := &simStep, lanesVar, blocksVar
	acc, blocked := s.acc, s.blocked
	left := 15 - s.pend // steps before acc must be flushed
	j := 2
	for ; j < len(b); j++ {
		e := tab[(uint(b[j-1])|uint(b[j])<<8)&0xff7f]
		if e&blocked != 0 {
			break
		}
		blocked = e << 1 & blocks
		acc += e & lanes
		if left--; left == 0 {
			s.acc8[0] += acc & nib
			s.acc8[1] += acc >> 4 & nib
			acc, left = 0, 15
			if s.flushes++; s.flushes == 17 {
				s.flush8()
			}
		}
	}
	s.acc, s.blocked, s.pend = acc, blocked, 15-left
	return j - 2
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
		s.blocked = spread4(m&bordered) << 2
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
	s.blocked = e << 1 & blocks4
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
	// Byte r of w is window r.
	x := uint64(v & 0xffff)
	w := x>>7&0xff | x>>6&0xff<<8 | x>>5&0xff<<16 | x>>4&0xff<<24 |
		x>>3&0xff<<32 | x>>2&0xff<<40 | x>>1&0xff<<48 | x&0xff<<56
	// Set the top bit of exactly the bytes of z that are zero, then gather
	// the top bits into one byte (bit 8r+7 goes to bit 56+r).
	const lo7 = 0x7f7f7f7f7f7f7f7f
	z := w ^ uint64(tag)*0x0101010101010101
	y := ^((z&lo7 + lo7) | z | lo7)
	return uint8((y >> 7) * 0x0102040810204080 >> 56)
}

// slowStep scans a step in which some matching tags are blocked. v holds the
// step's byte and the two before it, at is the stream index of the step's
// byte.
func (s *simiHash) slowStep(v uint32, at int64) {
	e := simStep[(v>>8&0x7f)|(v&0xff)<<8]
	conflict := e & s.blocked
	count := e & lanes4
	next := e << 1 & blocks4 // the unblocked tags, as on the fast path
	exact := s.stateAt == at-1
	handled := uint16(0)
	for conflict != 0 {
		i := bits.TrailingZeros64(conflict) / 4
		countBit, blockBit := uint64(1)<<(4*i), uint64(4)<<(4*i)
		conflict &^= blockBit
		handled |= 1 << i
		var r uint8 // windows of this step blocked for tag i
		if exact && s.stateTags&(1<<i) != 0 {
			r = s.state[i]
		} else {
			// The previous step was fast for this tag: it counted at its
			// first matching window r, and so blocks r windows.
			r = uint8(bits.TrailingZeros8(windows(v>>8, tags[i])))
		}
		open := windows(v, tags[i]) &^ (1<<r - 1)
		if open == 0 {
			count &^= countBit // every match is blocked: none counts
			next &^= blockBit
			s.state[i] = 0
			continue
		}
		w := uint8(bits.TrailingZeros8(open))
		s.state[i] = w
		if w == 0 {
			next &^= blockBit
		} else {
			next |= blockBit
		}
	}
	s.stateTags, s.stateAt = handled, at
	s.blocked = next
	s.count(count)
}
