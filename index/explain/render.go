package explain

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Percent returns part of whole as a percentage rounded to two decimals
// (0 for an empty whole).
func Percent(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(int64(float64(part)/float64(whole)*10000+0.5)) / 100
}

type runJSON struct {
	ALines      *[2]int  `json:"a_lines,omitempty"`
	BLines      *[2]int  `json:"b_lines,omitempty"`
	ABytes      [2]int64 `json:"a_bytes"`
	BBytes      [2]int64 `json:"b_bytes"`
	Boilerplate bool     `json:"boilerplate"`
}

type explanationJSON struct {
	A                 Side      `json:"a"`
	B                 Side      `json:"b"`
	Unit              Unit      `json:"unit"`
	Runs              []runJSON `json:"runs"`
	AShare            float64   `json:"a_share"`
	BShare            float64   `json:"b_share"`
	ABoilerplateShare float64   `json:"a_boilerplate_share"`
	BBoilerplateShare float64   `json:"b_boilerplate_share"`
	Judged            bool      `json:"boilerplate_judged"`
	Note              string    `json:"note,omitempty"`
}

// MarshalJSON encodes e in the form the package doc describes: the two sides,
// the runs (lines first and last from 1, bytes as offset and length), the
// share of each file the runs cover and the share covered only by
// boilerplate, in percent.
func (e *Explanation) MarshalJSON() ([]byte, error) {
	out := explanationJSON{A: e.A, B: e.B, Unit: e.Unit, Runs: make([]runJSON, 0, len(e.Runs)),
		Judged: e.Judged, Note: e.Note}
	for _, r := range e.Runs {
		j := runJSON{ABytes: [2]int64{r.AOff, r.ALen}, BBytes: [2]int64{r.BOff, r.BLen}, Boilerplate: r.Boilerplate}
		if e.Unit == Lines {
			al, bl := r.ALines, r.BLines
			j.ALines, j.BLines = &al, &bl
		}
		out.Runs = append(out.Runs, j)
	}
	as, bs := e.Shared(false)
	ac, bc := e.Shared(true)
	out.AShare, out.BShare = Percent(as, e.A.Size), Percent(bs, e.B.Size)
	out.ABoilerplateShare, out.BBoilerplateShare = Percent(as-ac, e.A.Size), Percent(bs-bc, e.B.Size)
	return json.Marshal(out)
}

// TextOptions shape WriteText. A nil *TextOptions means the defaults.
type TextOptions struct {
	// Width is the width of the view in columns; 0 means 100, and less
	// than 40 is taken as 40.
	Width int
	// Color highlights the runs with ANSI colours: each run in one colour
	// on both sides, boilerplate faint.
	Color bool
	// MaxRows caps the rows of the side-by-side view; 0 means 200.
	MaxRows int
	// Name renders a side's path in the header, e.g. quoted for a
	// terminal; nil prints Path as it is.
	Name func(Side) string
}

// Row markers of the side-by-side view.
const (
	markShared      = '='
	markBoilerplate = '~'
	markOnlyA       = '<'
	markOnlyB       = '>'
)

var palette = []string{"32", "36", "33", "35", "34"}

// WriteText writes e as a header, the shares, and a compact side-by-side
// view: one row per run and per stretch found in only one file, in A's
// order and then B's, each showing its range and the first line (or the
// first bytes, in hex) of that range. a and b must be the bytes e was
// computed from.
func (e *Explanation) WriteText(w io.Writer, a, b []byte, o *TextOptions) error {
	opt := TextOptions{}
	if o != nil {
		opt = *o
	}
	if opt.Width == 0 {
		opt.Width = 100
	}
	opt.Width = max(opt.Width, 40)
	if opt.MaxRows <= 0 {
		opt.MaxRows = 200
	}
	bw := bufio.NewWriter(w)
	unit := "whole lines"
	for _, s := range []struct {
		name string
		side Side
	}{{"A", e.A}, {"B", e.B}} {
		path := s.side.Path
		if opt.Name != nil {
			path = opt.Name(s.side)
		}
		fmt.Fprintf(bw, "%s: %s (", s.name, path)
		if e.Unit == Lines {
			fmt.Fprintf(bw, "%d lines, ", s.side.Lines)
		}
		fmt.Fprintf(bw, "%d bytes, %s)", s.side.Size, s.side.Type)
		if s.side.Changed {
			fmt.Fprint(bw, ", changed since indexed: explained as it is now")
		}
		fmt.Fprintln(bw)
	}
	if e.Unit == Bytes {
		unit = "bytes"
	}
	as, bs := e.Shared(false)
	ac, bc := e.Shared(true)
	nb := 0
	for _, r := range e.Runs {
		if r.Boilerplate {
			nb++
		}
	}
	fmt.Fprintf(bw, "shared: %.2f%% of A, %.2f%% of B, in %d %s of %s\n",
		Percent(as, e.A.Size), Percent(bs, e.B.Size), len(e.Runs), plural(len(e.Runs), "run", "runs"), unit)
	switch {
	case !e.Judged && e.Note != "":
		fmt.Fprintf(bw, "boilerplate: not judged (%s)\n", e.Note)
	case !e.Judged:
		fmt.Fprintln(bw, "boilerplate: not judged")
	case nb > 0:
		fmt.Fprintf(bw, "boilerplate: %d %s, %.2f%% of A and %.2f%% of B, too common to count\n",
			nb, plural(nb, "run", "runs"), Percent(as-ac, e.A.Size), Percent(bs-bc, e.B.Size))
	}
	if len(e.Runs) > 0 || e.A.Size > 0 || e.B.Size > 0 {
		v := view{e: e, a: a, b: b, opt: opt, w: bw}
		if e.Unit == Lines {
			v.aStarts, v.bStarts = lineStarts(a), lineStarts(b)
		}
		v.rows()
	}
	return bw.Flush()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// view renders the side-by-side rows.
type view struct {
	e    *Explanation
	a, b []byte
	opt  TextOptions
	w    *bufio.Writer
	// aStarts and bStarts are the offsets of the lines of a and b.
	aStarts, bStarts []int
	n                int // rows written
	more             int // rows left out
}

// span is a range of a file in the view's unit: lines [first, last] from
// 1, or bytes [first, last] from 0.
type span struct{ first, last int64 }

func (v *view) rows() {
	e := v.e
	half := (v.opt.Width - 5) / 2
	// A's order: runs and the stretches between them.
	var next int64 = v.start()
	for k, r := range e.Runs {
		as, bs := v.spans(r)
		if as.first > next {
			v.row(markOnlyA, -1, span{next, as.first - 1}, nil, half)
		}
		mark := byte(markShared)
		if r.Boilerplate {
			mark = markBoilerplate
		}
		v.row(mark, k, as, &bs, half)
		next = as.last + 1
	}
	if end := v.end(true); next <= end {
		v.row(markOnlyA, -1, span{next, end}, nil, half)
	}
	// B's stretches in no run, in B's order.
	covered := make([]span, 0, len(e.Runs))
	for _, r := range e.Runs {
		_, bs := v.spans(r)
		covered = append(covered, bs)
	}
	sortSpans(covered)
	next = v.start()
	for _, s := range covered {
		if s.first > next {
			v.rowB(span{next, s.first - 1}, half)
		}
		next = max(next, s.last+1)
	}
	if end := v.end(false); next <= end {
		v.rowB(span{next, end}, half)
	}
	if v.more > 0 {
		fmt.Fprintf(v.w, "  ... %d more %s (see --json)\n", v.more, plural(v.more, "row", "rows"))
	}
	fmt.Fprintf(v.w, "  %c shared   %c boilerplate, did not count   %c only in A   %c only in B\n",
		markShared, markBoilerplate, markOnlyA, markOnlyB)
}

func (v *view) start() int64 {
	if v.e.Unit == Lines {
		return 1
	}
	return 0
}

// end is the last line (or byte) of A or B.
func (v *view) end(isA bool) int64 {
	s := v.e.B
	if isA {
		s = v.e.A
	}
	if v.e.Unit == Lines {
		return int64(s.Lines)
	}
	return s.Size - 1
}

func (v *view) spans(r Run) (span, span) {
	if v.e.Unit == Lines {
		return span{int64(r.ALines[0]), int64(r.ALines[1])}, span{int64(r.BLines[0]), int64(r.BLines[1])}
	}
	return span{r.AOff, r.AOff + r.ALen - 1}, span{r.BOff, r.BOff + r.BLen - 1}
}

func sortSpans(s []span) {
	slices.SortFunc(s, func(x, y span) int { return cmp.Compare(x.first, y.first) })
}

func (v *view) row(mark byte, k int, as span, bs *span, half int) {
	if v.n >= v.opt.MaxRows {
		v.more++
		return
	}
	v.n++
	left := v.cell(v.a, v.aStarts, as, half)
	right := ""
	if bs != nil {
		right = v.cell(v.b, v.bStarts, *bs, half)
	}
	left = pad(left, half)
	if v.opt.Color && k >= 0 {
		c := palette[k%len(palette)]
		if mark == markBoilerplate {
			c = "2"
		}
		left = "\x1b[" + c + "m" + left + "\x1b[0m"
		if right != "" {
			right = "\x1b[" + c + "m" + right + "\x1b[0m"
		}
	}
	v.line(fmt.Sprintf("%c %s │ %s", mark, left, right))
}

// line writes one row without trailing blanks.
func (v *view) line(s string) {
	v.w.WriteString(strings.TrimRight(s, " "))
	v.w.WriteByte('\n')
}

func (v *view) rowB(bs span, half int) {
	if v.n >= v.opt.MaxRows {
		v.more++
		return
	}
	v.n++
	v.line(fmt.Sprintf("%c %s │ %s", markOnlyB, pad("", half), v.cell(v.b, v.bStarts, bs, half)))
}

// cell renders a span of data: its range and its first line (or bytes).
func (v *view) cell(data []byte, starts []int, s span, width int) string {
	label, text := rangeLabel(s), ""
	if v.e.Unit == Lines {
		text = printable(data[starts[s.first-1]:])
	} else {
		end := min(s.last+1, s.first+16, int64(len(data)))
		text = fmt.Sprintf("% x", data[s.first:end])
	}
	return clip(fmt.Sprintf("%-11s %s", label, text), width)
}

func rangeLabel(s span) string {
	if s.first == s.last {
		return fmt.Sprint(s.first)
	}
	return fmt.Sprintf("%d-%d", s.first, s.last)
}

// lineStarts returns the offset of every line of data.
func lineStarts(data []byte) []int {
	starts := []int{}
	for off := 0; off < len(data); {
		starts = append(starts, off)
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return starts
}

// printable returns the first line of data, made printable: tabs become
// two spaces, other control bytes and invalid UTF-8 dots; a CR before the
// line end is dropped. At most 512 bytes are looked at.
func printable(data []byte) string {
	data = data[:min(len(data), 512)]
	if j := bytes.IndexByte(data, '\n'); j >= 0 {
		data = bytes.TrimSuffix(data[:j], []byte{'\r'})
	}
	var sb strings.Builder
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		data = data[size:]
		switch {
		case r == '\t':
			sb.WriteString("  ")
		case r == utf8.RuneError || r < 0x20 || r == 0x7f:
			sb.WriteByte('.')
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// clip cuts s to width runes, marking the cut with "…".
func clip(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

func pad(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}
