package fingerprint

import (
	"math/bits"

	"github.com/zeebo/xxh3"
)

// Content-defined chunking, normalized in the FastCDC style (Xia et al.,
// "FastCDC", USENIX ATC 2016), a descendant of the two-threshold chunking of
// Forman et al. 2005.
//
// The gear hash of the stream at byte p is
//
//	H(p) = Σ G[b_j]·2^(p−j) mod 2^64, over j from max(0, p−63) to p,
//
// with G a fixed table of 256 random 64-bit values: the rolling hash
// h = (h<<1) + G[b] taken over the stream, which forgets a byte after 64
// shifts. So H(p) depends only on the 64 bytes ending at p (on all the bytes
// up to p when p < 63), and bit j of H(p) only on the last j+1 of them; the
// cut test therefore looks at the top bits, which depend on the most bytes.
//
// A chunk that starts at offset s ends just after the first byte p with
// s+MinChunk ≤ p < s+MaxChunk whose hash passes the test for p−s: H(p)&mask
// is zero, where mask is a strict mask of log2(AvgChunk)+2 bits while
// p−s < AvgChunk and a loose one of log2(AvgChunk)−2 bits after
// (normalization level 2, which pulls chunk lengths towards AvgChunk). If no
// byte passes, the chunk ends at MaxChunk bytes, or at the end of the stream.
// Every chunk is longer than MinChunk and at most MaxChunk bytes long, except
// that the last chunk of a stream may be shorter. Each chunk gives the
// fingerprint {xxh3 of its bytes, its offset, its length}.
//
// Whether byte p ends a chunk is thus a function of two things alone: the
// 64 bytes ending at p, through H(p), and p−s, its distance from the
// previous cut. The hash does not depend on where the chunk began. That
// keeps an edit's effect local. Take an edit that ends at e in the new
// stream. Cut points up to the edit are the same in both streams, and from
// e+63 on every byte has the same hash in both. A byte c there ends a chunk
// in both streams exactly when it does in each: the chunk holding c began at
// or before c−MinChunk and H(c) passes that chunk's mask (as any hash passing
// the strict mask does), or c is that chunk's MaxChunk-th byte. From the
// first cut point both streams share at e+max(0, 63−MinChunk) or later,
// their chunks are the same. On random data the streams share a cut a chunk
// or two past e+63 on average. The normalization can keep them out of phase
// for several chunks, though (TestChunksEditLocality gives figures).
//
// The scanner rolls h along the stream. It skips the first MinChunk−64 bytes
// of a chunk (when MinChunk > 64) without hashing them, since H at the first
// tested byte, s+MinChunk, does not depend on them, and warms h on the next
// 64 (or on the chunk's first MinChunk bytes, h carrying over the previous
// chunk's, when MinChunk ≤ 64) before testing.

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

	h       uint64 // rolling gear hash, up to the last byte hashed
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
// The gear hash carries over: when MinChunk < 64 the next chunk's first
// tested bytes depend on this one's last bytes.
func (c *chunker) chunk(b []byte) {
	c.emit(Fingerprint{Hash: xxh3.Hash(b), Offset: c.start, Len: uint32(len(b))})
	c.start += int64(len(b))
	c.n = 0
}

// next scans b, which continues the current chunk, and returns how many of
// its bytes belong to the chunk and whether the chunk ends after them. When
// it does not, all of b belongs to the chunk. Either way c.h is left as the
// gear hash up to the last byte scanned.
func (c *chunker) next(b []byte) (k int, cut bool) {
	n, h, i := c.n, c.h, 0
	if skip := c.min - 64; n < skip {
		// Bytes the first tested hash does not depend on. The stale h is
		// shifted out by the 64 warm-up bytes that follow.
		s := min(skip-n, len(b))
		i, n = s, n+s
	}
	if n < c.min && i < len(b) {
		// Warm-up: hash up to MinChunk bytes, testing none.
		s := min(c.min-n, len(b)-i)
		h = gearRoll(b[i:i+s], h)
		i, n = i+s, n+s
	}
	if n < c.avg && i < len(b) {
		seg := b[i:min(len(b), i+c.avg-n)]
		k, hh := gearScan(seg, h, c.maskS)
		if k < len(seg) {
			c.h = hh
			return i + k + 1, true
		}
		h, i, n = hh, i+k, n+k
	}
	if n < c.max && i < len(b) {
		seg := b[i:min(len(b), i+c.max-n)]
		k, hh := gearScan(seg, h, c.maskL)
		if k < len(seg) {
			c.h = hh
			return i + k + 1, true
		}
		h, i, n = hh, i+k, n+k
	}
	c.h = h
	if n == c.max {
		return i, true
	}
	c.n = n
	return len(b), false
}

// gearRoll rolls the gear hash h over b and returns it. Four bytes at a time,
// the chain is h_{i+4} = 16·h_i + (8·G[b_{i+1}] + 4·G[b_{i+2}] + 2·G[b_{i+3}] +
// G[b_{i+4}]), whose second term does not depend on h.
func gearRoll(b []byte, h uint64) uint64 {
	for len(b) >= 4 {
		t := (gear[b[0]]<<3 + gear[b[1]]<<2) + (gear[b[2]]<<1 + gear[b[3]])
		h = h<<4 + t
		b = b[4:]
	}
	for _, x := range b {
		h = h<<1 + gear[x]
	}
	return h
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
