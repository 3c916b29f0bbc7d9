package index_test

import (
	"cmp"
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
				{Threshold: 0.3, MaxDF: -1, Visible: func(p string) bool { return !strings.HasSuffix(p, "0") && !strings.HasSuffix(p, "3") }},
			} {
				got, err := ix.Groups(opts)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteGroups(m, opts)
				if g, w := renderGroupSets(got), renderWantSets(want); g != w {
					t.Fatalf("%+v: groups\n%s\nwant\n%s", opts, g, w)
				}
				checkGroupDetails(t, m, opts, got)
				opts.Links = true
				withLinks, err := ix.Groups(opts)
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
		if !strings.HasPrefix(path, opts.PathPrefix) || opts.Visible != nil && !opts.Visible(path) {
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
