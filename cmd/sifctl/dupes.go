package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

func newDupesCmd(g *globals) *cobra.Command {
	var prefix, in string
	var fleet, empty bool
	minSize := int64(1)
	var script scriptOptions
	cmd := &cobra.Command{
		Use:   "dupes [--json | -0]",
		Short: "List sets of identical files in the index",
		Long: `dupes lists the sets of indexed files with identical content (equal size and
SHA-256), largest files first, and the copies each set holds beyond one and
the bytes they take. Hard links to one file (same device and inode) are
listed, marked as links, but are one copy on disk: they are not counted as
redundant. The last line sums the sets:

  3 identical files of 293 KiB, 2 copies on disk:
    /srv/a/big.iso
    /srv/b/big.iso  (hard link of /srv/a/big.iso)
    /srv/c/big.iso
  1 set, 3 files: 1 redundant copy, 293 KiB

Sizes are in KiB, MiB and GiB (powers of 1024) on a terminal, and in
bytes ("300000 bytes") when the output is not one, for programs.

Empty files are left out unless --empty is given; --min-size leaves out
the smaller files too. --prefix lists only the files under a directory
tree, and the sets with two of them; --in lists the sets with at least one
file under it, with all their files, wherever they are; both may be given:

  sifctl dupes --min-size 100M          # big files only
  sifctl dupes --prefix /srv/projects   # copies within /srv/projects
  sifctl dupes --in /srv/projects       # what in /srv/projects is also elsewhere

With --json, one object: {"sets": [{"size": N, "strong": HEX, "files":
[{"path": P, "hard_link_of": {"path": P}}, ...], "inodes": N,
"redundant_files": N, "redundant_bytes": N}, ...], "totals": {"sets": N,
"files": N, "redundant_files": N, "redundant_bytes": N}}, sizes in bytes.

--fleet lists the sets across every host of the fleet index (sifd with a
[fleet] table; for root, sifd's user and the fleet's ask group): the files
under published roots of hosts heard from recently, each as HOST:PATH
("host" in JSON, and "hosts" per set), the most redundant bytes first, at
most 10,000 sets; --prefix then keeps the sets with a file of this host
under it (what here is also stored elsewhere), and --in is not taken;
--min-size keeps the large enough sets among those 10,000. Hard links are
not known to the fleet: every file counts as a copy.

--script writes a POSIX shell script to review, then run with sh, as the
user it should act for: per set, the file kept (--keep oldest, newest or
under:DIR, as for dedupe) and a line per other file that hard-links it to
the kept file (or removes it, with --delete) if cmp still finds them
identical when the script runs. See also dedupe, which acts at once.

-0 (--null) prints, for scripts, each set's files and nothing else, as
jdupes -0 does: each name as it is, unquoted (HOST:PATH with --fleet),
ended by a NUL byte, and after each set an empty record (one more NUL
byte). A hard link is listed as any other file. For xargs, drop the
empty records:

  sifctl dupes -0 | grep -z . | xargs -0 ls -l

An answer cut short ends the records where it broke off, exits 2 and says
why on standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := dupesOptions(cmd, prefix, in, minSize, fleet, empty)
			if err != nil {
				return failed(err)
			}
			if script.file != "" {
				if g.null {
					return failedf("--null prints the sets on standard output; --script writes a script instead: give one of them")
				}
				return script.write(cmd.Context(), g, o)
			}
			// Each set is printed as it arrives, so that neither sifctl
			// nor the daemon holds the answer whole.
			var p dupesPrinter = &dupesText{w: g.stdout, size: bytesExact}
			if isTerminal(g.stdout) {
				p = &dupesText{w: g.stdout, size: humanBytes}
			}
			if g.json {
				p = &dupesJSON{w: g.stdout, list: jsonList{open: `{"sets":[`}}
			}
			if g.null {
				p = &dupesNull{w: g.stdout}
			}
			stop := g.newProgress().untilAnswer(cmd.Context(), "sifctl dupes: sifd is finding the identical files among "+indexedFilesIf(cmd.Context(), g))
			defer stop()
			set := func(s ipc.DupeSet) error {
				stop()
				return p.set(s)
			}
			totals, err := g.client().DupesWith(cmd.Context(), o, set)
			stop()
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
	cmd.Flags().BoolVar(&fleet, "fleet", false, "identical files across every host of the fleet index")
	cmd.Flags().Var(sizeFlag{&minSize}, "min-size", "only files of at least this size (4096, 100K, 1MiB, 1GB); 1 leaves out empty files")
	cmd.Flags().BoolVar(&empty, "empty", false, "list empty files too (as --min-size 0)")
	cmd.Flags().StringVar(&in, "in", "", "the sets with a file in this directory tree (relative to the current directory), with all their files: what here is also elsewhere")
	script.flags(cmd)
	g.nullFlag(cmd)
	return cmd
}

// dupesOptions checks dupes' flags and makes its paths absolute.
func dupesOptions(cmd *cobra.Command, prefix, in string, minSize int64, fleet, empty bool) (ipc.DupesOptions, error) {
	o := ipc.DupesOptions{MinSize: minSize, Fleet: fleet}
	if empty {
		if cmd.Flags().Changed("min-size") && minSize > 0 {
			return o, fmt.Errorf("--empty lists empty files, which --min-size %d leaves out: give one of them", minSize)
		}
		o.MinSize = 0
	}
	if in != "" && fleet {
		return o, fmt.Errorf("--in is not for --fleet, whose --prefix already keeps the sets with a file of this host under it")
	}
	var err error
	if o.Prefix, err = absPrefix(prefix); err != nil {
		return o, err
	}
	if in != "" {
		if o.In, err = absDir(in); err != nil {
			return o, fmt.Errorf("--in %w", err)
		}
	}
	return o, nil
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
	size func(int64) string // bytesExact, or humanBytes on a terminal
	sets int
}

func (p *dupesText) set(s ipc.DupeSet) error {
	p.sets++
	var b strings.Builder
	fmt.Fprintf(&b, "%d identical files of %s", len(s.Files), p.size(s.Size))
	if s.Hosts > 0 {
		fmt.Fprintf(&b, " on %s", count(s.Hosts, "host", "hosts"))
	}
	if s.Inodes != len(s.Files) {
		fmt.Fprintf(&b, ", %s on disk", count(s.Inodes, "copy", "copies"))
	}
	b.WriteString(":\n")
	for _, f := range s.Files {
		name := textPath(f.Host, f.FilePath)
		if f.HardLinkOf != nil {
			fmt.Fprintf(&b, "  %s  (hard link of %s)\n", name, quoteName(f.HardLinkOf.Exact()))
		} else {
			fmt.Fprintf(&b, "  %s\n", name)
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
	_, err := fmt.Fprintf(p.w, "%s, %s: %s, %s\n", count(t.Sets, "set", "sets"), count(t.Files, "file", "files"),
		count(t.RedundantFiles, "redundant copy", "redundant copies"), p.size(t.RedundantBytes))
	return err
}

func (p *dupesText) cut()       { fmt.Fprintln(p.w, "(answer cut short: the sets above are not all)") }
func (p *dupesText) count() int { return p.sets }

// dupesNull prints each set's files, one record each, and an empty
// record after the set (--null).
type dupesNull struct {
	w    io.Writer
	sets int
}

func (p *dupesNull) set(s ipc.DupeSet) error {
	p.sets++
	names := make([]string, len(s.Files))
	for i, f := range s.Files {
		names[i] = hostPath(f.Host, f.FilePath)
	}
	return writeRecords(p.w, true, names...)
}

func (p *dupesNull) end(ipc.DupesTotals) error { return nil }
func (p *dupesNull) cut()                      {} // the exit status and standard error say it
func (p *dupesNull) count() int                { return p.sets }

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
