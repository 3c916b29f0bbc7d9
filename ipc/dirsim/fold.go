package dirsim

import (
	"cmp"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The arithmetic of Similar: from the matches of each file of the query
// directory to the directories that hold a good part of it, summed and
// folded as the package doc says.

// dirPair is one match of a query file (a pair, in the package doc).
type dirPair struct {
	f         int    // the query file, an index into dirQuery.files
	host      string // g's host in the fleet; "" for this host
	path      string // the indexed file g, absolute
	shared    float64
	revShared float64
	identical bool
}

// dirQuery is the directory asked about and its files' matches.
type dirQuery struct {
	dir   string   // Q, absolute and clean
	rels  []string // its files, relative to dir
	sizes []int64  // their sizes
	bytes int64    // their total size
	pairs []dirPair
	// top returns the highest directory a match at path on host ("" for
	// this host) may count for (its root, or --prefix); "" means the
	// filesystem's root.
	top func(host, path string) string

	byPath map[hostPath]*dirCand // the candidates, set by candidates
	chains [][]*dirCand          // per pair, the candidates above it, deepest first
	gids   []int                 // per pair, its matched file's number
	// Scratch for totals and residual: best per query file, per matched
	// file, and the query files with an identical match.
	byFile, byMatch, ident *bests
}

// hostPath is a directory or a file on a host ("" for this host): the
// same path on two hosts names two directories.
type hostPath struct {
	host, path string
}

// dirCand is a candidate directory.
type dirCand struct {
	host      string // "" for this host
	path      string
	depth     int
	parent    *dirCand // the nearest candidate above it, or nil
	pairs     []int    // the pairs under it, by index
	shared    float64  // shared(D)
	revShared float64  // revShared(D)
	identical int      // query files with an identical file under it
	similar   int      // query files with only lesser matches under it
	listed    bool
}

// containment of the query directory in c, 0..1.
func (q *dirQuery) containment(c *dirCand) float64 {
	if q.bytes == 0 {
		return 0
	}
	return min(1, c.shared/float64(q.bytes))
}

// inTree reports whether path lies in the directory tree dir, by whole
// path components ("/a/b" holds "/a/b/x", not "/a/bc"); "/" holds all.
func inTree(path, dir string) bool {
	dir = strings.TrimRight(dir, string(os.PathSeparator))
	rest, ok := strings.CutPrefix(path, dir)
	return ok && (rest == "" || rest[0] == os.PathSeparator)
}

// candidates gathers the candidate directories of q's pairs, with their
// totals, deepest first. A directory is a candidate on its host: Q, its
// ancestors and its descendants are not, on this host only.
func (q *dirQuery) candidates() []*dirCand {
	byPath := make(map[hostPath]*dirCand)
	// The candidates above each matched file's directory, deepest first:
	// many matches share a directory, so each chain is built once.
	chains := make(map[hostPath][]*dirCand)
	q.chains = make([][]*dirCand, len(q.pairs))
	for i, p := range q.pairs {
		dir := hostPath{p.host, filepath.Dir(p.path)}
		ch, ok := chains[dir]
		if !ok {
			top := ""
			if q.top != nil {
				top = q.top(p.host, dir.path)
			}
			for d := dir.path; ; d = filepath.Dir(d) {
				if p.host != "" || !inTree(q.dir, d) && !inTree(d, q.dir) { // neither Q, above it, nor in it
					k := hostPath{p.host, d}
					c := byPath[k]
					if c == nil {
						c = &dirCand{host: p.host, path: d, depth: strings.Count(d, string(os.PathSeparator))}
						byPath[k] = c
					}
					ch = append(ch, c)
				}
				if d == top || filepath.Dir(d) == d {
					break
				}
			}
			for j := range ch[:max(0, len(ch)-1)] {
				ch[j].parent = ch[j+1]
			}
			chains[dir] = ch
		}
		q.chains[i] = ch
		for _, c := range ch {
			c.pairs = append(c.pairs, i)
		}
	}
	q.byPath = byPath
	// Matched files by number, for bests.
	ids := make(map[hostPath]int)
	q.gids = make([]int, len(q.pairs))
	for i, p := range q.pairs {
		k := hostPath{p.host, p.path}
		id, ok := ids[k]
		if !ok {
			id = len(ids)
			ids[k] = id
		}
		q.gids[i] = id
	}
	q.byFile, q.byMatch, q.ident = newBests(len(q.rels)), newBests(len(ids)), newBests(len(q.rels))
	out := make([]*dirCand, 0, len(byPath))
	for _, c := range byPath {
		q.totals(c)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *dirCand) int {
		return cmp.Or(cmp.Compare(b.depth, a.depth), strings.Compare(a.path, b.path), strings.Compare(a.host, b.host))
	})
	return out
}

// bests keeps the best value per key over one candidate's pairs at a
// time, without a map: a value counts for the candidate whose stamp it
// carries. Sums are in the order keys were first met; two candidates'
// sums of one set of values may differ by rounding, which more allows.
type bests struct {
	val   []float64
	stamp []int
	keys  []int // the keys met for the current stamp
	cur   int
}

func newBests(n int) *bests { return &bests{val: make([]float64, n), stamp: make([]int, n)} }

// next starts a new candidate.
func (b *bests) next() { b.cur++; b.keys = b.keys[:0] }

// put offers v for key k, and reports whether k is new to this candidate.
func (b *bests) put(k int, v float64) bool {
	if b.stamp[k] != b.cur {
		b.stamp[k], b.val[k] = b.cur, v
		b.keys = append(b.keys, k)
		return true
	}
	b.val[k] = max(b.val[k], v)
	return false
}

func (b *bests) sum() float64 {
	var s float64
	for _, k := range b.keys {
		s += b.val[k]
	}
	return s
}

// totals computes c's shared and reverse shared bytes and its counts.
func (q *dirQuery) totals(c *dirCand) {
	q.byFile.next()
	q.byMatch.next()
	q.ident.next()
	for _, i := range c.pairs {
		p := &q.pairs[i]
		q.byFile.put(p.f, p.shared)
		q.byMatch.put(q.gids[i], p.revShared)
		if p.identical {
			q.ident.put(p.f, 0)
		}
	}
	c.shared, c.revShared = q.byFile.sum(), q.byMatch.sum()
	c.identical = len(q.ident.keys)
	c.similar = len(q.byFile.keys) - c.identical
}

// more reports whether shared bytes a exceed b by more than rounding.
func more(a, b float64) bool { return a > b+0.5+1e-9*math.Abs(b) }

// fold marks the candidates to list, at containment thr (0..1) or more,
// and returns them (see the package doc).
func (q *dirQuery) fold(cands []*dirCand, thr float64) []*dirCand {
	maxChild := make(map[*dirCand]float64)
	for _, c := range cands { // deepest first: children before parents
		if c.parent != nil {
			maxChild[c.parent] = max(maxChild[c.parent], c.shared)
		}
		if q.containment(c) < thr || q.bytes == 0 {
			continue
		}
		c.listed = more(c.shared, maxChild[c]) || q.residual(c) >= thr*float64(q.bytes)
	}
	var listed []*dirCand
	for _, c := range cands {
		if c.listed && !q.part(c) {
			listed = append(listed, c)
		}
	}
	return listed
}

// residual is the shared bytes of c's files outside the listed
// candidates under it.
func (q *dirQuery) residual(c *dirCand) float64 {
	q.byFile.next()
pairs:
	for _, i := range c.pairs {
		for _, x := range q.chains[i] {
			if x == c {
				break
			}
			if x.listed {
				continue pairs
			}
		}
		p := &q.pairs[i]
		q.byFile.put(p.f, p.shared)
	}
	return q.byFile.sum()
}

// part reports whether the listed candidate c is a part of a listed
// candidate above it: its matches lie at their query paths (g is A/rel
// where f is Q/rel) under a directory A above c more than under c
// itself, and a listed candidate stands for that copy of Q between A
// and c (A itself, or the directory below it where all that A holds of
// Q is, when A adds nothing to it and so is not listed).
func (q *dirQuery) part(c *dirCand) bool {
	var listedAbove []*dirCand
	for p := c.parent; p != nil; p = p.parent {
		if p.listed {
			listedAbove = append(listedAbove, p)
		}
	}
	if len(listedAbove) == 0 {
		return false
	}
	var here, over float64
	for _, i := range c.pairs {
		p := &q.pairs[i]
		rel := string(os.PathSeparator) + q.rels[p.f]
		a, ok := strings.CutSuffix(p.path, rel)
		if !ok {
			continue
		}
		switch {
		case a == c.path:
			here += p.shared
		case len(a) < len(c.path) && inTree(c.path, a):
			for _, x := range listedAbove {
				if inTree(x.path, a) {
					over += p.shared
					break
				}
			}
		}
	}
	return over > here
}
