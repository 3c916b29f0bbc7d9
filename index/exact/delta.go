package exact

import (
	"compress/flate"
	"errors"
	"hash/maphash"
	"io"
	"math"
)

// Delta is what an rdiff delta from a basis to a target holds.
type Delta struct {
	// Bytes is the delta's size: rdiff's 4-byte header, its commands and
	// literal data, and the end command.
	Bytes int64
	// Literal is the target's bytes sent as they are, Copied those copied
	// from the basis; Commands counts copy and literal commands.
	Literal, Copied int64
	Commands        int
	// BlockLen is the basis's block length.
	BlockLen int
}

// BlockLen returns the block length librsync's rdiff (2.x) chooses for a
// basis of size bytes: the square root of the size rounded down to a
// multiple of 128, at least 256.
func BlockLen(size int64) int {
	s := int64(math.Sqrt(float64(max(size, 0))))
	return int(max(256, s&^127))
}

// intLen is how many bytes rdiff uses for an integer in a command.
func intLen(v int64) int64 {
	switch {
	case v <= 0xff:
		return 1
	case v <= 0xffff:
		return 2
	case v <= 0xffffffff:
		return 4
	}
	return 8
}

var strongSeed = maphash.MakeSeed()

type block struct{ weak, strong uint64 }

// basisSig is the signature of a basis: its blocks' weak (Karp-Rabin over
// the block) and strong hashes. A block is found by its pair of hashes in
// one map lookup, never by walking the blocks that share a weak hash: the
// weak hash is not seeded, and Karp-Rabin collisions can be built at will,
// so a basis of many blocks of one weak hash would otherwise make every
// position of a target walk all of them.
type basisSig struct {
	bl      int
	blocks  []block          // full blocks, in order
	first   map[uint64]int32 // the first block (index+1) of each weak hash
	more    map[block]int32  // the first block of each other pair of hashes of a weak hash
	filter  []uint64
	tail    block // the last, shorter block, if tailLen > 0
	tailLen int
	tailOff int64
	pow     uint64 // Prime^bl
}

// weakOf is the Karp-Rabin value of p.
func weakOf(p []byte) uint64 {
	var f uint64
	for _, c := range p {
		f = f*Prime + uint64(c)
	}
	return f
}

func (s *basisSig) filterBit(weak uint64) (int, uint64) {
	h := fmix64(weak) >> 48
	return int(h >> 6), 1 << (h & 63)
}

// readBasis reads the basis from r, in blocks of bl bytes.
func readBasis(r io.Reader, bl int) (*basisSig, error) {
	s := &basisSig{bl: bl, first: map[uint64]int32{}, more: map[block]int32{}, filter: make([]uint64, 1<<10), pow: 1}
	for range bl {
		s.pow *= Prime
	}
	buf := make([]byte, bl)
	var off int64
	for {
		n, err := io.ReadFull(r, buf)
		if n == bl {
			b := block{weak: weakOf(buf), strong: maphash.Bytes(strongSeed, buf)}
			s.blocks = append(s.blocks, b)
			i := int32(len(s.blocks))
			if f, ok := s.first[b.weak]; !ok {
				s.first[b.weak] = i
			} else if _, ok := s.more[b]; !ok && s.blocks[f-1] != b {
				s.more[b] = i
			}
			w, bit := s.filterBit(b.weak)
			s.filter[w] |= bit
			off += int64(n)
		} else if n > 0 {
			s.tail = block{weak: weakOf(buf[:n]), strong: maphash.Bytes(strongSeed, buf[:n])}
			s.tailLen, s.tailOff = n, off
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return s, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// DeltaCost simulates rdiff's delta of target against the basis read from
// r (basisSize is what its size is expected to be, which sets the block
// length, as rdiff signature does from the file's size): the target is
// scanned with a window of the block length; a window equal to a basis
// block (equal weak and strong hashes) is copied and the scan jumps past
// it, else one literal byte is sent and the window rolls on. Contiguous
// copies merge into one command, as librsync's do. At the target's end, a
// rest shorter than a block is copied only if it equals the basis's own
// last, short block. Copies are found as rdiff finds them, so the byte
// count is rdiff's but for how it splits long literal runs.
func DeltaCost(r io.Reader, basisSize int64, target []byte) (Delta, error) {
	bl := BlockLen(basisSize)
	s, err := readBasis(r, bl)
	if err != nil {
		return Delta{}, err
	}
	d := Delta{BlockLen: bl, Bytes: 4 + 1}
	var lit int64
	copyOff, copyLen := int64(-1), int64(0)
	flushLit := func() {
		if lit == 0 {
			return
		}
		d.Commands++
		d.Literal += lit
		d.Bytes += 1 + lit
		if lit > 64 {
			d.Bytes += intLen(lit)
		}
		lit = 0
	}
	flushCopy := func() {
		if copyLen == 0 {
			return
		}
		d.Commands++
		d.Copied += copyLen
		d.Bytes += 1 + intLen(copyOff) + intLen(copyLen)
		copyOff, copyLen = -1, 0
	}
	addCopy := func(off, n int64) {
		flushLit()
		if copyLen > 0 && copyOff+copyLen == off {
			copyLen += n
			return
		}
		flushCopy()
		copyOff, copyLen = off, n
	}
	addLit := func(n int64) {
		flushCopy()
		lit += n
	}
	n := len(target)
	i := 0
	var f uint64
	if n >= bl {
		f = weakOf(target[:bl])
	}
	prev := -2
	for i+bl <= n {
		b := -1
		if w, bit := s.filterBit(f); s.filter[w]&bit != 0 {
			if first, ok := s.first[f]; ok {
				k := block{f, maphash.Bytes(strongSeed, target[i:i+bl])}
				if p := prev + 1; p >= 0 && p < len(s.blocks) && s.blocks[p] == k {
					b = p
				} else if s.blocks[first-1] == k {
					b = int(first - 1)
				} else if j, ok := s.more[k]; ok {
					b = int(j - 1)
				}
			}
		}
		if b >= 0 {
			addCopy(int64(b)*int64(bl), int64(bl))
			prev = b
			i += bl
			if i+bl <= n {
				f = weakOf(target[i : i+bl])
			}
			continue
		}
		addLit(1)
		if i+bl < n {
			f = f*Prime + uint64(target[i+bl]) - uint64(target[i])*s.pow
		}
		i++
	}
	// Less than a block is left: rdiff's window shrinks to what is left
	// and slides to the end, so only the basis's short last block can
	// match, and only at the very end.
	if rest := target[i:]; len(rest) > 0 {
		if t := s.tailLen; t > 0 && t <= len(rest) && weakOf(rest[len(rest)-t:]) == s.tail.weak &&
			maphash.Bytes(strongSeed, rest[len(rest)-t:]) == s.tail.strong {
			if len(rest) > t {
				addLit(int64(len(rest) - t))
			}
			addCopy(s.tailOff, int64(t))
		} else {
			addLit(int64(len(rest)))
		}
	}
	flushLit()
	flushCopy()
	return d, nil
}

// EstimateDelta estimates the delta of a query of size bytes against a
// basis from a window measure alone (no bytes of the query at hand): the
// query's windows not found in the basis are sent as literals, plus one
// pair of commands (a literal run and a copy) per block length of them.
func EstimateDelta(m Measure, size, basisSize int64) int64 {
	lit := int64(math.Round((1 - m.Containment) * float64(size)))
	bl := int64(BlockLen(basisSize))
	return 4 + 1 + lit + 10*((lit+bl-1)/bl)
}

// CompressedSize returns the size of data compressed as gzip does at its
// default level (DEFLATE at level 6, plus gzip's 18 bytes of header and
// trailer): what sending it without a basis costs.
func CompressedSize(data []byte) int64 {
	var c countWriter
	w, _ := flate.NewWriter(&c, flate.DefaultCompression)
	w.Write(data)
	w.Close()
	return c.n + 18
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
