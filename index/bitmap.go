package index

import "math/bits"

// idSet is a set of 32-bit ids, one bit each up to the largest id set, that
// numbers its members densely once frozen: rank gives each member its
// position among them in id order. It costs about 1.5 bits per id below the
// largest, so a set of file or content ids, which are handed out in
// increasing order, costs a few bytes per 32 ids however many are members.
type idSet struct {
	words []uint64
	ranks []uint32 // after freeze: members in words[:i]
	n     int      // after freeze: members in all
}

// add puts id in s. It must not be called after freeze.
func (s *idSet) add(id uint32) {
	w := int(id / 64)
	if w >= len(s.words) {
		s.words = append(s.words, make([]uint64, w+1-len(s.words))...)
	}
	s.words[w] |= 1 << (id % 64)
}

// has reports whether id is in s.
func (s *idSet) has(id uint32) bool {
	w := int(id / 64)
	return w < len(s.words) && s.words[w]&(1<<(id%64)) != 0
}

// freeze numbers the members; add may not be called after it.
func (s *idSet) freeze() {
	s.ranks = make([]uint32, len(s.words))
	n := 0
	for i, w := range s.words {
		s.ranks[i] = uint32(n)
		n += bits.OnesCount64(w)
	}
	s.n = n
}

// len returns the number of members; s must be frozen.
func (s *idSet) len() int { return s.n }

// rank returns id's position among the members in id order, and whether id
// is a member; s must be frozen.
func (s *idSet) rank(id uint32) (uint32, bool) {
	w := int(id / 64)
	if w >= len(s.words) {
		return 0, false
	}
	bit := uint64(1) << (id % 64)
	if s.words[w]&bit == 0 {
		return 0, false
	}
	return s.ranks[w] + uint32(bits.OnesCount64(s.words[w]&(bit-1))), true
}

// each calls fn for every member in id order.
func (s *idSet) each(fn func(id uint32)) {
	for i, w := range s.words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			fn(uint32(i*64 + b))
			w &= w - 1
		}
	}
}
