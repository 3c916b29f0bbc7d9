package index

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The output of a Groups run (groups.go): the groups of the linked nodes,
// each with its reference, members and links, built a group at a time
// from the nodes' files, in order.

// groupNode is a node of the group being listed: its first file (in path
// order) and the paths of the others.
type groupNode struct {
	d      uint32
	rec    FileRecord
	copies []string
	// Of the node's links: the percentage to the reference, if linked to
	// it, and the strongest (then the one whose path comes first).
	toRef  float64
	linked bool
	best   int
	bestP  float64
	// Whether those links are template links.
	refTmpl, bestTmpl bool
}

func (n *groupNode) member(percent float64, via string, template bool) GroupMember {
	return GroupMember{FileRecord: n.rec, Percent: percent, Via: via, Copies: n.copies, Template: template}
}

// groupKey is what ordering a group and choosing its reference needs: its
// nodes, its reference and the reference's first path and weight.
type groupKey struct {
	nodes  uint32
	ref    uint32
	weight uint64
	path   string
}

// emit lists the groups of the nodes that were linked, in order, one at a
// time. It holds the groups' sort keys and where each group's nodes and
// links are, not their files: it reads the nodes' files once to choose
// each group's reference and order the groups, and again, a group at a
// time, to list them.
func (g *grouping) emit(fn func(Group) error) error {
	// The groups, in the order their first nodes come, and the number of
	// the group of every linked node.
	groupOf := make(map[uint32]uint32) // union-find root → group
	var keys []groupKey
	for d, nl := range g.nlinks {
		if nl == 0 {
			continue
		}
		r := g.find(uint32(d))
		gi, ok := groupOf[r]
		if !ok {
			gi = uint32(len(keys))
			groupOf[r] = gi
			keys = append(keys, groupKey{ref: uint32(d)})
		}
		keys[gi].nodes++
	}
	// Each group's reference: the node with the most links, then the
	// larger weight, then the first path. The most links and the weight
	// first, from the content records; then the first path, read only for
	// the nodes that tie for both, most often one per group.
	first := make([]bool, len(keys))
	for d, nl := range g.nlinks {
		if nl == 0 {
			continue
		}
		w, err := g.nodeWeight(uint32(d))
		if err != nil {
			return err
		}
		gi := groupOf[g.find(uint32(d))]
		k := &keys[gi]
		if !first[gi] || cmp.Or(-cmp.Compare(nl, g.nlinks[k.ref]), -cmp.Compare(w, k.weight)) < 0 {
			first[gi] = true
			k.ref, k.weight = uint32(d), w
		}
	}
	clear(first) // now: the group's path is read
	for d, nl := range g.nlinks {
		if nl == 0 {
			continue
		}
		gi := groupOf[g.find(uint32(d))]
		k := &keys[gi]
		if nl != g.nlinks[k.ref] {
			continue
		}
		if w, err := g.nodeWeight(uint32(d)); err != nil {
			return err
		} else if w != k.weight {
			continue
		}
		n, err := g.loadNode(uint32(d))
		if err != nil {
			return err
		}
		if !first[gi] || n.rec.Path < k.path {
			first[gi] = true
			k.ref, k.path = uint32(d), n.rec.Path
		}
	}
	first = nil

	// Where each group's nodes and links are: nodes[start[gi]:start[gi+1]],
	// links[lstart[gi]:lstart[gi+1]], in node order and link order.
	start := make([]uint32, len(keys)+1)
	lstart := make([]uint32, len(keys)+1)
	for gi, k := range keys {
		start[gi+1] = start[gi] + k.nodes
	}
	nodes := make([]uint32, start[len(keys)])
	fill := slices.Clone(start[:len(keys)])
	for d, nl := range g.nlinks {
		if nl > 0 {
			gi := groupOf[g.find(uint32(d))]
			nodes[fill[gi]] = uint32(d)
			fill[gi]++
		}
	}
	for _, l := range g.links {
		lstart[groupOf[g.find(l.a)]+1]++
	}
	for gi := range keys {
		lstart[gi+1] += lstart[gi]
	}
	links := make([]groupLink, len(g.links))
	copy(fill, lstart[:len(keys)])
	for _, l := range g.links {
		gi := groupOf[g.find(l.a)]
		links[fill[gi]] = l
		fill[gi]++
	}
	g.links, fill, groupOf = nil, nil, nil

	order := make([]uint32, len(keys))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(x, y uint32) int {
		return cmp.Or(-cmp.Compare(keys[x].nodes, keys[y].nodes), strings.Compare(keys[x].path, keys[y].path))
	})
	g.opts.Progress.Begin("listing the groups")
	for i, gi := range order {
		if err := g.poll.now(); err != nil {
			return err
		}
		g.opts.Progress.SetDone(float64(i) / float64(len(order)))
		grp, err := g.group(nodes[start[gi]:start[gi+1]], links[lstart[gi]:lstart[gi+1]], keys[gi].ref)
		if err != nil {
			return err
		}
		keys[gi].path = "" // not needed any more
		if err := fn(grp); err != nil {
			return err
		}
	}
	return nil
}

// group reads the files of the nodes of one group and builds it: ds are
// its nodes, in node order, links its links, and ref its reference.
func (g *grouping) group(ds []uint32, links []groupLink, ref uint32) (Group, error) {
	nodes := make([]groupNode, len(ds))
	r := -1
	for i, d := range ds {
		n, err := g.loadNode(d)
		if err != nil {
			return Group{}, err
		}
		n.best, n.bestP = -1, -1
		nodes[i] = n
		if d == ref {
			r = i
		}
	}
	at := func(d uint32) int { i, _ := slices.BinarySearch(ds, d); return i }
	for _, l := range links {
		a, b := at(l.a), at(l.b)
		for _, e := range [2][2]int{{a, b}, {b, a}} {
			m, o := &nodes[e[0]], e[1]
			p := l.percent()
			if o == r {
				m.toRef, m.linked, m.refTmpl = p, true, l.template
			}
			if p > m.bestP || p == m.bestP && nodes[o].rec.Path < nodes[m.best].rec.Path {
				m.best, m.bestP, m.bestTmpl = o, p, l.template
			}
		}
	}
	// The members, by percentage, then path; one not linked to the
	// reference (toRef 0) names its strongest link.
	order := make([]int, 0, len(nodes)-1)
	for i := range nodes {
		if i != r {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(-cmp.Compare(nodes[x].toRef, nodes[y].toRef), strings.Compare(nodes[x].rec.Path, nodes[y].rec.Path))
	})
	grp := Group{Reference: nodes[r].member(1, "", false), Members: make([]GroupMember, 0, len(order))}
	for _, i := range order {
		n := &nodes[i]
		if n.linked {
			grp.Members = append(grp.Members, n.member(n.toRef, "", n.refTmpl))
		} else {
			grp.Members = append(grp.Members, n.member(0, nodes[n.best].rec.Path, n.bestTmpl))
		}
	}
	if g.opts.Links {
		place := make([]int, len(nodes)) // node → its place in the group; the reference's is 0
		for p, i := range order {
			place[i] = p + 1
		}
		grp.Links = make([]GroupLink, 0, len(links))
		for _, l := range links {
			gl := GroupLink{A: place[at(l.a)], B: place[at(l.b)], AInB: l.ab, BInA: l.ba}
			if gl.A > gl.B {
				gl.A, gl.B, gl.AInB, gl.BInA = gl.B, gl.A, gl.BInA, gl.AInB
			}
			grp.Links = append(grp.Links, gl)
		}
		slices.SortFunc(grp.Links, func(x, y GroupLink) int { return cmp.Or(cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B)) })
	}
	return grp, nil
}

// nodeWeight returns the weight of node d's first file (in path order),
// which loadNode would put in its record: its content's, read alone,
// unless the node folds several contents.
func (g *grouping) nodeWeight(d uint32) (uint64, error) {
	if len(g.folded[d]) > 0 {
		n, err := g.loadNode(d)
		return n.rec.Weight, err
	}
	var c FileRecord
	found, err := g.readContent(g.cids[d], &c)
	if err == nil && !found {
		err = fmt.Errorf("%w: a posting names content %d, which has no record", ErrCorrupt, g.cids[d])
	}
	return c.Weight, err
}

// loadNode reads the files considered of node d: its first file's record,
// with its content's, and the paths of the others.
func (g *grouping) loadNode(d uint32) (groupNode, error) {
	n := groupNode{d: d}
	cids := append([]uint32{g.cids[d]}, g.folded[d]...)
	type file struct {
		consideredFile
		cid uint32
	}
	var fs []file
	for _, cid := range cids {
		var c FileRecord
		found, err := g.readContent(cid, &c)
		if err != nil {
			return n, err
		}
		if !found {
			return n, fmt.Errorf("%w: a posting names content %d, which has no record", ErrCorrupt, cid)
		}
		metas, err := g.filesOfContent(cid)
		if err != nil {
			return n, err
		}
		for _, m := range metas {
			fs = append(fs, file{m, cid})
		}
	}
	if len(fs) == 0 {
		return n, fmt.Errorf("%w: content %d has no file", ErrCorrupt, g.cids[d])
	}
	slices.SortFunc(fs, func(a, b file) int { return strings.Compare(a.meta.Path, b.meta.Path) })
	n.rec = FileRecord{ID: fs[0].id, FileMeta: fs[0].meta}
	found, err := g.readContent(fs[0].cid, &n.rec)
	if err == nil && !found {
		err = fmt.Errorf("%w: content %d has no record", ErrCorrupt, fs[0].cid)
	}
	if err != nil {
		return n, err
	}
	for _, f := range fs[1:] {
		n.copies = append(n.copies, f.meta.Path)
	}
	return n, nil
}
