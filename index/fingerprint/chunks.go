package fingerprint

import (
	"math/bits"

	"github.com/zeebo/xxh3"
)

// Content-defined chunking, normalized in the FastCDC style (Xia et al.,
// "FastCDC", USENIX ATC 2016), a descendant of the two-threshold chunking of
// Forman et al. 2005.
//
// A gear hash rolls over the bytes of the current chunk: h = (h<<1) + G[b],
// with G a fixed table of 256 random 64-bit values. After 64 bytes the early
// bytes have been shifted out, so h depends only on the last 64 bytes; bit j
// of h depends only on the last j+1. The cut test therefore looks at the top
// bits of h, which depend on the most bytes.
//
// The first MinChunk bytes of a chunk are skipped without hashing (the hash
// restarts at zero for each chunk). From there until the chunk holds AvgChunk
// bytes the test uses a strict mask of log2(AvgChunk)+2 bits; after that a
// loose mask of log2(AvgChunk)-2 bits (normalization level 2), which pulls
// chunk lengths towards AvgChunk. A chunk ends just after the byte whose hash
// passes the test, or at MaxChunk bytes, so where it ends depends only on its
// own bytes. Every chunk is longer than MinChunk and at most MaxChunk bytes
// long, except that the last chunk of a stream may be shorter. Each chunk
// gives the fingerprint {xxh3 of its bytes, its offset, its length}.
//
// A cut point is defined by the content alone (the 64 bytes up to it) only
// once its chunk has had 64 bytes hashed; earlier ones also depend on where
// the chunk began. So an edit's effect stays local (the chunkings of the old
// and the new stream meet again within a few chunks) when most chunks are
// longer than MinChunk+64, as they are with the default ratios for AvgChunk
// of 128 and more.

// gearSeed seeds the splitmix64 generator that fills the gear table. It is
// part of the chunking definition: changing it changes every chunk.
const gearSeed = 0x7369662d67656172 // "sif-gear"

// gear is the gear table: gear[i] is the (i+1)-th output of splitmix64
// (Steele, Lea, Flood 2014) started from gearSeed.
var gear = func() (g [256]uint64) {
	x := uint64(gearSeed)
	for i := range g {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		g[i] = z ^ z>>31
	}
	return g
}()

// chunker cuts a stream written to it in pieces into chunks. A chunk that
// spans Writes is gathered in pending, so its memory is at most MaxChunk
// bytes.
type chunker struct {
	min, avg, max int
	maskS, maskL  uint64 // strict mask before avg bytes, loose after
	emit          func(Fingerprint)

	h       uint64 // gear hash of the current chunk's hashed bytes
	n       int    // bytes of the current chunk seen
	start   int64  // stream offset of the current chunk
	pending []byte // the current chunk's bytes, when they span Writes
}

// newChunker returns a chunker for normalized chunks parameters. emit must
// not be nil.
func newChunker(p Params, emit func(Fingerprint)) *chunker {
	b := bits.TrailingZeros(uint(p.AvgChunk))
	return &chunker{
		min:   p.MinChunk,
		avg:   p.AvgChunk,
		max:   p.MaxChunk,
		maskS: ^uint64(0) << (64 - (b + 2)),
		maskL: ^uint64(0) << (64 - (b - 2)),
		emit:  emit,
	}
}

// reset readies c for a new stream, keeping its buffer.
func (c *chunker) reset() {
	c.h, c.n, c.start = 0, 0, 0
	c.pending = c.pending[:0]
}

// write cuts b, which continues the stream, emitting every chunk it ends.
func (c *chunker) write(b []byte) {
	for len(b) > 0 {
		k, cut := c.next(b)
		if !cut {
			c.keep(b)
			return
		}
		if len(c.pending) == 0 {
			c.chunk(b[:k])
		} else {
			c.keep(b[:k])
			c.chunk(c.pending)
			c.pending = c.pending[:0]
		}
		b = b[k:]
	}
}

// keep appends b, part of the current chunk, to pending. The buffer grows at
// most to MaxChunk bytes, which is as long as a chunk can be.
func (c *chunker) keep(b []byte) {
	if n := len(c.pending) + len(b); n > cap(c.pending) {
		p := make([]byte, len(c.pending), min(c.max, max(n, 2*cap(c.pending), 4096)))
		copy(p, c.pending)
		c.pending = p
	}
	c.pending = append(c.pending, b...)
}

// finish emits the last chunk, if any.
func (c *chunker) finish() {
	if len(c.pending) > 0 {
		c.chunk(c.pending)
		c.pending = c.pending[:0]
	}
	c.h, c.n = 0, 0
}

// chunk emits the chunk b, whose bytes the caller keeps, and starts the next.
func (c *chunker) chunk(b []byte) {
	c.emit(Fingerprint{Hash: xxh3.Hash(b), Offset: c.start, Len: uint32(len(b))})
	c.start += int64(len(b))
	c.h, c.n = 0, 0
}

// next scans b, which continues the current chunk, and returns how many of
// its bytes belong to the chunk and whether the chunk ends after them. When
// it does not, all of b belongs to the chunk.
func (c *chunker) next(b []byte) (k int, cut bool) {
	n, h, i := c.n, c.h, 0
	if n < c.min {
		s := min(c.min-n, len(b))
		i, n = s, n+s
	}
	if n < c.avg && i < len(b) {
		seg := b[i:min(len(b), i+c.avg-n)]
		k, hh := gearScan(seg, h, c.maskS)
		if k < len(seg) {
			return i + k + 1, true
		}
		h, i, n = hh, i+k, n+k
	}
	if n < c.max && i < len(b) {
		seg := b[i:min(len(b), i+c.max-n)]
		k, hh := gearScan(seg, h, c.maskL)
		if k < len(seg) {
			return i + k + 1, true
		}
		h, i, n = hh, i+k, n+k
	}
	if n == c.max {
		return i, true
	}
	c.n, c.h = n, h
	return len(b), false
}

// gearScan rolls the gear hash h over b and returns the index of the first
// byte after which h&mask is zero, with h there, or len(b) and the final h.
//
// It advances two bytes per step along the dependency chain,
//
//	h_{i+2} = 4·h_i + (2·G[b_{i+1}] + G[b_{i+2}])
//
// which costs one LEA of latency, and computes h_{i+1} = 2·h_i + G[b_{i+1}]
// beside the chain.
func gearScan(b []byte, h, mask uint64) (int, uint64) {
	i := 0
	for ; i < len(b)-1; i += 2 {
		g := gear[b[i]]
		t := g*2 + gear[b[i+1]]
		h1 := h*2 + g
		h = h*4 + t
		if h1&mask == 0 {
			return i, h1
		}
		if h&mask == 0 {
			return i + 1, h
		}
	}
	if i < len(b) {
		h = h*2 + gear[b[i]]
		if h&mask == 0 {
			return i, h
		}
		i++
	}
	return i, h
}
