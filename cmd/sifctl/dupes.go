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
	var prefix string
	var fleet bool
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
"files": N, "redundant_files": N, "redundant_bytes": N}}.

--fleet lists the sets across every host of the fleet index (sifd with a
[fleet] table; for root, sifd's user and the fleet's ask group): the files
under published roots of hosts heard from recently, each as HOST:PATH
("host" in JSON, and "hosts" per set), the most redundant bytes first, at
most 10,000 sets; --prefix then keeps the sets with a file of this host
under it (what here is also stored elsewhere). Hard links are not known
to the fleet: every file counts as a copy.`,
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
			each := g.client().DupesEach
			if fleet {
				each = g.client().FleetDupesEach
			}
			totals, err := each(cmd.Context(), prefix, p.set)
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
	if s.Hosts > 0 {
		fmt.Fprintf(&b, " on %s", count(s.Hosts, "host", "hosts"))
	}
	if s.Inodes != len(s.Files) {
		fmt.Fprintf(&b, ", %s on disk", count(s.Inodes, "copy", "copies"))
	}
	b.WriteString(":\n")
	for _, f := range s.Files {
		name := f.Exact()
		if f.Host != "" {
			name = f.Host + ":" + name
		}
		if f.HardLinkOf != nil {
			fmt.Fprintf(&b, "  %s  (hard link of %s)\n", name, f.HardLinkOf.Exact())
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
