package explain

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
)

// ErrTooLarge is returned for a file larger than Options.MaxSize.
var ErrTooLarge = errors.New("explain: file too large to explain")

// Unit is what a run's ranges are counted in.
type Unit string

const (
	Lines Unit = "lines" // both files are text
	Bytes Unit = "bytes" // either file is binary
)

// Options tune Explain. A nil *Options, and a zero field, mean the
// defaults.
type Options struct {
	// MinRunBytes is the fewest bytes other than white space a run must
	// hold (a run that is the whole of either file is kept whatever its
	// length): shorter agreements, a closing brace or a blank line, are
	// chance. Default 32.
	MinRunBytes int
	// MaxCandidates is the most places in B tried for one position of A.
	// Default 32.
	MaxCandidates int
	// BlockSize is the length of the B blocks binary files are anchored
	// on: every common stretch of 2·BlockSize−1 bytes or more is found.
	// Default 32.
	BlockSize int
	// MaxSize is the largest file explained, in bytes. Default 64 MiB.
	MaxSize int64
}

// Defaults of Options.
const (
	DefaultMinRunBytes   = 32
	DefaultMaxCandidates = 32
	DefaultBlockSize     = 32
	DefaultMaxSize       = 64 << 20
)

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.MinRunBytes <= 0 {
		v.MinRunBytes = DefaultMinRunBytes
	}
	if v.MaxCandidates <= 0 {
		v.MaxCandidates = DefaultMaxCandidates
	}
	if v.BlockSize <= 0 {
		v.BlockSize = DefaultBlockSize
	}
	if v.MaxSize <= 0 {
		v.MaxSize = DefaultMaxSize
	}
	return v
}

// Side describes one of the two files. Path and PathRaw are the caller's
// (see ipc.PathFields); Changed is set by a caller that found the file
// changed since it was indexed, so the explanation is of its current
// bytes.
type Side struct {
	Path    string `json:"path,omitempty"`
	PathRaw string `json:"path_raw,omitempty"`
	Size    int64  `json:"size"`
	Type    string `json:"type"`            // "text" or "binary"
	Lines   int    `json:"lines,omitempty"` // text only
	Changed bool   `json:"changed_since_indexed,omitempty"`
}

// Run is one stretch of A equal to one stretch of B.
type Run struct {
	// ALines and BLines are the first and last lines of the run, counted
	// from 1, in unit Lines; zero in unit Bytes.
	ALines, BLines [2]int
	// AOff, ALen, BOff and BLen are the run's bytes in A and B. In unit
	// Lines they cover whole lines with their line ends, so ALen and BLen
	// differ when the line ends do.
	AOff, ALen, BOff, BLen int64
	// Boilerplate is set by MarkBoilerplate.
	Boilerplate bool
}

// Explanation is what two files share. Its JSON form (MarshalJSON) is
// documented in the package doc, "JSON".
type Explanation struct {
	Unit Unit
	A, B Side
	Runs []Run // in A's order; they do not overlap in A
	// Judged is set once MarkBoilerplate has run; Note says why it was
	// not, when the caller has a reason to give.
	Judged bool
	Note   string
}

// Shared returns the bytes of A and of B covered by runs, each byte once;
// with counted, only by runs that are not boilerplate.
func (e *Explanation) Shared(counted bool) (a, b int64) {
	var as, bs [][2]int64
	for _, r := range e.Runs {
		if counted && r.Boilerplate {
			continue
		}
		as = append(as, [2]int64{r.AOff, r.AOff + r.ALen})
		bs = append(bs, [2]int64{r.BOff, r.BOff + r.BLen})
	}
	return union(as), union(bs)
}

// union returns the length of the union of half-open intervals.
func union(iv [][2]int64) int64 {
	slices.SortFunc(iv, func(x, y [2]int64) int {
		switch {
		case x[0] < y[0]:
			return -1
		case x[0] > y[0]:
			return 1
		}
		return 0
	})
	var n, end int64
	for _, v := range iv {
		if v[1] <= end {
			continue
		}
		n += v[1] - max(v[0], end)
		end = v[1]
	}
	return n
}

// Explain finds the runs a and b share. The caller keeps a and b, which
// Explain only reads; the result holds no reference to them. Side.Path is
// left for the caller to fill in. A file larger than MaxSize is refused
// with an error wrapping ErrTooLarge.
func Explain(a, b []byte, o *Options) (*Explanation, error) {
	opt := o.withDefaults()
	for _, s := range []struct {
		name string
		n    int
	}{{"A", len(a)}, {"B", len(b)}} {
		if int64(s.n) > opt.MaxSize {
			return nil, fmt.Errorf("explain: %s has %d bytes, more than %d: %w", s.name, s.n, opt.MaxSize, ErrTooLarge)
		}
	}
	e := &Explanation{Unit: Bytes,
		A: Side{Size: int64(len(a)), Type: typeOf(a)},
		B: Side{Size: int64(len(b)), Type: typeOf(b)}}
	if e.A.Type == "text" && e.B.Type == "text" {
		e.Unit = Lines
		la, lb := splitLines(a), splitLines(b)
		e.A.Lines, e.B.Lines = len(la.lines), len(lb.lines)
		e.Runs = matchLines(la, lb, &opt)
	} else {
		e.Runs = matchBytes(a, b, &opt)
	}
	return e, nil
}

// typeOf classifies data as package fingerprint does (texttype.go): binary
// when its first 8 KiB hold a NUL byte, or more than 10 % of control bytes
// other than \t \n \v \f \r \b and ESC.
func typeOf(data []byte) string {
	head := data[:min(len(data), 8<<10)]
	ctrl := 0
	for _, c := range head {
		switch {
		case c == 0:
			return "binary"
		case c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == '\b' || c == 0x1b:
		case c < 0x20 || c == 0x7f:
			ctrl++
		}
	}
	if ctrl*10 > len(head) {
		return "binary"
	}
	return "text"
}

// line is one line of a file: its bytes data[off:off+n], line end
// included, and the hash of its bytes without the line end.
type line struct {
	off, n int
	body   int // length without the line end
	h      uint64
	solid  int // bytes other than white space
}

type lineFile struct {
	data  []byte
	lines []line
}

var lineSeed = maphash.MakeSeed()

func splitLines(data []byte) lineFile {
	f := lineFile{data: data, lines: make([]line, 0, bytes.Count(data, []byte{'\n'})+1)}
	for off := 0; off < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		body := end - off
		if body > 0 && data[end-1] == '\n' {
			body--
			if body > 0 && data[off+body-1] == '\r' {
				body--
			}
		}
		solid := 0
		for _, c := range data[off : off+body] {
			if c != ' ' && c != '\t' && c != '\r' && c != '\f' && c != '\v' {
				solid++
			}
		}
		f.lines = append(f.lines, line{off: off, n: end - off, body: body,
			h: maphash.Bytes(lineSeed, data[off:off+body]), solid: solid})
		off = end
	}
	return f
}

func (f *lineFile) body(i int) []byte {
	l := f.lines[i]
	return f.data[l.off : l.off+l.body]
}

// matchLines is anchor-and-extend over lines: every line of A is an
// anchor into the lines of B with its hash, the longest extension forward
// from the candidates tried wins, is extended backward over lines not yet
// in a run, and is kept when it is long enough; A then resumes after it.
func matchLines(a, b lineFile, o *Options) []Run {
	na, nb := len(a.lines), len(b.lines)
	if na == 0 || nb == 0 {
		return nil
	}
	occ := make(map[uint64][]int32, nb)
	for j, l := range b.lines {
		occ[l.h] = append(occ[l.h], int32(j))
	}
	eq := func(i, j int) bool {
		return a.lines[i].h == b.lines[j].h && bytes.Equal(a.body(i), b.body(j))
	}
	var runs []Run
	lo, delta := 0, 0 // A lines before lo are settled; delta is the last run's j−i
	for i := 0; i < na; {
		cands := occ[a.lines[i].h]
		best, bestJ := 0, -1
		if len(cands) > 0 {
			start, _ := slices.BinarySearch(cands, int32(i+delta))
			for k := range min(o.MaxCandidates, len(cands)) {
				j := int(cands[(start+k)%len(cands)])
				if min(na-i, nb-j) <= best {
					continue // cannot do better
				}
				n := 0
				for i+n < na && j+n < nb && eq(i+n, j+n) {
					n++
				}
				if n > best {
					best, bestJ = n, j
				}
			}
		}
		if best == 0 {
			i++
			continue
		}
		back := 0
		for i-back-1 >= lo && bestJ-back-1 >= 0 && eq(i-back-1, bestJ-back-1) {
			back++
		}
		ai, bj, n := i-back, bestJ-back, back+best
		solid := 0
		for k := ai; k < ai+n; k++ {
			solid += a.lines[k].solid
		}
		whole := n == na || n == nb
		if solid < o.MinRunBytes && !whole {
			i++ // chance agreement: leave its lines free for a longer run
			continue
		}
		first, last := a.lines[ai], a.lines[ai+n-1]
		bfirst, blast := b.lines[bj], b.lines[bj+n-1]
		runs = append(runs, Run{
			ALines: [2]int{ai + 1, ai + n}, BLines: [2]int{bj + 1, bj + n},
			AOff: int64(first.off), ALen: int64(last.off + last.n - first.off),
			BOff: int64(bfirst.off), BLen: int64(blast.off + blast.n - bfirst.off),
		})
		lo, delta = ai+n, bj-ai
		i = lo
	}
	return runs
}

// Rolling hash of BlockSize bytes (Karp-Rabin, modulo 2^64).
const rollBase = 0x100000001b3

// matchBytes is Bentley and McIlroy's scheme: B's blocks at multiples of
// the block size are hashed into a table, a rolling hash over every
// position of A looks them up, and a verified hit is extended byte by
// byte both ways.
func matchBytes(a, b []byte, o *Options) []Run {
	w := o.BlockSize
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	if bytes.Equal(a, b) {
		return []Run{{ALen: int64(len(a)), BLen: int64(len(b))}}
	}
	if len(a) < w || len(b) < w {
		return nil
	}
	var pow uint64 = 1 // rollBase^(w-1)
	for range w - 1 {
		pow *= rollBase
	}
	hash := func(p []byte) uint64 {
		var h uint64
		for _, c := range p {
			h = h*rollBase + uint64(c)
		}
		return h
	}
	occ := make(map[uint64][]int32, len(b)/w+1)
	for j := 0; j+w <= len(b); j += w {
		h := hash(b[j : j+w])
		occ[h] = append(occ[h], int32(j))
	}
	var runs []Run
	lo, delta := 0, 0
	// try returns the longest run through a hit of A position i, whose
	// window hashes to h, on the candidates tried.
	try := func(i int, h uint64) (best, bestI, bestJ int) {
		cands := occ[h]
		if len(cands) == 0 {
			return 0, 0, 0
		}
		start, _ := slices.BinarySearch(cands, int32(i+delta))
		for k := range min(o.MaxCandidates, len(cands)) {
			j := int(cands[(start+k)%len(cands)])
			if min(len(a)-i, len(b)-j)+min(i-lo, j) <= best {
				continue // cannot do better
			}
			if !bytes.Equal(a[i:i+w], b[j:j+w]) {
				continue
			}
			f := w + commonPrefix(a[i+w:], b[j+w:])
			back := 0
			for i-back-1 >= lo && j-back-1 >= 0 && a[i-back-1] == b[j-back-1] {
				back++
			}
			if f+back > best {
				best, bestI, bestJ = f+back, i-back, j-back
			}
		}
		return best, bestI, bestJ
	}
	roll := func(h uint64, i int) uint64 { return (h-uint64(a[i])*pow)*rollBase + uint64(a[i+w]) }
	i := 0
	h := hash(a[:w])
	for {
		if best, bi, bj := try(i, h); best > 0 {
			// The hits of the next w−1 positions are on other
			// diagonals, through other blocks of B: in periodic data
			// one of them may make a longer run.
			hs := h
			for s := 1; s < w && i+s+w <= len(a); s++ {
				hs = roll(hs, i+s-1)
				if best == len(a)-lo || best == len(b) {
					break // nothing longer is possible
				}
				if n, si, sj := try(i+s, hs); n > best {
					best, bi, bj = n, si, sj
				}
			}
			if best >= o.MinRunBytes || best == len(a) || best == len(b) {
				runs = append(runs, Run{AOff: int64(bi), ALen: int64(best), BOff: int64(bj), BLen: int64(best)})
				lo, delta = bi+best, bj-bi
				i = lo
				if i+w > len(a) {
					break
				}
				h = hash(a[i : i+w])
				continue
			}
		}
		if i+w >= len(a) {
			break
		}
		h = roll(h, i)
		i++
	}
	return runs
}

// commonPrefix returns the length of the longest common prefix of x and y.
func commonPrefix(x, y []byte) int {
	n := min(len(x), len(y))
	i := 0
	for i+8 <= n && string(x[i:i+8]) == string(y[i:i+8]) {
		i += 8
	}
	for i < n && x[i] == y[i] {
		i++
	}
	return i
}
