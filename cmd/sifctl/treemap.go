package main

// The treemap of `sifctl report`: rectangles whose areas are proportional
// to values, laid out in Go so that the page draws them as plain SVG,
// without a script.

// rect is a rectangle: its top left corner, width and height.
type rect struct{ X, Y, W, H float64 }

// squarify lays values out in box as a squarified treemap (Bruls,
// Huizing and van Wijk, 2000): rows of rectangles along the box's
// shorter side, each row grown while that makes its worst aspect ratio
// better, so the rectangles come out as near square as the order allows.
// values must be positive and are best sorted largest first; the
// rectangles, one per value in its order, tile box, each with an area in
// proportion to its value.
func squarify(values []float64, box rect) []rect {
	out := make([]rect, len(values))
	var total float64
	for _, v := range values {
		total += v
	}
	if total <= 0 || box.W <= 0 || box.H <= 0 {
		return out
	}
	areas := make([]float64, len(values))
	for i, v := range values {
		areas[i] = v * box.W * box.H / total
	}
	for i := 0; i < len(areas); {
		side := min(box.W, box.H)
		j := i + 1
		for j < len(areas) && worst(areas[i:j+1], side) <= worst(areas[i:j], side) {
			j++
		}
		if j == len(areas) {
			// The last row fills what is left, whatever the rounding.
			box = layRow(areas[i:j], box, out[i:j], true)
			break
		}
		box = layRow(areas[i:j], box, out[i:j], false)
		i = j
	}
	return out
}

// worst is the largest aspect ratio (at least 1) of the rectangles of
// row laid along a side of length side.
func worst(row []float64, side float64) float64 {
	var sum, lo, hi float64
	for k, a := range row {
		sum += a
		if k == 0 || a < lo {
			lo = a
		}
		if a > hi {
			hi = a
		}
	}
	s2, w2 := sum*sum, side*side
	return max(w2*hi/s2, s2/(w2*lo))
}

// layRow places the areas of row in a strip along the shorter side of
// box, into out, and returns what is left of box. With last, the strip
// takes the whole of box.
func layRow(row []float64, box rect, out []rect, last bool) rect {
	var sum float64
	for _, a := range row {
		sum += a
	}
	if box.W >= box.H {
		// A column at the left.
		w := sum / box.H
		if last {
			w = box.W
		}
		y := box.Y
		for k, a := range row {
			h := a / w
			if k == len(row)-1 {
				h = box.Y + box.H - y
			}
			out[k] = rect{box.X, y, w, h}
			y += h
		}
		return rect{box.X + w, box.Y, box.W - w, box.H}
	}
	// A row at the top.
	h := sum / box.W
	if last {
		h = box.H
	}
	x := box.X
	for k, a := range row {
		w := a / h
		if k == len(row)-1 {
			w = box.X + box.W - x
		}
		out[k] = rect{x, box.Y, w, h}
		x += w
	}
	return rect{box.X, box.Y + h, box.W, box.H - h}
}
