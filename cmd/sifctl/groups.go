package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/cmd/internal/cliflags"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/dirsim"
)

func newGroupsCmd(g *globals) *cobra.Command {
	var o ipc.GroupsOptions
	var dirs bool
	var simi similarFlags // --key-tolerance, --sum-tolerance, --size-ratio
	cmd := &cobra.Command{
		Use:   "groups [--dirs] [--threshold PCT] [--by simihash] [--json | -0]",
		Short: "Find all groups of similar files, or directories, in the index",
		Long: `groups compares every indexed file with every other (Manber's all-against-all
mode) and prints the groups of similar files. Two files are linked when one
contains at least --threshold percent of the other; linked files form a group.
Each group names a reference file (R) and, for every other member, how much
of it the reference contains or it contains of the reference, whichever is
more, and its size:

  R100 /u1/udi/xyz/abc/foo.c 10763
      79 /u1/udi/qwe/ewq/bar.c 10979
      75 /u1/udi/uuu/xxx/foobar.c 9560

A member linked only through another member shows "~" and that member.
Identical copies are folded into one line and listed after it with "=";
'sifctl dupes' lists all identical files. The threshold is applied at query
time: no re-indexing is needed to change it. Two files must also share at
least --min-shared fingerprints: a tiny file "contained" in a large one is no
evidence. Text and binary files are not linked unless --all-types is given.

Fingerprints found in more than --max-df files (a licence header,
boilerplate) link nothing, unless they are most of a file: such a file is
one of a family made from one template or form, and the families are
groups of their own, their members marked "template" (in --json,
"template": true).

Groups come largest first and are printed as the daemon sends them, so a
large answer is never held whole; the daemon sends the first once it has
linked every file (seconds on a large index), and on a terminal sifctl
shows on standard error until then what the daemon is doing (selecting the
files, linking them in one pass over the index or more, ordering the
groups), how much of that step is done with an estimate of the time left,
and how long it has waited. The last line
counts the groups and their files. With --json, one object as the daemon answers
(GET /v1/groups): {"threshold": PCT, "groups": [{"reference": FILE,
"members": [FILE, ...]}, ...], "elapsed_ns": N}, also written as it comes.
An answer cut short (the daemon failed or went away midway) ends with a
line saying so, or with --json is left unfinished, and exits 2.

With --dirs, groups lists groups of directories that are near-copies of
each other (a tree copied and edited, a backup, a vendored library), one
line per group, the largest saving first:

  48950 to save: R /srv/src/proj 62519 | 67 /srv/backup/2024/proj 58120

A file of one directory is found in another whole when an identical file
is there, by its shared part when a similar one is. Two directories are
linked when their resemblance, the bytes they share over the bytes of
both, reaches --threshold percent (default 50 with --dirs); the member's
number is that resemblance. A copied tree is one line, at its top: pairs
of its subdirectories are folded into it, and so are the parents of a copy
that hold nothing more of it. A directory holding a copy of its own files
(a vendored copy of the project inside it) is linked to that copy. The
saving is what deleting every member but the reference (R) would reclaim
without losing what R holds: for each member, the bytes of it found in R
(or in the member it is linked through, "~ ... (via DIR)"), hard links
not counted; a member inside another is counted with it. The numbers are
estimates from the index; no file is read. sifctl asks the daemon for the
links of the similar files (at 10 percent or more, or --threshold if
lower; --max-df, --min-shared and --all-types shape them), the identical
files and the totals of the directories, and sums them itself, so the
answer comes at the end, not as it is found. With --json, one object:
{"threshold": PCT, "dirs": true, "groups": [{"saving": N, "reference":
DIR, "members": [DIR, ...]}], "elapsed_ns": N}, each DIR {"path", "size",
"indexed_files", "percent", and for a member "containment",
"reverse_containment", "resemblance", "shared_bytes", "files":
{"identical", "similar", "missing"}, "via"?}. Files linked at under 10
percent count nothing, and a copy whose files moved to other depths is
found only where its directories line up. Exit status as without --dirs.

-0 (--null) prints, for scripts, each group's files and nothing else: the
reference, then each member, each file followed by its identical copies,
each name as it is, unquoted, ended by a NUL byte, and after each group
an empty record (one more NUL byte), as dupes -0 does; with --dirs, each
group's directories, the reference first. For xargs, drop the empty
records: sifctl groups -0 | grep -z . | xargs -0 ls -l. An answer cut
short ends the records where it broke off, exits 2 and says why on
standard error.` + simiGroupsHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkSimiGroupsFlags(cmd, o.By); err != nil {
				return err
			}
			if o.By == ipc.BySimiHash {
				tol, err := simiTolerances(&simi)
				if err != nil {
					return err
				}
				o.Tolerances, o.Threshold = *tol, 0 // no threshold: the tolerances say
			}
			if dirs && !cmd.Flags().Changed("threshold") {
				o.Threshold = dirsim.DefaultGroupsThreshold
			}
			if o.By != ipc.BySimiHash && (o.Threshold <= 0 || o.Threshold > 100) {
				return failedf("--threshold %v: want a percentage above 0, at most 100", o.Threshold)
			}
			var err error
			if o.Prefix, err = absPrefix(o.Prefix); err != nil {
				return failed(err)
			}
			pr := g.newProgress()
			if pr.w != nil {
				name := "sifctl groups"
				what := name + ": sifd is linking the similar files among " + indexedFiles(cmd.Context(), g.client())
				if dirs {
					name += " --dirs"
					what = name + ": comparing the directories of " + indexedFiles(cmd.Context(), g.client())
				}
				var stop func()
				if o.By == ipc.BySimiHash {
					stop = pr.untilAnswer(cmd.Context(), what)
				} else {
					o.RequestID = ipc.NewRequestID()
					stop = pr.untilWork(cmd.Context(), g.client(), o.RequestID, what, name)
				}
				defer stop()
				g.beforeOutput = stop
			}
			if dirs {
				return groupsDirs(cmd.Context(), g, o)
			}
			var p groupsPrinter
			switch {
			case g.null: // the same records by either method
				p = &groupsNull{w: g.stdout}
			case o.By == ipc.BySimiHash && g.json:
				p = &simiGroupsJSON{w: g.stdout, list: jsonList{open: `{"threshold":0,"by":"simihash","groups":[`}}
			case o.By == ipc.BySimiHash:
				p = &simiGroupsText{w: g.stdout}
			case g.json:
				p = &groupsJSON{w: g.stdout, list: jsonList{open: `{"threshold":` + strconv.FormatFloat(o.Threshold, 'f', -1, 64) + `,"groups":[`}}
			default:
				p = &groupsText{w: g.stdout, threshold: o.Threshold}
			}
			each := func(grp ipc.Group) error {
				g.outputStarts()
				return p.group(grp)
			}
			resp, err := g.client().GroupsEach(cmd.Context(), o, each)
			g.outputStarts()
			if err != nil {
				if p.started() {
					// What was printed is not the whole answer: say so on
					// stdout too, so no reader takes it for one.
					p.cut()
				}
				return failed(err)
			}
			if err := p.end(resp); err != nil {
				return failed(err)
			}
			if p.count() == 0 {
				return nothing()
			}
			return nil
		},
	}
	fl := cmd.Flags()
	cliflags.Float64Var(fl, &o.Threshold, "threshold", 25, fmt.Sprintf("least percentage of one file the other must contain to link them (with --dirs the least resemblance of two directories, %d unless given)", dirsim.DefaultGroupsThreshold))
	fl.BoolVar(&dirs, "dirs", false, "groups of similar directories instead of files")
	fl.IntVar(&o.MaxDF, "max-df", 0, "ignore fingerprints found in more than this many files (0: the daemon's default, -1: none)")
	fl.BoolVar(&o.AllTypes, "all-types", false, "link text and binary files too")
	fl.StringVar(&o.Prefix, "prefix", "", "only files in this directory tree (whole path components; relative to the current directory)")
	fl.IntVar(&o.MinShared, "min-shared", 0, fmt.Sprintf("fingerprints two files must share to be linked, however high the percentage (0: the daemon's default, %d)", ipc.DefaultMinShared))
	fl.StringVar(&o.By, "by", ipc.ByManber, `how to link files: "manber" (fingerprints: one contains a good part of the other) or "simihash" (SimiHash: near-identical files, within a few percent)`)
	d := fingerprint.DefaultTolerances()
	cliflags.Float64Var(fl, &simi.keyTol, "key-tolerance", 100*d.Key, "--by simihash: greatest key distance, in percent of the larger file's size")
	cliflags.Float64Var(fl, &simi.sumTol, "sum-tolerance", 100*d.Sum, "--by simihash: greatest sum-table distance, in percent of the larger file's size")
	cliflags.Float64Var(fl, &simi.sizeRatio, "size-ratio", 0, fmt.Sprintf("--by simihash: greatest factor between two sizes (0: the default, %.4g, within %.3g %%)", 1/d.SizeRatio, 100*(1-d.SizeRatio)))
	g.nullFlag(cmd)
	return cmd
}

// groupsPrinter prints a groups answer as its groups arrive (see
// ipc.Client.GroupsEach): group for each, then end with the rest of the
// answer, or cut when the answer broke off after started.
type groupsPrinter interface {
	group(ipc.Group) error
	end(*ipc.GroupsResponse) error
	cut()
	started() bool
	count() int
}

// groupsText prints Manber's report, each group once it arrives, and a
// count at the end.
type groupsText struct {
	w         io.Writer
	threshold float64
	groups    int
	files     int
}

func (p *groupsText) group(grp ipc.Group) error {
	var b strings.Builder
	if p.groups == 0 {
		fmt.Fprintf(&b, "Groups of similar files, largest first. Minimum similarity = %g%%\n", p.threshold)
	}
	p.groups++
	p.files += 1 + len(grp.Reference.Copies)
	fmt.Fprintf(&b, "\nR100 %s %d\n", quoteName(exactPath(grp.Reference.Path, grp.Reference.PathRaw)), grp.Reference.Size)
	printCopies(&b, grp.Reference.Copies)
	for _, m := range grp.Members {
		p.files += 1 + len(m.Copies)
		path := quoteName(exactPath(m.Path, m.PathRaw))
		note := ""
		if m.Template {
			note = "  template" // linked through content shared by many files
		}
		if m.Via != nil {
			fmt.Fprintf(&b, "    ~ %s %d (via %s)%s\n", path, m.Size, quoteName(m.Via.Exact()), note)
		} else {
			fmt.Fprintf(&b, "  %3.0f %s %d%s\n", m.Percent, path, m.Size, note)
		}
		printCopies(&b, m.Copies)
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *groupsText) end(r *ipc.GroupsResponse) error {
	if p.groups == 0 {
		_, err := fmt.Fprintf(p.w, "No groups of similar files. Minimum similarity = %g%%\n", r.Threshold)
		return err
	}
	_, err := fmt.Fprintf(p.w, "\n%s of similar files, %s.\n", count(p.groups, "group", "groups"), count(p.files, "file", "files"))
	return err
}

func (p *groupsText) cut()          { fmt.Fprintln(p.w, "\n(answer cut short: the groups above are not all)") }
func (p *groupsText) started() bool { return p.groups > 0 }
func (p *groupsText) count() int    { return p.groups }

// groupsJSON prints the answer as the daemon sends it, one object
// (ipc.GroupsResponse), writing each group once it arrives.
type groupsJSON struct {
	w    io.Writer
	list jsonList // opens with the threshold asked: the daemon answers with it
}

func (p *groupsJSON) group(grp ipc.Group) error { return p.list.add(p.w, grp) }

func (p *groupsJSON) end(r *ipc.GroupsResponse) error {
	if p.list.n == 0 {
		return writeJSONLine(p.w, ipc.GroupsResponse{Threshold: r.Threshold, Groups: []ipc.Group{}, ElapsedNs: r.ElapsedNs})
	}
	_, err := fmt.Fprintf(p.w, `],"elapsed_ns":%d}`+"\n", r.ElapsedNs)
	return err
}

// cut leaves the JSON unfinished, so that no decoder takes it for a whole
// answer.
func (p *groupsJSON) cut()          { fmt.Fprintln(p.w) }
func (p *groupsJSON) started() bool { return p.list.n > 0 }
func (p *groupsJSON) count() int    { return p.list.n }

// groupsNull prints each group's files, one record each, and an empty
// record after the group (--null): the reference, then each member, each
// followed by its identical copies.
type groupsNull struct {
	w      io.Writer
	groups int
}

func (p *groupsNull) group(grp ipc.Group) error {
	p.groups++
	var names []string
	for _, f := range append([]ipc.GroupFile{grp.Reference}, grp.Members...) {
		names = append(names, exactPath(f.Path, f.PathRaw))
		for _, c := range f.Copies {
			names = append(names, c.Exact())
		}
	}
	return writeRecords(p.w, true, names...)
}

func (p *groupsNull) end(*ipc.GroupsResponse) error { return nil }
func (p *groupsNull) cut()                          {} // the exit status and standard error say it
func (p *groupsNull) started() bool                 { return p.groups > 0 }
func (p *groupsNull) count() int                    { return p.groups }

func printCopies(w io.Writer, copies []ipc.FilePath) {
	for _, c := range copies {
		fmt.Fprintf(w, "      = %s\n", quoteName(c.Exact()))
	}
}

// `sifctl groups --dirs`: groups of directories that are near-copies of
// each other, found by package ipc/dirsim; below, the answer's shape and
// its printing.

// dirGroupsLine is the answer of `sifctl groups --dirs --json`.
type dirGroupsLine struct {
	Threshold float64        `json:"threshold"`
	Dirs      bool           `json:"dirs"` // always true
	Groups    []dirsim.Group `json:"groups"`
	ElapsedNs int64          `json:"elapsed_ns"`
}

// groupsDirs answers `sifctl groups --dirs`: it prints the groups and
// returns nothing() when there are none. o shapes the file links; its
// threshold is the directories', percent.
func groupsDirs(ctx context.Context, g *globals, o ipc.GroupsOptions) error {
	start := time.Now()
	groups, err := dirsim.Groups(ctx, g.client(), &dirsim.GroupsOptions{Threshold: o.Threshold, Prefix: o.Prefix,
		MaxDF: o.MaxDF, MinShared: o.MinShared, AllTypes: o.AllTypes, RequestID: o.RequestID})
	g.outputStarts()
	if err != nil {
		if errors.Is(err, dirsim.ErrNoLinks) {
			err = fmt.Errorf("%w: it is older than this sifctl", err)
		}
		return failed(err)
	}
	line := dirGroupsLine{Threshold: o.Threshold, Dirs: true, Groups: groups, ElapsedNs: time.Since(start).Nanoseconds()}
	if g.json {
		if err := g.printJSON(line); err != nil {
			return err
		}
	} else if g.null {
		if err := dirGroupsNull(g.stdout, groups); err != nil {
			return failed(err)
		}
	} else if err := printDirGroups(g.stdout, &line); err != nil {
		return failed(err)
	}
	if len(line.Groups) == 0 {
		return nothing()
	}
	return nil
}

// dirGroupsNull prints each group's directories, the reference first,
// one record each, and an empty record after the group (--null).
func dirGroupsNull(w io.Writer, groups []dirsim.Group) error {
	for _, grp := range groups {
		names := []string{grp.Reference.Exact()}
		for _, m := range grp.Members {
			names = append(names, m.Exact())
		}
		if err := writeRecords(w, true, names...); err != nil {
			return err
		}
	}
	return nil
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
		fmt.Fprintf(&b, "%d to save: R %s %d", grp.Saving, quoteName(grp.Reference.Exact()), grp.Reference.Size)
		for _, m := range grp.Members {
			if m.Via != nil {
				fmt.Fprintf(&b, " | ~%.0f %s %d (via %s)", m.Percent, quoteName(m.Exact()), m.Size, quoteName(m.Via.Exact()))
			} else {
				fmt.Fprintf(&b, " | %.0f %s %d", m.Percent, quoteName(m.Exact()), m.Size)
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
