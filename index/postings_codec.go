package index

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// The posting list codec: the bytes of one bucket's posting list (see
// postings.go), merged or not. A posting list is:
//
//	uvarint  n, the number of postings (none: the list is empty, and the
//	         value too)
//	byte     k, the Rice parameter of the key gaps
//	byte     cb, the bits of each content id (1..32)
//	bits     per posting, in (fingerprint key, content id) order, packed
//	         from the most significant bit of each byte:
//	           - unless it is the first, 1 if its key differs from the
//	             previous posting's, else 0;
//	           - when it does (and for the first), the gap from the previous
//	             key's low bits (minus one; for the first, the low bits
//	             themselves), Rice-coded with parameter k: the quotient
//	             gap>>k in unary (ones ended by a zero), then k bits;
//	           - the content id, cb bits;
//	           - the weight: 0 for 1; 10 and gap-free Elias gamma of
//	             weight−1 for more; 11 for a tombstone.
//	         and zero bits up to the byte boundary.
//
// Postings are random bits (keys and ids): one Pebble key per posting
// cost about 8 bytes each on Go's sources after zstd; Rice-coded key gaps
// and fixed-width ids in a bucket cost about half that.

// riceParam returns the Rice parameter, at most maxK, that codes gaps in
// the fewest bits: of those near the one the mean gap suggests.
func riceParam(gaps []uint32, maxK uint) uint {
	if len(gaps) == 0 {
		return 0
	}
	var sum uint64
	for _, g := range gaps {
		sum += uint64(g)
	}
	guess := uint(bits.Len64(sum / uint64(len(gaps))))
	best, bestBits := uint(0), uint64(1<<63)
	for k := min(max(guess, 2)-2, maxK); k <= min(guess+1, maxK); k++ {
		n := uint64(0)
		for _, g := range gaps {
			n += uint64(g>>k) + 1 + uint64(k)
		}
		if n < bestBits {
			best, bestBits = k, n
		}
	}
	return best
}

// encodePostingList appends the posting list of es to dst: es are of one
// bucket, sorted by key and content id, without duplicates. gaps is
// scratch space, returned for reuse.
func encodePostingList(dst []byte, es []postingEntry, gaps []uint32) ([]byte, []uint32) {
	gaps = gaps[:0]
	if len(es) == 0 {
		return dst, gaps
	}
	var maxCID uint32
	for i, e := range es {
		low := e.key & (1<<lowBits - 1)
		switch {
		case i == 0:
			gaps = append(gaps, low)
		case e.key != es[i-1].key:
			gaps = append(gaps, low-es[i-1].key&(1<<lowBits-1)-1)
		}
		maxCID = max(maxCID, e.cid)
	}
	k := riceParam(gaps, lowBits)
	cb := uint(max(bits.Len32(maxCID), 1))
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	dst = append(dst, byte(k), byte(cb))
	w := bitWriter{buf: dst}
	g := 0
	for i, e := range es {
		if i > 0 {
			if e.key == es[i-1].key {
				w.write(0, 1)
			} else {
				w.write(1, 1)
			}
		}
		if i == 0 || e.key != es[i-1].key {
			w.rice(uint64(gaps[g]), k)
			g++
		}
		w.write(uint64(e.cid), cb)
		switch e.weight {
		case 1:
			w.write(0, 1)
		case tombstone:
			w.write(3, 2)
		default:
			w.write(2, 2)
			w.gamma(e.weight - 1) // at least 1
		}
	}
	return w.flush(), gaps
}

// decodePostingList appends the postings of v, the posting list of bucket
// b, to dst. tombstones says whether removals may appear (in a merge
// operand; a list as readers see it has none).
func decodePostingList(dst []postingEntry, b uint32, v []byte, tombstones bool) ([]postingEntry, error) {
	if len(v) == 0 {
		return dst, nil
	}
	n, m := binary.Uvarint(v)
	if m <= 0 || n == 0 || len(v) < m+2 {
		return dst, fmt.Errorf("%w: posting list %x: bad header", ErrCorrupt, v)
	}
	k, cb := uint(v[m]), uint(v[m+1])
	if k > lowBits || cb < 1 || cb > 32 || n > uint64(len(v))*8 {
		return dst, fmt.Errorf("%w: posting list %x: bad header", ErrCorrupt, v)
	}
	// A short list is read from a copy padded with zeros, so that every
	// peek reads a whole word; a long one only near its end reads bytes
	// one at a time. The reader never looks past cap(r.b).
	body := v[m+2:]
	r := bitReader{b: body[:len(body):len(body)]}
	var pad [64 + 8]byte
	if len(body) <= 64 {
		copy(pad[:], body)
		r.b = pad[: len(body) : len(body)+8]
	}
	bad := func(what string) error {
		return fmt.Errorf("%w: posting list of bucket %x: %s at posting %d", ErrCorrupt, b, what, len(dst))
	}
	var low uint64
	high := uint64(b) << lowBits
	start := len(dst)
	for i := uint64(0); i < n; i++ {
		newKey := i == 0
		if i > 0 {
			bit, ok := r.bit()
			if !ok {
				return dst, bad("truncated")
			}
			newKey = bit
		}
		if newKey {
			q, ok := r.unary(1 << lowBits >> k)
			if !ok {
				return dst, bad("bad key gap")
			}
			rem, ok := r.read(k)
			if !ok {
				return dst, bad("truncated")
			}
			gap := q<<k | rem
			if i > 0 {
				gap += low + 1
			}
			if gap >= 1<<lowBits {
				return dst, bad("key out of its bucket")
			}
			low = gap
		}
		cid, ok := r.read(cb)
		if !ok {
			return dst, bad("truncated")
		}
		e := postingEntry{key: uint32(high | low), cid: uint32(cid)}
		if !newKey && e.cid <= dst[len(dst)-1].cid {
			return dst, bad("content ids out of order")
		}
		w, ok := r.bit()
		if !ok {
			return dst, bad("truncated")
		}
		if !w {
			e.weight = 1
		} else {
			t, ok := r.bit()
			if !ok {
				return dst, bad("truncated")
			}
			if t {
				if !tombstones {
					return dst, bad("removed posting")
				}
				e.weight = tombstone
			} else {
				z := uint(0)
				for {
					b, ok := r.bit()
					if !ok || z > 63 {
						return dst, bad("bad weight")
					}
					if b {
						break
					}
					z++
				}
				rest, ok := r.read(z)
				if !ok {
					return dst, bad("truncated")
				}
				e.weight = (1<<z | rest) + 1
				if e.weight < 2 {
					return dst, bad("bad weight")
				}
			}
		}
		dst = append(dst, e)
	}
	if r.left() >= 8 || r.pos%8 != 0 && r.b[len(r.b)-1]&(1<<(8-r.pos%8)-1) != 0 {
		return dst[:start], bad("trailing bits")
	}
	return dst, nil
}
