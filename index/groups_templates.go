package index

import "github.com/sif-dev/sif/index/fingerprint"

// The template pass of a Groups run (groups.go): which nodes are template
// files, judged on all of their weight, and the links between them
// through the keys held by more than MaxDF files, one hub per key.

// isTemplate reports whether node d is a template node.
func (g *grouping) isTemplate(d uint32) bool {
	return g.tmpl != nil && g.tmpl[d/64]&(1<<(d%64)) != 0
}

// findTemplates marks the template nodes, once the first pass has summed
// every node's common weight: those whose keys held by more than MaxDF
// files weigh more than TemplateShare of their weight, as a query of one
// is a template query (Similar). Such a file is mostly what many files
// share (a member of a family made from one template or form): the keys
// that would be boilerplate in another file are its content, and it is
// judged on all of its weight, and linked through them to the other
// template nodes holding them (linkTemplates). A file with more content
// of its own than of common keys is not: its licence header or
// boilerplate links it to nothing. It reads the content records of the
// nodes holding common keys.
func (g *grouping) findTemplates() error {
	for d, c := range g.common {
		if c == 0 {
			continue
		}
		var rec FileRecord
		found, err := g.readContent(g.cids[d], &rec)
		if err != nil {
			return err
		}
		if !found || !g.templateAt(rec.Weight, c, rec.Features, 2) {
			continue
		}
		if g.tmpl == nil {
			g.tmpl = make([]uint64, (len(g.cids)+63)/64)
		}
		g.tmpl[d/64] |= 1 << (d % 64)
		g.ntmpl++
	}
	return nil
}

// linkTemplates judges the pairs of template nodes of a template pass:
// their shared weight is that of the common keys they share through a
// hub. It adds to the link the passes over the other keys made, when
// there is one (both nodes are judged on all of their weight, so the two
// add up); else it links the pair when it passes, as link does. A pair
// that shares both kinds of keys but passed on neither alone is judged on
// its common keys only: a template link's percentages are at most what a
// query of either finds.
func (g *grouping) linkTemplates(shared *pairTable) error {
	linked := make(map[uint64]int)
	for i, l := range g.links {
		if g.isTemplate(l.a) && g.isTemplate(l.b) {
			linked[uint64(l.a)<<32|uint64(l.b)] = i
		}
	}
	// How much of node d, compared at level l, the common weight it
	// shares is: none unless d is a template file there and the other
	// holds more than TemplateShare of its common keys (of its family, as
	// Similar judges a candidate).
	ratio := func(d uint32, w *nodeWeights, l int, shared uint64) float64 {
		wl, common := g.commonAt(d, w, l)
		if !g.templateAt(wl, common, w.features, 2) || float64(shared) <= TemplateShare*float64(common) {
			return 0 // not of d's family: judged on its distinctive part
		}
		return fingerprint.Ratio(shared, wl)
	}
	return g.eachPair(shared, func(k uint64, a, b uint32, wa, wb *nodeWeights, l int, weight uint64) {
		ab, ba := ratio(a, wa, l, weight), ratio(b, wb, l, weight)
		if i, ok := linked[k]; ok {
			lk := &g.links[i]
			lk.ab, lk.ba, lk.template = min(1, lk.ab+ab), min(1, lk.ba+ba), true
			return
		}
		ab, ba = min(1, ab), min(1, ba)
		if max(ab, ba) < g.opts.Threshold {
			return
		}
		g.addLink(groupLink{a, b, ab, ba, true})
	})
}

// templateAt reports whether a node of weight wl at a level, common of it
// boilerplate, with n features in all, is compared there as a template
// file: on all of its weight, as a query of it at that level is
// (Similar), when the boilerplate is more than templateCut(·, z) of it.
// Its features of that level or more, which a query counts, are taken to
// be at most n and at most wl (each weighs 1 or more), so that with z = 1
// a query of a file is never judged a template where Groups does not
// judge it one (a link is at most what a query finds). Links through
// common keys take z = 2 (findTemplates).
func (g *grouping) templateAt(wl, common uint64, n uint32, z float64) bool {
	return float64(common) > templateCut(int(min(uint64(n), wl)), z)*float64(wl)
}
