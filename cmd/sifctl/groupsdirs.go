package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// `sifctl groups --dirs`: groups of directories that are near-copies of
// each other. sifctl asks the daemon for the groups of similar files with
// their links (GET /v1/groups?links) and for the sets of identical files
// (GET /v1/dupes), sums the pairs per pair of directories (dirgroups.go),
// asks for the totals of the directories that may reach the threshold
// (POST /v1/dirs/totals), and keeps, folds and links the pairs.

// defaultDirThreshold is --threshold's default with --dirs, percent.
const defaultDirThreshold = 50

// dirGroupsLine is the answer of `sifctl groups --dirs --json`.
type dirGroupsLine struct {
	Threshold float64        `json:"threshold"`
	Dirs      bool           `json:"dirs"` // always true
	Groups    []dirGroupJSON `json:"groups"`
	ElapsedNs int64          `json:"elapsed_ns"`
}

// dirGroupJSON is one group of similar directories.
type dirGroupJSON struct {
	Saving    int64         `json:"saving"` // bytes deleting all but the reference would reclaim
	Reference dirGroupDir   `json:"reference"`
	Members   []dirGroupDir `json:"members"`
}

// dirGroupDir is a directory of a group. A member is measured against the
// reference or, when it is linked to the group only through another
// member, against that one (Via).
type dirGroupDir struct {
	ipc.FilePath
	Size         int64 `json:"size"`          // bytes indexed under it
	IndexedFiles int64 `json:"indexed_files"` // files indexed under it
	// Percent is the resemblance (100 for the reference).
	Percent            float64       `json:"percent"`
	Via                *ipc.FilePath `json:"via,omitempty"`
	Containment        *float64      `json:"containment,omitempty"`         // percent of it found in the other
	ReverseContainment *float64      `json:"reverse_containment,omitempty"` // percent of the other found in it
	Resemblance        *float64      `json:"resemblance,omitempty"`         // percent, shared over union
	SharedBytes        *int64        `json:"shared_bytes,omitempty"`        // bytes of it found in the other
	Files              *dirFiles     `json:"files,omitempty"`               // its files identical, similar or missing there
}

// groupsDirs answers `sifctl groups --dirs`: it prints the groups and
// returns nothing() when there are none. o shapes the file links; thr is
// the directories' threshold, percent.
func groupsDirs(ctx context.Context, g *globals, o ipc.GroupsOptions, thr float64) error {
	start := time.Now()
	c := g.client()
	tops := queryRoots(ctx, c)
	if o.Prefix != "" {
		tops = append(tops, o.Prefix)
	}
	dg := newDirGrouping(tops)
	o.Threshold = min(dirFileThreshold, thr)
	o.Links = true
	add := func(grp ipc.Group) error {
		if len(grp.Links) == 0 {
			// Every group has a link: this daemon does not list them.
			return fmt.Errorf("the daemon's groups have no links (GET /v1/groups?links): it is older than this sifctl")
		}
		dg.addGroup(grp)
		return nil
	}
	if _, err := c.GroupsEach(ctx, o, add); err != nil {
		return failed(fmt.Errorf("groups of similar files: %w", err))
	}
	dupes, err := c.Dupes(ctx, o.Prefix)
	if err != nil {
		return failed(fmt.Errorf("identical files: %w", err))
	}
	for _, set := range dupes.Sets {
		dg.addDupes(set)
	}
	dupes = nil
	dg.sum()
	need := dg.need(thr / 100)
	if len(need) > 0 {
		paths := make([]string, len(need))
		for i, d := range need {
			paths[i] = dg.dirs[d].path
		}
		ts, err := c.DirTotals(ctx, paths, 0)
		if err != nil {
			return failed(fmt.Errorf("directory totals: %w", err))
		}
		for i, d := range need {
			t := ts.Dirs[i]
			dg.setTotal(d, t.Bytes, t.Files, t.Truncated)
		}
	}
	dg.judge(thr / 100)
	line := dirGroupsLine{Threshold: thr, Dirs: true, Groups: []dirGroupJSON{}}
	for _, grp := range dg.groups() {
		line.Groups = append(line.Groups, dg.wireGroup(grp))
	}
	line.ElapsedNs = time.Since(start).Nanoseconds()
	if g.json {
		if err := g.printJSON(line); err != nil {
			return err
		}
	} else if err := printDirGroups(g.stdout, &line); err != nil {
		return failed(err)
	}
	if len(line.Groups) == 0 {
		return nothing()
	}
	return nil
}

// wireGroup renders a group for the answer.
func (g *dirGrouping) wireGroup(grp dirGroupOut) dirGroupJSON {
	out := dirGroupJSON{Saving: int64(math.Round(grp.saving)), Reference: g.wireDir(grp.ref), Members: make([]dirGroupDir, 0, len(grp.members))}
	out.Reference.Percent = 100
	for _, m := range grp.members {
		d := g.wireDir(m.dir)
		p := &g.pairs[m.pair]
		s, o := 0, 1 // m's side of the pair, and the other's
		if p.b == m.dir {
			s, o = 1, 0
		}
		if m.via {
			v := ipc.NewFilePath(g.dirs[p.dir(o)].path)
			d.Via = &v
		}
		cont, rev, r := pct(p.cont[s]), pct(p.cont[o]), pct(p.res)
		shared := int64(math.Round(p.shared[s]))
		files := dirFiles{Identical: p.identical[s], Similar: p.similar[s]}
		files.Missing = max(0, int(d.IndexedFiles)-files.Identical-files.Similar)
		d.Percent = pct(m.percent)
		d.Containment, d.ReverseContainment, d.Resemblance, d.SharedBytes, d.Files = &cont, &rev, &r, &shared, &files
		out.Members = append(out.Members, d)
	}
	return out
}

func (g *dirGrouping) wireDir(d int32) dirGroupDir {
	x := &g.dirs[d]
	return dirGroupDir{FilePath: ipc.NewFilePath(x.path), Size: x.bytes, IndexedFiles: x.nfiles}
}

// printDirGroups prints the groups as text, one line each: what deleting
// all but the reference would save, then the reference (R) and each
// member with its percentage, path and size; a member linked only
// through another member shows "~" and names it.
func printDirGroups(w io.Writer, l *dirGroupsLine) error {
	var b strings.Builder
	if len(l.Groups) == 0 {
		fmt.Fprintf(&b, "No groups of similar directories. Minimum similarity = %g%%\n", l.Threshold)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "Groups of similar directories, largest saving first. Minimum similarity = %g%%\n\n", l.Threshold)
	dirs := 0
	for _, grp := range l.Groups {
		dirs += 1 + len(grp.Members)
		fmt.Fprintf(&b, "%d to save: R %s %d", grp.Saving, grp.Reference.Exact(), grp.Reference.Size)
		for _, m := range grp.Members {
			if m.Via != nil {
				fmt.Fprintf(&b, " | ~%.0f %s %d (via %s)", m.Percent, m.Exact(), m.Size, m.Via.Exact())
			} else {
				fmt.Fprintf(&b, " | %.0f %s %d", m.Percent, m.Exact(), m.Size)
			}
		}
		b.WriteByte('\n')
	}
	// No total of the savings: a group may lie inside a member of another,
	// whose saving holds its own.
	fmt.Fprintf(&b, "\n%s of similar directories, %s.\n", count(len(l.Groups), "group", "groups"), count(dirs, "directory", "directories"))
	_, err := io.WriteString(w, b.String())
	return err
}
