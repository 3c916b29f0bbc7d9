package index

import "testing"

// TestPairTableOverflow: a pair whose weight or count outgrows the packed
// word keeps counting exactly.
func TestPairTableOverflow(t *testing.T) {
	tb := newPairTable()
	tb.add(1, pairWeightMax-5)
	tb.add(1, 5) // exactly the most a packed word holds
	tb.add(1, 7) // beyond it
	tb.add(1, 1)
	tb.packed[2] = pairCountMax // a count at the most, weight 0
	tb.add(2, 3)
	tb.add(2, 3)
	tb.add(3, 9)
	got := map[uint64]pairShare{}
	tb.each(func(k uint64, ps pairShare) { got[k] = ps })
	want := map[uint64]pairShare{
		1: {pairWeightMax + 8, 4},
		2: {6, pairCountMax + 2},
		3: {9, 1},
	}
	if len(got) != len(want) || tb.len() != len(want) {
		t.Fatalf("got %v (len %d), want %v", got, tb.len(), want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("pair %d: %+v, want %+v", k, got[k], w)
		}
	}
	tb.deleteFunc(func(k uint64) bool { return k != 3 })
	if tb.len() != 1 || len(tb.big) != 0 {
		t.Errorf("after deleting pairs 1 and 2: %d pairs, %d big", tb.len(), len(tb.big))
	}
}
