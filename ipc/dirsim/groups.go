package dirsim

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/sif-dev/sif/ipc"
)

// DefaultGroupsThreshold is GroupsOptions.Threshold's default: the least
// resemblance, percent, of two directories of a group.
const DefaultGroupsThreshold = 50

// ErrNoLinks: the daemon's groups of similar files carry no links (it is
// older than GET /v1/groups?links), so no directory can be weighed by
// them. Every group has a link.
var ErrNoLinks = errors.New("the daemon's groups have no links (GET /v1/groups?links)")

// GroupsOptions shape Groups; nil, or a zero field, means the default.
type GroupsOptions struct {
	// Threshold is the least resemblance, percent, of two directories for
	// them to be linked: above 0, at most 100; 0 means
	// DefaultGroupsThreshold.
	Threshold float64
	// Prefix, an absolute directory, keeps only the files in its tree
	// (whole path components), and is a top.
	Prefix string
	// MaxDF, MinShared and AllTypes shape the links of the similar files,
	// as in ipc.GroupsOptions.
	MaxDF     int
	MinShared int
	AllTypes  bool
	// RequestID names the groups request, as ipc.GroupsOptions.RequestID.
	RequestID string
}

// Group is one group of similar directories. Its JSON is a group of
// `sifctl groups --dirs --json`.
type Group struct {
	Saving    int64      `json:"saving"` // bytes deleting all but the reference would reclaim
	Reference GroupDir   `json:"reference"`
	Members   []GroupDir `json:"members"` // by Via (none first), then Percent (highest first), then path
}

// GroupDir is a directory of a group. A member is measured against the
// reference or, when it is linked to the group only through another
// member, against that one (Via). The measures are nil for the reference.
type GroupDir struct {
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
	Files              *Files        `json:"files,omitempty"`               // its files identical, similar or missing there
}

// Totaler counts what the index holds in directory trees, as
// ipc.Client.DirTotals does (*ipc.Client is one): one DirTotal per
// directory, in order.
type Totaler interface {
	DirTotals(ctx context.Context, dirs []string, maxFiles int) (*ipc.DirTotalsResponse, error)
}

// Groups asks the daemon c for the groups of similar files with their
// links, the sets of identical files, the roots and the totals of the
// directories that may reach the threshold, and returns the groups of
// directories that are near-copies of each other, largest saving first
// (see the package doc); none is an empty list. o may be nil. A daemon
// whose groups have no links is an error wrapping ErrNoLinks.
func Groups(ctx context.Context, c *ipc.Client, o *GroupsOptions) ([]Group, error) {
	if o == nil {
		o = &GroupsOptions{}
	}
	thr := o.Threshold
	if thr == 0 {
		thr = DefaultGroupsThreshold
	}
	if !(thr > 0 && thr <= 100) {
		return nil, fmt.Errorf("dirsim: threshold %v: want a percentage above 0, at most 100", o.Threshold)
	}
	tops := roots(ctx, c)
	if o.Prefix != "" {
		tops = append(tops, o.Prefix)
	}
	g := NewGrouping(tops)
	lo := ipc.GroupsOptions{Threshold: min(FileThreshold, thr), MaxDF: o.MaxDF, AllTypes: o.AllTypes, Prefix: o.Prefix,
		MinShared: o.MinShared, Links: true, RequestID: o.RequestID}
	if _, err := c.GroupsEach(ctx, lo, g.AddGroup); err != nil {
		return nil, fmt.Errorf("groups of similar files: %w", err)
	}
	dupes, err := c.Dupes(ctx, o.Prefix)
	if err != nil {
		return nil, fmt.Errorf("identical files: %w", err)
	}
	for _, set := range dupes.Sets {
		g.AddDupes(set)
	}
	dupes = nil
	return g.Groups(ctx, c, thr)
}

// AddGroup counts the file pairs of a group of similar files, asked for
// with its links (ipc.GroupsOptions.Links): each link pairs every file of
// one end, its copies included, with every file of the other. A group
// without links is ErrNoLinks. It is shaped to be the callback of
// ipc.Client.GroupsEach.
func (g *Grouping) AddGroup(grp ipc.Group) error {
	if len(grp.Links) == 0 {
		return ErrNoLinks
	}
	g.addGroup(grp)
	return nil
}

// AddDupes counts the file pairs of a set of identical files (GET
// /v1/dupes, as ipc.Client.Dupes and DupesEach give them); hard links to
// one file are pairs that save nothing.
func (g *Grouping) AddDupes(set ipc.DupeSet) { g.addDupes(set) }

// Groups returns the groups of directories of the file pairs added, at
// threshold thr (percent, above 0, at most 100), largest saving first;
// none is an empty list. It asks t for the totals of the directories
// that may reach thr. Call it once, after the last Add.
func (g *Grouping) Groups(ctx context.Context, t Totaler, thr float64) ([]Group, error) {
	g.sum()
	need := g.need(thr / 100)
	if len(need) > 0 {
		paths := make([]string, len(need))
		for i, d := range need {
			paths[i] = g.dirs[d].path
		}
		ts, err := t.DirTotals(ctx, paths, 0)
		if err != nil {
			return nil, fmt.Errorf("directory totals: %w", err)
		}
		if len(ts.Dirs) != len(need) {
			return nil, fmt.Errorf("directory totals: %d answered for %d directories", len(ts.Dirs), len(need))
		}
		for i, d := range need {
			t := ts.Dirs[i]
			g.setTotal(d, t.Bytes, t.Files, t.Truncated)
		}
	}
	g.judge(thr / 100)
	out := []Group{}
	for _, grp := range g.groups() {
		out = append(out, g.wireGroup(grp))
	}
	return out, nil
}

// wireGroup renders a group for the answer.
func (g *Grouping) wireGroup(grp dirGroupOut) Group {
	out := Group{Saving: int64(math.Round(grp.saving)), Reference: g.wireDir(grp.ref), Members: make([]GroupDir, 0, len(grp.members))}
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
		files := Files{Identical: p.identical[s], Similar: p.similar[s]}
		files.Missing = max(0, int(d.IndexedFiles)-files.Identical-files.Similar)
		d.Percent = pct(m.percent)
		d.Containment, d.ReverseContainment, d.Resemblance, d.SharedBytes, d.Files = &cont, &rev, &r, &shared, &files
		out.Members = append(out.Members, d)
	}
	return out
}

func (g *Grouping) wireDir(d int32) GroupDir {
	x := &g.dirs[d]
	return GroupDir{FilePath: ipc.NewFilePath(x.path), Size: x.bytes, IndexedFiles: x.nfiles}
}
