package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/cmd/internal/cliflags"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/dirsim"
)

func newGroupsCmd(g *globals) *cobra.Command {
	var o ipc.GroupsOptions
	var dirs bool
	cmd := &cobra.Command{
		Use:   "groups [--dirs] [--threshold PCT] [--json]",
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
large answer starts at once and is never held whole; the last line counts
the groups and their files. With --json, one object as the daemon answers
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
found only where its directories line up. Exit status as without --dirs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dirs && !cmd.Flags().Changed("threshold") {
				o.Threshold = dirsim.DefaultGroupsThreshold
			}
			if o.Threshold <= 0 || o.Threshold > 100 {
				return failedf("--threshold %v: want a percentage above 0, at most 100", o.Threshold)
			}
			var err error
			if o.Prefix, err = absPrefix(o.Prefix); err != nil {
				return failed(err)
			}
			if dirs {
				return groupsDirs(cmd.Context(), g, o)
			}
			var p groupsPrinter
			if g.json {
				p = &groupsJSON{w: g.stdout, list: jsonList{open: `{"threshold":` + strconv.FormatFloat(o.Threshold, 'f', -1, 64) + `,"groups":[`}}
			} else {
				p = &groupsText{w: g.stdout, threshold: o.Threshold}
			}
			resp, err := g.client().GroupsEach(cmd.Context(), o, p.group)
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
	cliflags.Float64Var(fl, &o.Threshold, "threshold", 25, "least percentage of one file the other must contain to link them (with --dirs: least resemblance of two directories; default 50)")
	fl.BoolVar(&dirs, "dirs", false, "groups of similar directories instead of files")
	fl.IntVar(&o.MaxDF, "max-df", 0, "ignore fingerprints found in more than this many files (0: the daemon's default, -1: none)")
	fl.BoolVar(&o.AllTypes, "all-types", false, "link text and binary files too")
	fl.StringVar(&o.Prefix, "prefix", "", "only files in this directory tree (whole path components; relative to the current directory)")
	fl.IntVar(&o.MinShared, "min-shared", 0, "fingerprints two files must share to be linked, however high the percentage (0: the daemon's default, 4)")
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
	fmt.Fprintf(&b, "\nR100 %s %d\n", wirePath(grp.Reference.Path, grp.Reference.PathRaw), grp.Reference.Size)
	printCopies(&b, grp.Reference.Copies)
	for _, m := range grp.Members {
		p.files += 1 + len(m.Copies)
		path := wirePath(m.Path, m.PathRaw)
		note := ""
		if m.Template {
			note = "  template" // linked through content shared by many files
		}
		if m.Via != nil {
			fmt.Fprintf(&b, "    ~ %s %d (via %s)%s\n", path, m.Size, m.Via.Exact(), note)
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

// jsonList writes the list of a JSON object as its elements come: the
// object up to the list's "[" (open) before the first, a comma before each
// other. The caller writes what follows the list.
type jsonList struct {
	open string
	n    int // the elements written
}

func (l *jsonList) add(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	sep := ","
	if l.n == 0 {
		sep = l.open
	}
	l.n++
	_, err = io.WriteString(w, sep+string(b))
	return err
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := ipc.MarshalJSONLine(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func printCopies(w io.Writer, copies []ipc.FilePath) {
	for _, c := range copies {
		fmt.Fprintf(w, "      = %s\n", c.Exact())
	}
}

func wirePath(p, raw string) string {
	if exact, err := ipc.JoinPath(p, raw); err == nil {
		return exact
	}
	return p
}

func newDupesCmd(g *globals) *cobra.Command {
	var prefix string
	cmd := &cobra.Command{
		Use:   "dupes [--json]",
		Short: "List sets of identical files in the index",
		Long: `dupes lists the sets of indexed files with identical content (equal size and
SHA-256), largest files first, and the copies each set holds beyond one and
the bytes they take. Hard links to one file (same device and inode) are
listed, marked as links, but are one copy on disk: they are not counted as
redundant. The last line sums the sets:

  3 identical files of 300000 bytes, 2 copies on disk:
    /srv/a/big.iso
    /srv/b/big.iso  (hard link of /srv/a/big.iso)
    /srv/c/big.iso
  1 set, 3 files: 1 redundant copy, 300000 bytes

With --json, one object: {"sets": [{"size": N, "strong": HEX, "files":
[{"path": P, "hard_link_of": {"path": P}}, ...], "inodes": N,
"redundant_files": N, "redundant_bytes": N}, ...], "totals": {"sets": N,
"files": N, "redundant_files": N, "redundant_bytes": N}}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prefix, err := absPrefix(prefix)
			if err != nil {
				return failed(err)
			}
			// Each set is printed as it arrives, so that neither sifctl
			// nor the daemon holds the answer whole.
			var p dupesPrinter = &dupesText{w: g.stdout}
			if g.json {
				p = &dupesJSON{w: g.stdout, list: jsonList{open: `{"sets":[`}}
			}
			totals, err := g.client().DupesEach(cmd.Context(), prefix, p.set)
			if err != nil {
				if p.count() > 0 {
					p.cut() // what was printed is not the whole answer
				}
				return failed(err)
			}
			if err := p.end(totals); err != nil {
				return failed(err)
			}
			if p.count() == 0 {
				return nothing()
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "only files in this directory tree (whole path components; relative to the current directory)")
	return cmd
}

// dupesPrinter prints a dupes answer as its sets arrive.
type dupesPrinter interface {
	set(ipc.DupeSet) error
	end(ipc.DupesTotals) error
	cut() // the answer stopped midway, after some sets
	count() int
}

// dupesText prints each set, then a line summing them.
type dupesText struct {
	w    io.Writer
	sets int
}

func (p *dupesText) set(s ipc.DupeSet) error {
	p.sets++
	var b strings.Builder
	fmt.Fprintf(&b, "%d identical files of %d bytes", len(s.Files), s.Size)
	if s.Inodes != len(s.Files) {
		fmt.Fprintf(&b, ", %s on disk", count(s.Inodes, "copy", "copies"))
	}
	b.WriteString(":\n")
	for _, f := range s.Files {
		if f.HardLinkOf != nil {
			fmt.Fprintf(&b, "  %s  (hard link of %s)\n", f.Exact(), f.HardLinkOf.Exact())
		} else {
			fmt.Fprintf(&b, "  %s\n", f.Exact())
		}
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *dupesText) end(t ipc.DupesTotals) error {
	if p.sets == 0 {
		_, err := fmt.Fprintln(p.w, "No identical files.")
		return err
	}
	_, err := fmt.Fprintf(p.w, "%s, %s: %s, %d bytes\n", count(t.Sets, "set", "sets"), count(t.Files, "file", "files"),
		count(t.RedundantFiles, "redundant copy", "redundant copies"), t.RedundantBytes)
	return err
}

func (p *dupesText) cut()       { fmt.Fprintln(p.w, "(answer cut short: the sets above are not all)") }
func (p *dupesText) count() int { return p.sets }

// dupesJSON prints the answer as the daemon sends it, one object
// (ipc.DupesResponse), writing each set once it arrives.
type dupesJSON struct {
	w    io.Writer
	list jsonList
}

func (p *dupesJSON) set(s ipc.DupeSet) error { return p.list.add(p.w, s) }

func (p *dupesJSON) end(t ipc.DupesTotals) error {
	if p.list.n == 0 {
		return writeJSONLine(p.w, ipc.DupesResponse{Sets: []ipc.DupeSet{}, Totals: t})
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = io.WriteString(p.w, `],"totals":`+string(b)+"}\n")
	return err
}

// cut leaves the JSON unfinished, so that no decoder takes it for a whole
// answer.
func (p *dupesJSON) cut()       { fmt.Fprintln(p.w) }
func (p *dupesJSON) count() int { return p.list.n }

// count renders n with its noun, e.g. "1 set", "2 sets".
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}
