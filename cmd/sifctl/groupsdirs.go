package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/dirsim"
)

// `sifctl groups --dirs`: groups of directories that are near-copies of
// each other, found by package ipc/dirsim; this file holds its answer's
// shape and its printing.

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
		MaxDF: o.MaxDF, MinShared: o.MinShared, AllTypes: o.AllTypes})
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
	} else if err := printDirGroups(g.stdout, &line); err != nil {
		return failed(err)
	}
	if len(line.Groups) == 0 {
		return nothing()
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
