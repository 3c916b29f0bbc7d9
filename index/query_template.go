package index

import (
	"cmp"
	"math"
	"slices"

	"github.com/sif-dev/sif/index/fingerprint"
)

// templateAt reports whether comparisons at level l are template
// comparisons (templates).
func (s *querySearch) templateAt(l int) bool { return s.tmpl[min(l, maxLevel+1)] }

// family reports whether a candidate compared at level l, which shares
// weight common with the query through its common entries, is one of the
// query's family: the query is mostly common entries at that level, and
// the candidate holds more than TemplateShare of them. A family member is
// judged on all of the query's weight; any other candidate on its
// distinctive part, as when nothing is common (a query made mostly of
// phrases each found in many files, but no file holding most of them, has
// no family).
func (s *querySearch) family(l int, common uint64) bool {
	l = min(l, maxLevel+1)
	return s.templateAt(l) && float64(common) > TemplateShare*float64(s.fullAt[l]-s.weightAt[l])
}

// TemplateShare is the share of a file's weight past which its common
// fingerprints (those held by more than MaxDF files) make it a template
// file (by the margin templateCut adds), and the share of them a
// candidate must hold to be of its family: the file is then mostly
// what hundreds of files share, a member of a family made from one
// template or form, and what it shares with them is the answer, not
// boilerplate (Result.Template).
const TemplateShare = 0.5

// templateCut is the share of a file's weight its common entries must
// pass for it to be taken as mostly common: TemplateShare, and z standard
// deviations of the share a sample of n fingerprints shows (0.5/√n), so
// that a file whose licence header is a little under half of it, sampled
// by few fingerprints, is not taken for a template. Queries take z = 1:
// 0.62 for 18 fingerprints (about 1.5 KB), 0.55 for 100; Groups links
// files through their common keys only at z = 2 (see findTemplates).
func templateCut(n int, z float64) float64 {
	return TemplateShare + z*0.5/math.Sqrt(float64(max(n, 1)))
}

// TemplateCut is the share of a query's weight at a level, over its n
// entries there, that its common entries must pass for the query to be
// compared there as a template query: for other answerers of a query
// (the fleet's), the cut this index applies.
func TemplateCut(n int) float64 { return templateCut(n, 1) }

// templatePostings bounds the postings a query keeps of its common
// fingerprints (12 bytes each), and so those a template query counts:
// about 20 to 50 ms of work. Past it, the remaining common fingerprints
// stay skipped; as fingerprint keys are uniform and read in key order,
// those counted are a uniform sample of the query's common fingerprints,
// and the percentages, over the counted weight, stay fair estimates.
var templatePostings = 1 << 20

// templates finds the levels of template comparisons, and reports
// whether there is one: the levels, from the query's up, at which the
// query's skipped entries hold more than templateCut of its weight
// (a candidate is compared at its level or the query's, over the entries
// of that level or more), where it has MinFeatures entries. A small query
// compared with larger files is compared over its entries of their
// level, which may be mostly common where all of it is not.
func (s *querySearch) templates() bool {
	s.tmplFrom = s.top + 1
	if s.opts.MaxDF < 0 || s.res.Skipped == 0 {
		return false
	}
	for l := s.top; l >= s.lvl; l-- {
		skipped := s.fullAt[l] - s.weightAt[l]
		if s.nfullAt[l] >= s.opts.MinFeatures && float64(skipped) > templateCut(s.nfullAt[l], 1)*float64(s.fullAt[l]) {
			s.tmpl[l] = true
			s.tmplFrom = l
		}
	}
	if s.tmplFrom > s.top {
		return false
	}
	for l := s.top + 1; l <= maxLevel+1; l++ {
		s.tmpl[l] = s.tmpl[s.top] // no candidate is compared above the top
	}
	return true
}

// countCommon counts the skipped entries of a template query of level
// tmplFrom or more whose postings accumulate kept (those that fit in
// templatePostings): each adds to the shared weight of the contents
// holding it, as the others did, and to their common weight
// (s.st.common), which a candidate compared at a level of no template
// comparison leaves out. Result.Skipped and SkippedKeys are left with
// those not counted.
func (s *querySearch) countCommon() error {
	st := s.st
	for _, sp := range st.spans {
		e := &s.entries[sp.i]
		if int(e.level) < s.tmplFrom {
			continue
		}
		if err := s.poll.tick(); err != nil {
			return err
		}
		for _, p := range st.stash[sp.lo:sp.hi] {
			w := min(e.weight, p.weight)
			st.shared[p.cid] += w
			st.common[p.cid] += w
		}
	}
	return nil
}

// counts leaves in Result.Skipped, SkippedWeight and SkippedKeys only the
// skipped entries countCommon did not count, once a family is found.
func (s *querySearch) counts() {
	st := s.st
	for _, sp := range st.spans {
		if int(s.entries[sp.i].level) < s.tmplFrom {
			continue
		}
		s.skipped[sp.i] = false
		s.res.Skipped--
		s.res.SkippedWeight -= s.entries[sp.i].weight
	}
	keys := s.res.SkippedKeys[:0]
	for i, e := range s.entries {
		if s.skipped[i] {
			keys = append(keys, e.key)
		}
	}
	s.res.SkippedKeys = keys
}

// distinctive measures m's reverse containment and resemblance, as its
// containment is, on the distinctive weight of both files: a candidate
// judged on the query's distinctive part, without the weight of its
// skipped entries, is judged on its own without the weight of those it
// holds. Else a small file that shares its licence header with the
// query, the header left out of the query's weight but not the
// candidate's, would seem to resemble the query less than it does. The
// weight it holds at level l is estimated from that at the query's level
// (heldBy), in the share of the query's skipped weight there.
func (s *querySearch) distinctive(m *Match, l int) {
	held := s.heldBy(m.Content)
	skipAt, skipAll := s.fullAt[l]-s.weightAt[l], s.fullAt[s.lvl]-s.weightAt[s.lvl]
	if held == 0 || skipAt == 0 {
		return
	}
	if l > s.lvl && skipAll > 0 {
		held = uint64(float64(held) * float64(skipAt) / float64(skipAll))
	}
	fw := m.WeightAt(l)
	fw -= min(held, fw-min(fw, m.SharedWeight))
	qw := s.weightAt[l]
	m.ReverseContainment = fingerprint.Ratio(m.SharedWeight, fw)
	m.Resemblance = fingerprint.Ratio(m.SharedWeight, qw+fw-m.SharedWeight)
}

// heldBy returns the weight of the query's skipped entries that content
// cid holds, of those whose postings accumulate kept: each entry's
// postings are in content id order (postings_codec.go), so it costs a
// binary search per skipped entry, and only for the matches measured.
func (s *querySearch) heldBy(cid uint32) uint64 {
	var held uint64
	for _, sp := range s.st.spans {
		ps := s.st.stash[sp.lo:sp.hi]
		i, found := slices.BinarySearchFunc(ps, cid, func(p posting, c uint32) int { return cmp.Compare(p.cid, c) })
		if found {
			held += min(s.entries[sp.i].weight, ps[i].weight)
		}
	}
	return held
}
