package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sif-dev/sif/ipc"
)

// groups --by simihash: SimiHash's all against all, each group's files
// with their distances to its reference, and the sweep's comparisons
// against the pairs.

// simiGroupsHelp is what groups --help says of --by simihash.
const simiGroupsHelp = `

With --by simihash, groups lists SimiHash's near-identical files
(Sadowski and Levin; see 'sifctl similar --help'), found by one sweep of
the index's SimiHash keys in key order: each file is compared only with
the files before it whose keys are within --key-tolerance percent of the
size, then by size (--size-ratio), then by sum table (--sum-tolerance
percent of the size). Two files are linked when 'similar --by simihash'
of either would list the other, and linked files form a group. Each group
names a reference (R, the file first in key order) and lists every file
with its sum-table and key distances to R, nearest first; a file linked
only through others may be farther from R than the tolerances:

     sum-dist  key-dist  path  size
  R         0         0  /srv/src/draft.c  10763
            0         0  /srv/bak/draft.c  10763  identical
           31        12  /srv/old/draft.c  10771

The last line says how many sum-table comparisons the sweep made against
the pairs of distinct contents, n(n-1)/2: a few per file when the keys are
spread, all of the pairs on a set of files all alike. It needs an index
created with SimiHash ([scheme] simihash = true in sifd's configuration);
--prefix applies, and the options of groups by fingerprints do not. With
--json, one object as the daemon answers (GET /v1/groups?by=simihash):
{"threshold": 0, "by": "simihash", "groups": [{"reference": FILE,
"members": [FILE, ...]}, ...], "simihash": {"tolerances", "contents",
"pairs", "comparisons", "similar", "overflow", "window"}, "elapsed_ns": N},
each FILE {"path", "size", "percent": 0, "simihash": {"key_distance",
"sum_distance", "identical"?}}.`

// simiGroupsFlagsOnly are the flags of groups that apply to --by simihash;
// groupsFlagsBoth, those of them that apply without it too.
var (
	simiGroupsFlagsOnly = map[string]bool{"by": true, "prefix": true, "null": true, "key-tolerance": true, "sum-tolerance": true, "size-ratio": true}
	groupsFlagsBoth     = map[string]bool{"by": true, "prefix": true, "null": true}
)

// checkSimiGroupsFlags refuses the flags groups --by simihash does not
// take, and those it alone takes without it.
func checkSimiGroupsFlags(cmd *cobra.Command, by string) error {
	switch by {
	case ipc.ByManber, ipc.BySimiHash:
	default:
		return failedf("--by %q: want %q (the default) or %q", by, ipc.ByManber, ipc.BySimiHash)
	}
	var err error
	own := cmd.LocalNonPersistentFlags()
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch {
		case err != nil, own.Lookup(fl.Name) == nil: // global flags apply
		case by == ipc.BySimiHash && !simiGroupsFlagsOnly[fl.Name]:
			err = failedf("--%s does not apply to --by simihash", fl.Name)
		case by != ipc.BySimiHash && !groupsFlagsBoth[fl.Name] && simiGroupsFlagsOnly[fl.Name]:
			err = failedf("--%s applies only to --by simihash", fl.Name)
		}
	})
	return err
}

// simiGroupsText prints the groups by SimiHash as they arrive, and the
// sweep's counts at the end.
type simiGroupsText struct {
	w      io.Writer
	groups int
	files  int
}

func (p *simiGroupsText) group(grp ipc.Group) error {
	var b strings.Builder
	if p.groups == 0 {
		b.WriteString("Groups of near-identical files by SimiHash, largest first\n\n   sum-dist  key-dist  path  size\n")
	}
	p.groups++
	for i, f := range append([]ipc.GroupFile{grp.Reference}, grp.Members...) {
		p.files++
		mark, note := " ", ""
		if i == 0 {
			mark = "R"
		}
		var d ipc.SimiGroupFile
		if f.SimiHash != nil {
			d = *f.SimiHash
		}
		if d.Identical && i > 0 {
			note = "  identical"
		}
		fmt.Fprintf(&b, "%s %9d %9d  %s  %d%s\n", mark, d.SumDistance, d.KeyDistance, quoteName(exactPath(f.Path, f.PathRaw)), f.Size, note)
	}
	b.WriteByte('\n')
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *simiGroupsText) end(r *ipc.GroupsResponse) error {
	var b strings.Builder
	if p.groups == 0 {
		b.WriteString("No groups of near-identical files by SimiHash.\n")
	} else {
		fmt.Fprintf(&b, "%s of near-identical files, %s.\n", count(p.groups, "group", "groups"), count(p.files, "file", "files"))
	}
	if s := r.SimiHash; s != nil {
		t := s.Tolerances
		fmt.Fprintf(&b, "Tolerances: key %g%%, sum %g%% of the size, size ratio %g. %d sum-table comparisons for %d pairs of %d contents (%s), %d similar.\n",
			100*t.Key, 100*t.Sum, t.SizeRatio, s.Comparisons, s.Pairs, s.Contents, share(s.Comparisons, s.Pairs), s.Similar)
		if s.Overflow > 0 {
			fmt.Fprintf(&b, "The sweep's window (%d contents) overflowed %d times on runs of equal keys: the pairs beyond it were not compared.\n", s.Window, s.Overflow)
		}
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *simiGroupsText) cut() {
	fmt.Fprintln(p.w, "(answer cut short: the groups above are not all)")
}
func (p *simiGroupsText) started() bool { return p.groups > 0 }
func (p *simiGroupsText) count() int    { return p.groups }

// share renders n/d as a percentage, or "no pairs" when d is 0.
func share(n, d int64) string {
	if d == 0 {
		return "no pairs"
	}
	return fmt.Sprintf("%.3g%%", 100*float64(n)/float64(d))
}

// simiGroupsJSON prints the answer by SimiHash as the daemon sends it, one
// object (ipc.GroupsResponse), writing each group once it arrives.
type simiGroupsJSON struct {
	w    io.Writer
	list jsonList
}

func (p *simiGroupsJSON) group(grp ipc.Group) error { return p.list.add(p.w, grp) }

func (p *simiGroupsJSON) end(r *ipc.GroupsResponse) error {
	if p.list.n == 0 {
		return writeJSONLine(p.w, ipc.GroupsResponse{By: r.By, Groups: []ipc.Group{}, SimiHash: r.SimiHash, ElapsedNs: r.ElapsedNs})
	}
	b, err := json.Marshal(r.SimiHash)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(p.w, `],"simihash":%s,"elapsed_ns":%d}`+"\n", b, r.ElapsedNs)
	return err
}

func (p *simiGroupsJSON) cut()          { fmt.Fprintln(p.w) }
func (p *simiGroupsJSON) started() bool { return p.list.n > 0 }
func (p *simiGroupsJSON) count() int    { return p.list.n }
