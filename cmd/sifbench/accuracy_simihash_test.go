package main

import (
	"testing"
)

// TestSimiScore: SimiHash's score is its sum-table distance in percent of
// the query's size, negated so that the nearer scores higher, and the
// table shows the distance as it is.
func TestSimiScore(t *testing.T) {
	for _, tc := range []struct {
		dist uint64
		size int64
		want float64
	}{
		{0, 1000, 0},
		{20, 1000, -2},
		{1, 3, -33.33},
		{5, 0, 0},
	} {
		if got := simiScore(tc.dist, tc.size); got != tc.want {
			t.Errorf("simiScore(%d, %d) = %v, want %v", tc.dist, tc.size, got, tc.want)
		}
	}
	if simiScore(10, 1000) <= simiScore(20, 1000) {
		t.Error("a nearer sum table does not score higher")
	}
	if got := f1Cell(f1Result{F1: 0.5, Threshold: -1.5}, simiToolName); got != "0.500 @1.5" {
		t.Errorf("f1Cell: %q, want the distance as it is, 0.500 @1.5", got)
	}
}
