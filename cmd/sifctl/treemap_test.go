package main

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReportTreemap: the squarified treemap tiles its box: every
// rectangle inside it, none overlapping another, each with an area in
// proportion to its value, and near square when the values allow.
func TestReportTreemap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := [][]float64{
		{1},
		{6, 6, 4, 3, 2, 2, 1},
		{1000, 1, 1, 1},
		{5, 5, 5, 5, 5, 5, 5, 5, 5},
	}
	for range 20 {
		vs := make([]float64, 1+r.IntN(60))
		for i := range vs {
			vs[i] = math.Exp(r.Float64() * 12) // a spread as of directory sizes
		}
		slices.SortFunc(vs, func(a, b float64) int { return cmp.Compare(b, a) })
		cases = append(cases, vs)
	}
	for _, box := range []rect{{0, 0, 1200, 560}, {10, 20, 300, 900}} {
		for _, vs := range cases {
			checkTreemap(t, vs, box, squarify(vs, box))
		}
	}
	// The classic example of the paper, in a 6 by 4 box: the first two
	// values fill the left column as two rectangles of 3 by 2.
	got := squarify([]float64{6, 6, 4, 3, 2, 2, 1}, rect{0, 0, 6, 4})
	if want := (rect{0, 0, 3, 2}); !near(got[0], want) || !near(got[1], rect{0, 2, 3, 2}) {
		t.Errorf("paper's example: %v, want %v and {0 2 3 2} first", got[:2], want)
	}
	if worstOf(got) > 3 {
		t.Errorf("paper's example: aspect ratios up to %.2f, want at most 3: %v", worstOf(got), got)
	}
}

func checkTreemap(t *testing.T, vs []float64, box rect, rs []rect) {
	t.Helper()
	if len(rs) != len(vs) {
		t.Fatalf("%d rectangles for %d values", len(rs), len(vs))
	}
	var total, covered float64
	for _, v := range vs {
		total += v
	}
	const eps = 1e-6
	for i, r := range rs {
		if r.W <= 0 || r.H <= 0 || r.X < box.X-eps || r.Y < box.Y-eps ||
			r.X+r.W > box.X+box.W+eps || r.Y+r.H > box.Y+box.H+eps {
			t.Fatalf("values %v: rectangle %d %v is not inside %v", vs, i, r, box)
		}
		want := vs[i] / total * box.W * box.H
		if math.Abs(r.W*r.H-want) > 1e-6*box.W*box.H {
			t.Errorf("values %v: rectangle %d has area %g, want %g", vs, i, r.W*r.H, want)
		}
		covered += r.W * r.H
		for j := range i {
			o := rs[j]
			dx := math.Min(r.X+r.W, o.X+o.W) - math.Max(r.X, o.X)
			dy := math.Min(r.Y+r.H, o.Y+o.H) - math.Max(r.Y, o.Y)
			if dx > eps && dy > eps {
				t.Fatalf("values %v: rectangles %d %v and %d %v overlap", vs, j, o, i, r)
			}
		}
	}
	if math.Abs(covered-box.W*box.H) > 1e-6*box.W*box.H {
		t.Errorf("values %v: the rectangles cover %g of %g", vs, covered, box.W*box.H)
	}
}

func worstOf(rs []rect) float64 {
	w := 1.0
	for _, r := range rs {
		w = max(w, r.W/r.H, r.H/r.W)
	}
	return w
}

func near(a, b rect) bool {
	return math.Abs(a.X-b.X) < 1e-9 && math.Abs(a.Y-b.Y) < 1e-9 && math.Abs(a.W-b.W) < 1e-9 && math.Abs(a.H-b.H) < 1e-9
}
