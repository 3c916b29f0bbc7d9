package index_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestGroupsAgainstBruteForce compares Groups with every pair compared by
// fingerprint.Compare, on random files with identical copies among them.
func TestGroupsAgainstBruteForce(t *testing.T) {
	for _, p := range []fingerprint.Params{manber, chunks} {
		t.Run(p.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(len(p.Scheme))))
			ix := openMem(t, nil, p)
			m := model{}
			var sketches []*fingerprint.Sketch
			for i := 0; i < 80; i++ {
				sk := randSketch(rng, p, 5+rng.IntN(20), 400)
				switch k := rng.IntN(5); {
				case len(sketches) == 0:
				case k == 0: // an identical copy
					sk = sketches[rng.IntN(len(sketches))]
				case k <= 2: // an edited version: some features kept, some new
					var fs []fingerprint.Feature
					for _, f := range sketches[rng.IntN(len(sketches))].Features {
						if rng.IntN(10) < 7 {
							fs = append(fs, f)
						}
					}
					fs = append(fs, sk.Features[:rng.IntN(len(sk.Features))]...)
					sk = sketchOf(p, fmt.Sprint(rng.Uint64()), sk.Size, canonicalTest(fs)...)
				}
				sketches = append(sketches, sk)
				path := fmt.Sprintf("/%c/%03d", 'a'+rng.IntN(3), i)
				meta := metaFor(path, sk, rng)
				if _, err := ix.Put(meta, sk); err != nil {
					t.Fatal(err)
				}
				m[path] = modelFile{meta, sk}
			}
			for _, opts := range []index.GroupOptions{
				{Threshold: 0.3, MaxDF: -1},
				{Threshold: 0.5, MaxDF: -1, SameType: true},
				{Threshold: 0.2, MaxDF: -1, PathPrefix: "/b/"},
				// A caller who sees a third of the files: the hidden ones
				// neither appear nor link the others.
				{Threshold: 0.3, MaxDF: -1, Visible: func(m *index.FileMeta) bool {
					return !strings.HasSuffix(m.Path, "0") && !strings.HasSuffix(m.Path, "3")
				}},
			} {
				got, err := ix.Groups(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteGroups(m, opts)
				if g, w := renderGroupSets(got), renderWantSets(want); g != w {
					t.Fatalf("%+v: groups\n%s\nwant\n%s", opts, g, w)
				}
				checkGroupDetails(t, m, opts, got)
				opts.Links = true
				withLinks, err := ix.Groups(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				checkGroupLinks(t, m, opts, got, withLinks)
				t.Logf("%+v: %d groups, largest %d", opts, len(got), largestGroup(got))
			}
		})
	}
}

type bruteNode struct {
	path   string
	copies []string
	sk     *fingerprint.Sketch
}

// bruteGroups returns the groups as sorted lists of "path[+copies]".
func bruteGroups(m model, opts index.GroupOptions) [][]string {
	var nodes []*bruteNode
	byContent := map[string]*bruteNode{}
	for _, path := range slices.Sorted(maps.Keys(m)) {
		if !strings.HasPrefix(path, opts.PathPrefix) || opts.Visible != nil && !opts.Visible(&index.FileMeta{Path: path}) {
			continue
		}
		sk := m[path].sk
		key := fmt.Sprintf("%x/%d", sk.Strong, sk.Size)
		if n, ok := byContent[key]; ok {
			n.copies = append(n.copies, path)
			continue
		}
		n := &bruteNode{path: path, sk: sk}
		byContent[key] = n
		nodes = append(nodes, n)
	}
	parent := make([]int, len(nodes))
	linked := make([]bool, len(nodes))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	for i := range nodes {
		for j := i + 1; j < len(nodes); j++ {
			a, b := nodes[i].sk, nodes[j].sk
			if opts.SameType && a.Type != b.Type {
				continue
			}
			c := fingerprint.Compare(a, b)
			if c.SharedFeatures >= minShared(opts) && max(c.AInB, c.BInA) >= opts.Threshold {
				parent[find(i)] = find(j)
				linked[i], linked[j] = true, true
			}
		}
	}
	sets := map[int][]string{}
	for i, n := range nodes {
		if linked[i] {
			r := find(i)
			sets[r] = append(sets[r], strings.Join(append([]string{n.path}, n.copies...), "+"))
		}
	}
	var out [][]string
	for _, s := range sets {
		slices.Sort(s)
		out = append(out, s)
	}
	return out
}

func renderWantSets(sets [][]string) string {
	var lines []string
	for _, s := range sets {
		lines = append(lines, strings.Join(s, " "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func renderGroupSets(gs []index.Group) string {
	var lines []string
	for _, g := range gs {
		var s []string
		for _, m := range append([]index.GroupMember{g.Reference}, g.Members...) {
			s = append(s, strings.Join(append([]string{m.Path}, m.Copies...), "+"))
		}
		slices.Sort(s)
		lines = append(lines, strings.Join(s, " "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// checkGroupDetails checks each member's Percent or Via against Compare,
// and the ordering rules.
func checkGroupDetails(t *testing.T, m model, opts index.GroupOptions, gs []index.Group) {
	t.Helper()
	for gi, g := range gs {
		if gi > 0 {
			prev := gs[gi-1]
			if len(prev.Members) < len(g.Members) || len(prev.Members) == len(g.Members) && prev.Reference.Path > g.Reference.Path {
				t.Errorf("group %q listed after %q", g.Reference.Path, prev.Reference.Path)
			}
		}
		if g.Reference.Percent != 1 {
			t.Errorf("reference %q has percent %v", g.Reference.Path, g.Reference.Percent)
		}
		ref := m[g.Reference.Path].sk
		for i, mem := range g.Members {
			c := fingerprint.Compare(m[mem.Path].sk, ref)
			p := max(c.AInB, c.BInA)
			linked := p >= opts.Threshold && c.SharedFeatures >= minShared(opts)
			switch {
			case linked && (mem.Percent != p || mem.Via != ""):
				t.Errorf("member %q of %q: percent %v via %q, want %v", mem.Path, g.Reference.Path, mem.Percent, mem.Via, p)
			case !linked && (mem.Percent != 0 || mem.Via == ""):
				t.Errorf("member %q of %q is not linked to it: percent %v via %q", mem.Path, g.Reference.Path, mem.Percent, mem.Via)
			case !linked:
				v := fingerprint.Compare(m[mem.Path].sk, m[mem.Via].sk)
				if max(v.AInB, v.BInA) < opts.Threshold {
					t.Errorf("member %q of %q: via %q, which it is not linked to", mem.Path, g.Reference.Path, mem.Via)
				}
			}
			if i > 0 {
				prev := g.Members[i-1]
				if prev.Percent < mem.Percent || prev.Percent == mem.Percent && prev.Path > mem.Path {
					t.Errorf("member %q listed after %q", mem.Path, prev.Path)
				}
			}
		}
	}
}

// checkGroupLinks checks the groups asked for with Links against those
// asked for without: the same groups, in the same order, and each group's
// links exactly the pairs of its files that are linked, with their
// containments as Compare measures them.
func checkGroupLinks(t *testing.T, m model, opts index.GroupOptions, plain, gs []index.Group) {
	t.Helper()
	if len(gs) != len(plain) {
		t.Fatalf("%d groups with links, %d without", len(gs), len(plain))
	}
	for gi, g := range gs {
		links := g.Links
		g.Links = nil
		if !reflect.DeepEqual(g, plain[gi]) {
			t.Fatalf("group %d differs with links:\n%+v\nwithout:\n%+v", gi, g, plain[gi])
		}
		files := append([]index.GroupMember{g.Reference}, g.Members...)
		got := map[[2]int]index.GroupLink{}
		for i, l := range links {
			if l.A < 0 || l.A >= l.B || l.B >= len(files) {
				t.Fatalf("group %q: link %+v names no pair of its %d files", g.Reference.Path, l, len(files))
			}
			if i > 0 && cmp.Or(cmp.Compare(links[i-1].A, l.A), cmp.Compare(links[i-1].B, l.B)) >= 0 {
				t.Errorf("group %q: link %+v listed after %+v", g.Reference.Path, l, links[i-1])
			}
			got[[2]int{l.A, l.B}] = l
		}
		for a := range files {
			for b := a + 1; b < len(files); b++ {
				sa, sb := m[files[a].Path].sk, m[files[b].Path].sk
				c := fingerprint.Compare(sa, sb)
				linked := max(c.AInB, c.BInA) >= opts.Threshold && c.SharedFeatures >= minShared(opts) && (!opts.SameType || sa.Type == sb.Type)
				l, ok := got[[2]int{a, b}]
				switch {
				case linked != ok:
					t.Errorf("group %q: files %q and %q linked %v, listed %v", g.Reference.Path, files[a].Path, files[b].Path, linked, ok)
				case ok && (l.AInB != c.AInB || l.BInA != c.BInA):
					t.Errorf("group %q: link %+v of %q and %q, want %v and %v", g.Reference.Path, l, files[a].Path, files[b].Path, c.AInB, c.BInA)
				}
			}
		}
	}
}

func largestGroup(gs []index.Group) int {
	n := 0
	for _, g := range gs {
		n = max(n, 1+len(g.Members))
	}
	return n
}

// canonicalTest sorts features by hash and drops repeated hashes.
func canonicalTest(fs []fingerprint.Feature) []fingerprint.Feature {
	slices.SortFunc(fs, func(a, b fingerprint.Feature) int { return cmpU64(a.Hash, b.Hash) })
	return slices.CompactFunc(fs, func(a, b fingerprint.Feature) bool { return a.Hash == b.Hash })
}

// minShared is opts.MinShared with its default.
func minShared(opts index.GroupOptions) int {
	if opts.MinShared == 0 {
		return index.DefaultMinFeatures
	}
	return opts.MinShared
}

// TestGroupsLevelsAgainstQueries checks the containments of the group links
// against the queries of their files, on random files of every level
// holding fingerprints of every level, boilerplate among them. A query
// knows the level of each of its fingerprints; Groups knows that of a
// boilerplate key only from the files holding it. With a file of its level
// holding each boilerplate fingerprint (a carrier, which shares nothing
// else), the two agree exactly; without, a link's containment is at most
// the query's. Either way, no percentage is above 1.
func TestGroupsLevelsAgainstQueries(t *testing.T) {
	p := manber // levels 2 (below 103 bytes) to 8 (from 2087)
	const maxDF = 8
	for _, carriers := range []bool{true, false} {
		t.Run(fmt.Sprintf("carriers=%v", carriers), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 11))
			// A hash of level l: its low l-MinBits bits zero, the next one.
			hashOf := func(l int) uint64 {
				h := rng.Uint64() | 1
				if l >= p.Bits {
					return h << (p.Bits - p.MinBits)
				}
				return h << (l - p.MinBits)
			}
			// A size of level l.
			sizeOf := func(l int) int64 {
				lo := int64(p.Window - 1 + p.Target<<l)
				switch l {
				case p.MinBits:
					return int64(p.Window) + rng.Int64N(lo-int64(p.Window))
				case p.Bits:
					return lo + rng.Int64N(4*lo)
				}
				return lo + rng.Int64N(lo)
			}
			randLevel := func() int { return p.MinBits + rng.IntN(p.Bits-p.MinBits+1) }
			pool := make([]uint64, 400)
			for i := range pool {
				pool[i] = hashOf(randLevel())
			}
			boiler := make([]uint64, 16)
			for i := range boiler {
				boiler[i] = hashOf(randLevel())
			}
			ix := openMem(t, nil, p)
			sketches := map[string]*fingerprint.Sketch{}
			put := func(path string, sk *fingerprint.Sketch) {
				if _, err := ix.Put(metaFor(path, sk, rng), sk); err != nil {
					t.Fatal(err)
				}
				sketches[path] = sk
			}
			var made []*fingerprint.Sketch
			for i := range 80 {
				l := randLevel()
				seen := map[uint64]bool{}
				var fs []fingerprint.Feature
				add := func(h uint64) {
					if !seen[h] && p.HashLevel(h) >= l {
						seen[h] = true
						fs = append(fs, fingerprint.Feature{Hash: h, Count: 1 + uint32(rng.IntN(3))})
					}
				}
				if len(made) > 0 && rng.IntN(2) == 0 { // an edited version of another file
					for _, f := range made[rng.IntN(len(made))].Features {
						if rng.IntN(10) < 7 {
							add(f.Hash)
						}
					}
				}
				for range 3 + rng.IntN(12) {
					add(pool[rng.IntN(len(pool))])
				}
				// Boilerplate: a minor part of most files, most of a few
				// (template files, judged on all their weight).
				for _, h := range boiler {
					if rng.IntN(2) == 0 {
						add(h)
					}
				}
				sk := sketchOf(p, fmt.Sprint("file", i), sizeOf(l), canonicalTest(fs)...)
				made = append(made, sk)
				put(fmt.Sprintf("/f/%03d", i), sk)
			}
			if carriers {
				df := map[uint64]int{}
				for _, sk := range made {
					for _, f := range sk.Features {
						df[f.Hash]++
					}
				}
				for l := p.MinBits; l <= p.Bits; l++ {
					fs := []fingerprint.Feature{{Hash: hashOf(p.Bits), Count: 1}}
					for h, n := range df {
						if n > maxDF && p.HashLevel(h) == l {
							fs = append(fs, fingerprint.Feature{Hash: h, Count: 1})
						}
					}
					put(fmt.Sprintf("/carrier/%d", l), sketchOf(p, fmt.Sprint("carrier", l), sizeOf(l), fs...))
				}
			}

			opts := index.GroupOptions{Threshold: 0.2, MaxDF: maxDF, MinShared: 2, Links: true}
			gs, err := ix.Groups(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			// containment returns how much of the file at path the file at
			// other contains, as a query of the first finds it, and whether
			// that query is a template query.
			containment := func(path, other string) (float64, bool) {
				t.Helper()
				res, err := ix.Similar(context.Background(), index.Query{Path: path, Sketch: sketches[path]},
					index.QueryOptions{Threshold: 1e-12, MaxDF: maxDF, MinFeatures: 1})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range res.Matches {
					if m.Path == other {
						return m.Containment, res.Template
					}
				}
				return 0, res.Template // it shares only what the query leaves out
			}
			links, less, templates := 0, 0, 0
			for _, g := range gs {
				files := append([]index.GroupMember{g.Reference}, g.Members...)
				for _, m := range files {
					if m.Percent > 1 {
						t.Errorf("%s: percent %v in the group of %s", m.Path, m.Percent, g.Reference.Path)
					}
				}
				for _, l := range g.Links {
					a, b := files[l.A].Path, files[l.B].Path
					for _, c := range [2]struct {
						x, y string
						got  float64
					}{{a, b, l.AInB}, {b, a, l.BInA}} {
						// A template file's link may count fewer of its
						// common keys than a query of it (Groups).
						want, template := containment(c.x, c.y)
						if template {
							templates++
						}
						switch {
						case c.got > want || carriers && !template && c.got != want:
							t.Errorf("%s in %s: %v, a query finds %v", c.x, c.y, c.got, want)
						case c.got < want:
							less++
						}
					}
					links++
				}
			}
			if links < 20 {
				t.Fatalf("%d links: too few to tell", links)
			}
			if 2*links-templates < 20 {
				t.Fatalf("%d of %d containments from template queries: want 20 others", templates, 2*links)
			}
			t.Logf("%d groups, %d links, %d containments below the query's, %d from template files", len(gs), links, less, templates)
		})
	}
}
