package daemon

import (
	"strings"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// Answers leave out the files under missing roots: the index keeps them,
// so a root that comes back costs no read, but they are not on disk now.

// answers is the index as the socket serves it (server.Backend.Query):
// the daemon's current index (see ixHandle), without the files under
// missing roots.
type answers struct{ d *Daemon }

var _ index.Querier = answers{}

func (a answers) Params() fingerprint.Params  { return a.d.ix.Params() }
func (a answers) Stats() (index.Stats, error) { return a.d.ix.Stats() }

func (a answers) Similar(q index.Query, o index.QueryOptions) (*index.Result, error) {
	res, err := a.d.ix.Similar(q, o)
	return a.d.presentMatches(res), err
}

func (a answers) Groups(o index.GroupOptions) ([]index.Group, error) {
	gs, err := a.d.ix.Groups(o)
	return a.d.presentGroups(gs), err
}

func (a answers) Dupes(prefix string) ([]index.DupeSet, error) {
	ds, err := a.d.ix.Dupes(prefix)
	return a.d.presentDupes(ds), err
}

// hidden returns a predicate true for paths under a missing root, or nil
// when no root is missing.
func (d *Daemon) hidden() func(string) bool {
	prefixes := d.missingPrefixes()
	if len(prefixes) == 0 {
		return nil
	}
	return func(p string) bool {
		for _, pre := range prefixes {
			if strings.HasPrefix(p, pre) {
				return true
			}
		}
		return false
	}
}

func (d *Daemon) presentMatches(res *index.Result) *index.Result {
	hide := d.hidden()
	if res == nil || hide == nil {
		return res
	}
	out := res.Matches[:0]
	for _, m := range res.Matches {
		if !hide(m.Path) {
			out = append(out, m)
		}
	}
	res.Matches = out
	return res
}

// presentGroups drops the members and copies under missing roots, and the
// groups left with one file. A group whose reference is missing gets its
// first remaining member as reference.
func (d *Daemon) presentGroups(gs []index.Group) []index.Group {
	hide := d.hidden()
	if hide == nil {
		return gs
	}
	copies := func(ps []string) []string {
		out := ps[:0]
		for _, p := range ps {
			if !hide(p) {
				out = append(out, p)
			}
		}
		return out
	}
	out := gs[:0]
	for _, g := range gs {
		members := g.Members[:0]
		for _, m := range g.Members {
			if !hide(m.Path) {
				m.Copies = copies(m.Copies)
				members = append(members, m)
			}
		}
		g.Members = members
		g.Reference.Copies = copies(g.Reference.Copies)
		if hide(g.Reference.Path) {
			if len(g.Members) == 0 {
				continue
			}
			g.Reference, g.Members = g.Members[0], g.Members[1:]
			g.Reference.Percent, g.Reference.Via = 1, ""
		}
		if len(g.Members)+len(g.Reference.Copies) == 0 {
			continue
		}
		out = append(out, g)
	}
	return out
}

func (d *Daemon) presentDupes(ds []index.DupeSet) []index.DupeSet {
	hide := d.hidden()
	if hide == nil {
		return ds
	}
	out := ds[:0]
	for _, s := range ds {
		files := s.Files[:0]
		for _, f := range s.Files {
			if !hide(f.Path) {
				files = append(files, f)
			}
		}
		if s.Files = files; len(files) >= 2 {
			out = append(out, s)
		}
	}
	return out
}
