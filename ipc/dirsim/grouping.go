package dirsim

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sif-dev/sif/ipc"
)

// The arithmetic of Groups: from pairs of indexed files that are
// identical or similar to the groups of directories that are near-copies
// of each other, summed, kept, folded and linked as the package doc says.

// Bounds of the pairs a set of files yields.
const (
	// dirSetPairs is the most identical files whose pairs are all
	// counted: a larger set pairs its first file with each other one.
	dirSetPairs = 32
	// dirLinkPairs is the most file pairs one link between two sets of
	// identical files yields whole: beyond, the first file of each set
	// pairs with every file of the other.
	dirLinkPairs = 256
)

// Grouping sums the file pairs of groups of similar files and of sets of
// identical files into pairs of directories, and makes the groups of
// directories of them (see the package doc). Feed it with AddGroup and
// AddDupes, then call Groups once. It holds directories and files by
// number, the directory pairs, and what each file pair brought them. It
// is not safe for concurrent use.
type Grouping struct {
	tops   map[string]bool
	dirs   []gDir
	dirID  map[string]int32
	files  []gFile
	fileID map[string]int32
	pairs  []gPair
	pairID map[uint64]int32
	// filePairs are the file pairs added; shares what they bring the
	// candidate pairs (sum).
	filePairs []filePair
	shares    []gShare
}

// gDir is a directory above a file of a pair.
type gDir struct {
	path   string
	parent int32 // -1 for a top
	known  int64 // bytes of the paired files under it: a lower bound of its size
	// From the daemon's totals (haveTotal).
	bytes, nfiles int64
	truncated     bool
	haveTotal     bool
}

type gFile struct {
	dir  int32
	name string // its base name
	size int64
}

// gPair is a pair of directories, a < b by number; side 0 is a, side 1 b.
// When one holds the other (holder is its side, else -1), the holder
// stands for its files outside the other.
type gPair struct {
	a, b   int32
	holder int8
	parent int32 // the pair of their parents, -1 when it is no candidate (set by sum)
	// shared[s] is the bytes of side s found in the other; save[s] the
	// same without the files whose best matches are hard links of them;
	// identical[s] and similar[s] count side s's files that have an
	// identical file, or only similar ones, in the other.
	shared, save       [2]float64
	identical, similar [2]int
	cont               [2]float64 // containment of side s in the other, 0..1
	res                float64    // resemblance, 0..1
	kept               bool       // the resemblance reaches the threshold
	redundant          bool       // kept, but a pair of subdirectories holds all it shares
	folded             bool       // kept, and part of a kept pair above it
	part               bool       // left, but its ancestors at the same depth offset are in one group
}

// gShare is what one file pair brought one directory pair, for one of
// the two files: key is pair<<32 | file.
type gShare struct {
	key    uint64
	shared float64
	flags  uint8
}

const (
	shareSide1     = 1 << iota // the file is on side 1 of the pair
	shareIdentical             // the two files are identical
	shareHardLink              // the two files are one file on disk
)

// NewGrouping starts a grouping whose pairs climb no higher than the
// directories tops (absolute: the daemon's roots and the prefix asked,
// if any); a filesystem's root is always one.
func NewGrouping(tops []string) *Grouping {
	g := &Grouping{tops: make(map[string]bool), dirID: make(map[string]int32),
		fileID: make(map[string]int32), pairID: make(map[uint64]int32)}
	for _, t := range tops {
		if t != "" {
			g.tops[filepath.Clean(t)] = true
		}
	}
	return g
}

// dir returns the number of directory path, adding it and the
// directories above it up to its top.
func (g *Grouping) dir(path string) int32 {
	if id, ok := g.dirID[path]; ok {
		return id
	}
	parent := int32(-1)
	if up := filepath.Dir(path); !g.tops[path] && up != path {
		parent = g.dir(up)
	}
	id := int32(len(g.dirs))
	g.dirs = append(g.dirs, gDir{path: path, parent: parent})
	g.dirID[path] = id
	return id
}

// file returns the number of the file at path, of size bytes.
func (g *Grouping) file(path string, size int64) int32 {
	if id, ok := g.fileID[path]; ok {
		return id
	}
	id := int32(len(g.files))
	g.files = append(g.files, gFile{dir: g.dir(filepath.Dir(path)), name: filepath.Base(path), size: size})
	g.fileID[path] = id
	return id
}

// addGroup counts the file pairs of a groups answer's group (asked for
// with its links): each link pairs every file of one end, its copies
// included, with every file of the other (up to dirLinkPairs pairs).
func (g *Grouping) addGroup(grp ipc.Group) {
	files := append([]ipc.GroupFile{grp.Reference}, grp.Members...)
	ids := make([][]int32, len(files))
	idsOf := func(i int) []int32 {
		if ids[i] == nil {
			f := &files[i]
			ids[i] = append(ids[i], g.file(ipc.FilePath{Path: f.Path, PathRaw: f.PathRaw}.Exact(), f.Size))
			for _, c := range f.Copies {
				ids[i] = append(ids[i], g.file(c.Exact(), f.Size))
			}
		}
		return ids[i]
	}
	for _, l := range grp.Links {
		if l.A < 0 || l.B < 0 || l.A >= len(files) || l.B >= len(files) || l.A == l.B {
			continue // the client's decoder refuses these
		}
		as, bs := idsOf(l.A), idsOf(l.B)
		ab, ba := l.AInB/100, l.BInA/100
		if len(as)*len(bs) <= dirLinkPairs {
			for _, x := range as {
				for _, y := range bs {
					g.add(x, y, ab, ba, false, false)
				}
			}
			continue
		}
		for _, y := range bs {
			g.add(as[0], y, ab, ba, false, false)
		}
		for _, x := range as[1:] {
			g.add(x, bs[0], ab, ba, false, false)
		}
	}
}

// addDupes counts the file pairs of a set of identical files: all of them
// up to dirSetPairs files, else its first file with each other one. Hard
// links to one file are pairs that save nothing.
func (g *Grouping) addDupes(set ipc.DupeSet) {
	ids := make([]int32, len(set.Files))
	inode := make([]string, len(set.Files)) // the first path of each file's inode
	for i, f := range set.Files {
		ids[i] = g.file(f.Exact(), set.Size)
		inode[i] = f.Exact()
		if f.HardLinkOf != nil {
			inode[i] = f.HardLinkOf.Exact()
		}
	}
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			g.add(ids[i], ids[j], 1, 1, true, inode[i] == inode[j])
		}
		if len(ids) > dirSetPairs {
			break
		}
	}
}

// pair returns the number of the pair of directories x and y, adding it.
func (g *Grouping) pair(x, y int32) int32 {
	a, b := min(x, y), max(x, y)
	k := uint64(a)<<32 | uint64(b)
	if id, ok := g.pairID[k]; ok {
		return id
	}
	id := int32(len(g.pairs))
	p := gPair{a: a, b: b, holder: -1, parent: -1}
	switch pa, pb := g.dirs[a].path, g.dirs[b].path; {
	case inTree(pb, pa):
		p.holder = 0
	case inTree(pa, pb):
		p.holder = 1
	}
	g.pairs = append(g.pairs, p)
	g.pairID[k] = id
	return id
}

// add records the file pair f, h (numbers from file): fInH is how much of
// f h contains, 0..1, hInF the reverse; identical and hardLink say what
// the two are. It adds the directory pairs at the same depth offset above
// them, the candidates.
func (g *Grouping) add(f, h int32, fInH, hInF float64, identical, hardLink bool) {
	fp := filePair{f: f, h: h, fInH: min(1, fInH), hInF: min(1, hInF)}
	if identical {
		fp.flags |= shareIdentical
		fp.fInH, fp.hInF = 1, 1
	}
	if hardLink {
		fp.flags |= shareHardLink
	}
	x, y := g.files[f].dir, g.files[h].dir
	if x == y {
		return // one directory: no pair
	}
	g.filePairs = append(g.filePairs, fp)
	same := g.files[f].name == g.files[h].name // f and h lie at one relative path below x and y
	for x >= 0 && y >= 0 && x != y {
		if holds := inTree(g.dirs[x].path, g.dirs[y].path) || inTree(g.dirs[y].path, g.dirs[x].path); holds && !same {
			break
		}
		if g.pairs[g.pair(x, y)].holder >= 0 {
			break
		}
		same = same && filepath.Base(g.dirs[x].path) == filepath.Base(g.dirs[y].path)
		x, y = g.dirs[x].parent, g.dirs[y].parent
	}
}

// filePair is a pair of files as add records it.
type filePair struct {
	f, h       int32
	fInH, hInF float64
	flags      uint8 // shareIdentical, shareHardLink
}

// sum computes each candidate pair's shared bytes and file counts, and
// each directory's known bytes. A file pair counts for every candidate
// pair of an ancestor of one file and an ancestor of the other, not only
// those at the same depth offset: a copy nested deeper in a directory
// than the directory's own files counts for it. It is called once, after
// the last add.
func (g *Grouping) sum() {
	inPair := make([]bool, len(g.dirs))
	for i := range g.pairs {
		p := &g.pairs[i]
		inPair[p.a], inPair[p.b] = true, true
		if x, y := g.dirs[p.a].parent, g.dirs[p.b].parent; x >= 0 && y >= 0 {
			if up, ok := g.pairID[uint64(min(x, y))<<32|uint64(max(x, y))]; ok {
				p.parent = up
			}
		}
	}
	above := func(d int32, out []int32) []int32 {
		for ; d >= 0; d = g.dirs[d].parent {
			if inPair[d] {
				out = append(out, d)
			}
		}
		return out
	}
	var xs, ys []int32
	for _, fp := range g.filePairs {
		xs, ys = above(g.files[fp.f].dir, xs[:0]), above(g.files[fp.h].dir, ys[:0])
		for _, x := range xs {
			for _, y := range ys {
				p, ok := g.pairID[uint64(min(x, y))<<32|uint64(max(x, y))]
				if !ok {
					continue
				}
				// The holder of a pair counts only its files outside the
				// other.
				if h := g.pairs[p].holder; h >= 0 && (g.pairs[p].dir(int(h)) == x && slices.Contains(xs, y) ||
					g.pairs[p].dir(int(h)) == y && slices.Contains(ys, x)) {
					continue
				}
				fs, hs := fp.flags, fp.flags|shareSide1
				if g.pairs[p].a != x {
					fs, hs = hs, fs
				}
				g.shares = append(g.shares,
					gShare{uint64(p)<<32 | uint64(fp.f), fp.fInH * float64(g.files[fp.f].size), fs},
					gShare{uint64(p)<<32 | uint64(fp.h), fp.hInF * float64(g.files[fp.h].size), hs})
			}
		}
	}
	g.filePairs = nil
	slices.SortFunc(g.shares, func(x, y gShare) int { return cmp.Compare(x.key, y.key) })
	for i := 0; i < len(g.shares); {
		j, best, save, ident := i, 0.0, 0.0, false
		for ; j < len(g.shares) && g.shares[j].key == g.shares[i].key; j++ {
			s := &g.shares[j]
			best = max(best, s.shared)
			if s.flags&shareHardLink == 0 {
				save = max(save, s.shared)
			}
			ident = ident || s.flags&shareIdentical != 0
		}
		p, side := &g.pairs[g.shares[i].key>>32], 0
		if g.shares[i].flags&shareSide1 != 0 {
			side = 1
		}
		p.shared[side] += best
		p.save[side] += save
		if ident {
			p.identical[side]++
		} else {
			p.similar[side]++
		}
		i = j
	}
	g.shares = nil
	for _, f := range g.files {
		for d := f.dir; d >= 0; d = g.dirs[d].parent {
			g.dirs[d].known += f.size
		}
	}
}

// need returns the directories whose totals decide a pair: those of the
// pairs that may reach thr (0..1) by the bytes known under them.
func (g *Grouping) need(thr float64) []int32 {
	var out []int32
	seen := make(map[int32]bool)
	for i := range g.pairs {
		p := &g.pairs[i]
		if resemblance(p.shared, g.known(p, 0), g.known(p, 1)) < thr*(1-1e-12) {
			continue
		}
		for _, d := range [2]int32{p.a, p.b} {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// resemblance is that of two directories of a and b bytes that share
// shared (each side's shared bytes), 0..1. Fewer bytes make it higher.
func resemblance(shared [2]float64, a, b int64) float64 {
	inter := min(shared[0], shared[1])
	if union := float64(a+b) - inter; union > 0 {
		return min(1, inter/union)
	}
	return 0
}

// setTotal records directory d's totals from the daemon.
func (g *Grouping) setTotal(d int32, bytes, files int64, truncated bool) {
	x := &g.dirs[d]
	x.bytes, x.nfiles, x.truncated, x.haveTotal = bytes, files, truncated, true
}

// bytes returns the bytes indexed under side s of pair p, outside the
// other side when s holds it.
func (g *Grouping) bytes(p *gPair, s int) int64 {
	b := g.dirs[p.dir(s)].bytes
	if int(p.holder) == s {
		b -= g.dirs[p.dir(1-s)].bytes
	}
	return b
}

// known is bytes for the bytes known.
func (g *Grouping) known(p *gPair, s int) int64 {
	b := g.dirs[p.dir(s)].known
	if int(p.holder) == s {
		b -= g.dirs[p.dir(1-s)].known
	}
	return b
}

// dir returns the directory of pair p's side s.
func (p *gPair) dir(s int) int32 {
	if s == 0 {
		return p.a
	}
	return p.b
}

// judge computes each pair's containments and keeps, drops and folds them
// (see the package doc); thr is 0..1.
func (g *Grouping) judge(thr float64) {
	for i := range g.pairs {
		p := &g.pairs[i]
		da, db := &g.dirs[p.a], &g.dirs[p.b]
		if !da.haveTotal || !db.haveTotal || da.truncated || db.truncated {
			continue
		}
		for s := range 2 {
			if b := g.bytes(p, s); b > 0 {
				p.cont[s] = min(1, p.shared[s]/float64(b))
			}
		}
		p.res = resemblance(p.shared, g.bytes(p, 0), g.bytes(p, 1))
		p.kept = p.res >= thr*(1-1e-12)
	}
	// A kept pair adds nothing to a kept pair within it that shares as
	// much, both ways.
	for i := range g.pairs {
		c := &g.pairs[i]
		if !c.kept {
			continue
		}
		for x := c.a; x >= 0; x = g.dirs[x].parent {
			for y := c.b; y >= 0; y = g.dirs[y].parent {
				if x == c.a && y == c.b {
					continue
				}
				pi, ok := g.pairID[uint64(min(x, y))<<32|uint64(max(x, y))]
				if !ok || !g.pairs[pi].kept {
					continue
				}
				p := &g.pairs[pi]
				pa, pb := 0, 1 // p's sides of c's a and b
				if p.a != x {
					pa, pb = 1, 0
				}
				if g.within(c, p, pa, pb) && !more(p.shared[pa], c.shared[0]) && !more(p.shared[pb], c.shared[1]) {
					p.redundant = true
				}
			}
		}
	}
	// A kept pair folds into a kept pair above it.
	for i := range g.pairs {
		c := &g.pairs[i]
		if !c.kept || c.redundant {
			continue
		}
		for x := c; x.parent >= 0; {
			x = &g.pairs[x.parent]
			if x.kept && !x.redundant {
				c.folded = true
				break
			}
		}
	}
	// A pair whose ancestors at the same depth offset are in one group is
	// part of them.
	uf := g.link()
	for i := range g.pairs {
		c := &g.pairs[i]
		if !c.listed() {
			continue
		}
		for x, y := c.a, c.b; ; {
			x, y = g.dirs[x].parent, g.dirs[y].parent
			if x < 0 || y < 0 || x == y {
				break
			}
			if rx, ok := uf.find(x); ok {
				if ry, ok := uf.find(y); ok && rx == ry {
					c.part = true
					break
				}
			}
		}
	}
}

// within reports whether pair c lies within pair p, whose sides pa and pb
// hold c's a and b: the side of p that holds p's other side stands for
// its files outside it, so c's directory there must be outside too.
func (g *Grouping) within(c, p *gPair, pa, pb int) bool {
	switch int(p.holder) {
	case pa:
		return !inTree(g.dirs[c.a].path, g.dirs[p.dir(pb)].path)
	case pb:
		return !inTree(g.dirs[c.b].path, g.dirs[p.dir(pa)].path)
	}
	return true
}

// listed reports whether the pair is one of the answer's.
func (p *gPair) listed() bool { return p.kept && !p.redundant && !p.folded && !p.part }

// dirSets is a union-find over the directories of the listed pairs.
type dirSets struct{ parent map[int32]int32 }

// find returns d's set, and whether d is in one.
func (u *dirSets) find(d int32) (int32, bool) {
	p, ok := u.parent[d]
	if !ok {
		return 0, false
	}
	for p != d {
		gp := u.parent[p]
		u.parent[d] = gp
		d, p = p, gp
	}
	return d, true
}

func (u *dirSets) union(a, b int32) {
	for _, d := range [2]int32{a, b} {
		if _, ok := u.parent[d]; !ok {
			u.parent[d] = d
		}
	}
	ra, _ := u.find(a)
	rb, _ := u.find(b)
	if ra != rb {
		u.parent[max(ra, rb)] = min(ra, rb)
	}
}

// link links the directories of the listed pairs.
func (g *Grouping) link() *dirSets {
	u := &dirSets{parent: make(map[int32]int32)}
	for i := range g.pairs {
		if p := &g.pairs[i]; p.listed() {
			u.union(p.a, p.b)
		}
	}
	return u
}

// dirGroupOut is a group as the arithmetic gives it: directory numbers
// and the pairs that show each member's link.
type dirGroupOut struct {
	saving  float64
	ref     int32
	members []dirMemberOut // not the reference; by percent, then path
}

type dirMemberOut struct {
	dir     int32
	pair    int32 // the pair that links it: to the reference, else its strongest
	via     bool  // the pair is not with the reference
	percent float64
}

// groups returns the groups of the listed pairs, by saving, then by the
// reference's path. judge must have run.
func (g *Grouping) groups() []dirGroupOut {
	// The links: the listed pairs, and the folded pairs both of whose
	// directories are in listed pairs: a tree duplicated inside each of
	// two copies is then one group, not one per copy.
	uf := g.link()
	var links []int32
	for i := range g.pairs {
		p := &g.pairs[i]
		_, ina := uf.find(p.a)
		_, inb := uf.find(p.b)
		if p.listed() || p.folded && !p.part && ina && inb {
			links = append(links, int32(i))
		}
	}
	for _, i := range links {
		uf.union(g.pairs[i].a, g.pairs[i].b)
	}
	byRoot := make(map[int32][]int32) // set → its links
	for _, i := range links {
		r, _ := uf.find(g.pairs[i].a)
		byRoot[r] = append(byRoot[r], i)
	}
	var out []dirGroupOut
	for _, pairs := range byRoot {
		out = append(out, g.group(pairs))
	}
	slices.SortFunc(out, func(x, y dirGroupOut) int {
		return cmp.Or(cmp.Compare(y.saving, x.saving), strings.Compare(g.dirs[x.ref].path, g.dirs[y.ref].path))
	})
	return out
}

// group builds the group of the links pairs.
func (g *Grouping) group(pairs []int32) dirGroupOut {
	links := make(map[int32]int) // member → its links
	for _, i := range pairs {
		links[g.pairs[i].a]++
		links[g.pairs[i].b]++
	}
	members := make([]int32, 0, len(links))
	for d := range links {
		members = append(members, d)
	}
	slices.Sort(members)
	// within reports whether a member other than skip holds member d.
	within := func(d, skip int32) bool {
		for x := g.dirs[d].parent; x >= 0; x = g.dirs[x].parent {
			if _, ok := links[x]; ok && x != skip {
				return true
			}
		}
		return false
	}
	// The reference: of the members no other member holds, the one with
	// the most links, then the most bytes, then the first path.
	ref := int32(-1)
	for _, d := range members {
		if within(d, -1) {
			continue
		}
		if ref < 0 || cmp.Or(cmp.Compare(links[ref], links[d]), cmp.Compare(g.dirs[ref].bytes, g.dirs[d].bytes),
			strings.Compare(g.dirs[d].path, g.dirs[ref].path)) < 0 {
			ref = d
		}
	}
	grp := dirGroupOut{ref: ref}
	for _, d := range members {
		if d == ref {
			continue
		}
		// Its link to the reference, else its strongest, then the one to
		// the first path.
		m := dirMemberOut{dir: d, pair: -1}
		for _, i := range pairs {
			p := &g.pairs[i]
			if p.a != d && p.b != d {
				continue
			}
			toRef := p.a == ref || p.b == ref
			pct := p.res
			better := false
			switch {
			case m.pair < 0:
				better = true
			case toRef != !m.via:
				better = toRef
			case pct != m.percent:
				better = pct > m.percent
			default:
				better = g.dirs[g.other(i, d)].path < g.dirs[g.other(m.pair, d)].path
			}
			if better {
				m.pair, m.via, m.percent = i, !toRef, pct
			}
		}
		if !within(d, ref) {
			p := &g.pairs[m.pair]
			s := 0
			if p.b == d {
				s = 1
			}
			grp.saving += p.save[s]
		}
		grp.members = append(grp.members, m)
	}
	slices.SortFunc(grp.members, func(x, y dirMemberOut) int {
		return cmp.Or(cmpBool(x.via, y.via), cmp.Compare(y.percent, x.percent), strings.Compare(g.dirs[x.dir].path, g.dirs[y.dir].path))
	})
	return grp
}

// other returns the directory of pair i that is not d.
func (g *Grouping) other(i, d int32) int32 {
	if p := &g.pairs[i]; p.a != d {
		return p.a
	}
	return g.pairs[i].b
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
