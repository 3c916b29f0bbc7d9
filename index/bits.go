package index

import (
	"encoding/binary"
	"math/bits"
)

// Bit packing, shared by forward lists (encoding.go) and posting lists
// (postings_codec.go): bitWriter packs fixed-width fields, Rice codes and
// Elias gamma codes from the most significant bit of each byte, and
// bitReader reads them back, failing cleanly at the end of its input.

// bitWriter packs bits from the most significant bit of each byte.
type bitWriter struct {
	buf  []byte
	acc  uint64 // pending bits, the nacc low ones
	nacc uint   // < 32 between calls
}

// write appends the n low bits of v, n ≤ 64.
func (w *bitWriter) write(v uint64, n uint) {
	if n > 32 {
		w.write(v>>32, n-32)
		n = 32
	}
	w.acc = w.acc<<n | v&(1<<n-1)
	w.nacc += n
	if w.nacc >= 32 {
		w.nacc -= 32
		w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(w.acc>>w.nacc))
	}
}

func (w *bitWriter) ones(n uint64) {
	for ; n >= 32; n -= 32 {
		w.write(1<<32-1, 32)
	}
	w.write(1<<n-1, uint(n))
}

// rice writes v Rice-coded with parameter k: v>>k in unary (ones ended by
// a zero), then the k low bits of v.
func (w *bitWriter) rice(v uint64, k uint) {
	if q := uint(v >> k); q+1+k <= 64 {
		w.write((1<<(q+1)-2)<<k|v&(1<<k-1), q+1+k)
		return
	}
	w.ones(v >> k)
	w.write(0, 1)
	w.write(v, k)
}

// gamma writes v ≥ 1 in Elias gamma: as many zeros as v has bits after its
// first, then v.
func (w *bitWriter) gamma(v uint64) {
	n := uint(bits.Len64(v))
	if n <= 32 {
		w.write(v, 2*n-1) // the zeros are v's own leading bits
		return
	}
	w.write(0, n-1)
	w.write(v, n)
}

// flush pads the last byte with zero bits.
func (w *bitWriter) flush() []byte {
	for w.nacc >= 8 {
		w.nacc -= 8
		w.buf = append(w.buf, byte(w.acc>>w.nacc))
	}
	if w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc<<(8-w.nacc)))
		w.nacc = 0
	}
	return w.buf
}

// bitReader reads what bitWriter wrote.
type bitReader struct {
	b   []byte
	pos uint // bit position
}

func (r *bitReader) left() uint { return uint(len(r.b))*8 - r.pos }

// peek returns the next bits, left-aligned, and how many of them there
// are (up to 64, at least 57 unless the end is near).
func (r *bitReader) peek() (uint64, uint) {
	i, off := r.pos/8, r.pos%8
	if i+8 <= uint(cap(r.b)) {
		// Past len(r.b) is zero padding, or nothing: see decodePostingList.
		return binary.BigEndian.Uint64(r.b[i:i+8]) << off, min(r.left(), 64-off)
	}
	var w uint64
	for j := uint(0); j < 8; j++ {
		w <<= 8
		if i+j < uint(len(r.b)) {
			w |= uint64(r.b[i+j])
		}
	}
	return w << off, min(r.left(), 64-off)
}

// read returns the next n bits, n ≤ 64, and false past the end.
func (r *bitReader) read(n uint) (uint64, bool) {
	if n > 56 {
		hi, ok := r.read(n - 32)
		lo, ok2 := r.read(32)
		return hi<<32 | lo, ok && ok2
	}
	if n == 0 {
		return 0, true
	}
	w, avail := r.peek()
	if n > avail {
		return 0, false
	}
	r.pos += n
	return w >> (64 - n), true
}

func (r *bitReader) bit() (bool, bool) {
	v, ok := r.read(1)
	return v == 1, ok
}

// unary counts ones up to a zero, which it consumes, failing past limit
// ones or the end.
func (r *bitReader) unary(limit uint64) (uint64, bool) {
	var n uint64
	for {
		w, avail := r.peek()
		if avail == 0 {
			return 0, false
		}
		ones := uint(bits.LeadingZeros64(^w))
		if ones < avail {
			n += uint64(ones)
			r.pos += ones + 1
			return n, n <= limit
		}
		n += uint64(avail)
		r.pos += avail
		if n > limit {
			return 0, false
		}
	}
}

// rice reads a value Rice-coded with parameter k (see bitWriter.rice),
// failing past a quotient of limit or the end.
func (r *bitReader) rice(k uint, limit uint64) (uint64, bool) {
	w, avail := r.peek()
	if q := uint(bits.LeadingZeros64(^w)); q+1+k <= avail {
		r.pos += q + 1 + k
		return uint64(q)<<k | w<<(q+1)>>(64-k), uint64(q) <= limit
	}
	q, ok := r.unary(limit)
	if !ok {
		return 0, false
	}
	rem, ok := r.read(k)
	return q<<k | rem, ok
}

// gamma reads a value written by bitWriter.gamma, failing past the end or
// past 64 bits.
func (r *bitReader) gamma() (uint64, bool) {
	w, avail := r.peek()
	if z := uint(bits.LeadingZeros64(w)); 2*z+1 <= avail {
		r.pos += 2*z + 1
		return w >> (63 - 2*z), true
	}
	z, ok := r.zeros(63)
	if !ok {
		return 0, false
	}
	rest, ok := r.read(z)
	return 1<<z | rest, ok
}

// zeros counts zero bits up to a one, which it consumes, failing past
// limit zeros or the end.
func (r *bitReader) zeros(limit uint) (uint, bool) {
	var n uint
	for {
		w, avail := r.peek()
		if avail == 0 {
			return 0, false
		}
		z := uint(bits.LeadingZeros64(w))
		if z < avail {
			n += z
			r.pos += z + 1
			return n, n <= limit
		}
		n += avail
		r.pos += avail
		if n > limit {
			return 0, false
		}
	}
}
