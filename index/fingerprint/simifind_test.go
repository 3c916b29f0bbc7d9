package fingerprint

import (
	"bytes"
	"testing"
)

// TestSumTableByHand checks sum tables and skew keys of tiny inputs worked
// out by hand from the definition: an 8-bit window at every bit offset,
// most significant bit first, and a skip counter per tag.
func TestSumTableByHand(t *testing.T) {
	// Sum-table entries by tag: 0x00, 'e', 't', 0xd0 are entries 0 to 3.
	for _, c := range []struct {
		name string
		in   []byte
		sum  SumTable
		key  uint32
	}{
		// Windows at bits 0, 8 and 16 match 0x00; those at bits 1…7 and
		// 9…15 too, but the skip counter of the match before covers them.
		{"three zero bytes", []byte{0, 0, 0}, SumTable{0: 3}, 8 * 3},
		// 01100101 01100101: 'e' at bits 0 and 8; the windows between
		// (0xca, 0x95, 0x2b, 0x56, 0xac, 0x59, 0xb2) are no tag.
		{"ee", []byte("ee"), SumTable{1: 2}, 4 * 2},
		// 00000110 01010000: 'e' (01100101) at bit 4, across the bytes.
		{"e across a byte boundary", []byte{0x06, 0x50}, SumTable{1: 1}, 4},
		// 01110100 11101000: 't' at bit 0, and again at bit 7 sharing its
		// last bit; the skip counter leaves the second uncounted.
		{"overlapping t", []byte{0x74, 0xe8}, SumTable{2: 1}, 2},
		{"one 0xd0", []byte{0xd0}, SumTable{3: 1}, 1},
		{"empty", nil, SumTable{}, 0},
	} {
		sk, err := SketchReader(bytes.NewReader(c.in), DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		if sk.Sum != c.sum || sk.Key != c.key {
			t.Errorf("%s: sum %v key %d, want sum %v key %d", c.name, sk.Sum, sk.Key, c.sum, c.key)
		}
	}
}

func TestJudge(t *testing.T) {
	tol, err := Tolerances{}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	q := Summary{Size: 10000, Key: 5000, Strong: [32]byte{1}}
	q.Sum[1] = 1000
	for _, c := range []struct {
		name               string
		edit               func(s *Summary)
		similar, identical bool
	}{
		{"itself", func(*Summary) {}, true, true},
		{"same sums, other bytes", func(s *Summary) { s.Strong[0] = 2 }, true, false},
		{"key at the tolerance", func(s *Summary) { s.Key += 200; s.Strong[0] = 2 }, true, false},
		{"key past it", func(s *Summary) { s.Key -= 201; s.Strong[0] = 2 }, false, false},
		{"sum at the tolerance", func(s *Summary) { s.Sum[1] += 200 }, true, false},
		{"sum past it", func(s *Summary) { s.Sum[1] += 100; s.Sum[5] = 101 }, false, false},
		{"size too far", func(s *Summary) { s.Size = 9499 }, false, false},
		{"size close", func(s *Summary) { s.Size = 10500 }, true, false},
	} {
		s := q
		c.edit(&s)
		v := tol.Judge(&q, &s)
		if v.Similar != c.similar || v.Identical != c.identical || v.KeyTolerance != 200 || v.SumTolerance != 200 {
			t.Errorf("%s: %+v, want similar %v identical %v and tolerances 200", c.name, v, c.similar, c.identical)
		}
	}
}

func TestKeyRange(t *testing.T) {
	tol, _ := Tolerances{}.Normalize()
	for _, c := range []struct {
		key    uint32
		size   int64
		lo, hi uint32
	}{
		{5000, 10000, 4800, 5200},
		{100, 10000, 0, 300},
		{1<<32 - 100, 10000, 1<<32 - 300, 1<<32 - 1},
		{7, 10, 7, 7},
	} {
		if lo, hi := tol.KeyRange(c.key, c.size); lo != c.lo || hi != c.hi {
			t.Errorf("KeyRange(%d, %d) = %d, %d; want %d, %d", c.key, c.size, lo, hi, c.lo, c.hi)
		}
	}
}

func TestTolerancesNormalize(t *testing.T) {
	for _, bad := range []Tolerances{{Key: -1}, {SizeRatio: 1.5}, {Sum: 17}} {
		if _, err := bad.Normalize(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
