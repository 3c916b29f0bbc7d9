package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

func newRescanCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rescan [DIR]",
		Short: "Reconcile the index with the disk under DIR, or under every root",
		Long: `rescan asks sifd to reconcile DIR, a root or a directory under one, or every
root when no DIR is given. A reconcile walks the tree and compares the disk
with the index by metadata (size, modification time, inode): it re-reads only
the files that differ, indexes new files and drops the records of files that
are gone. Unchanged files are not read again, so reconciling a large tree
that mostly did not change is cheap.

sifd watches its roots and needs no rescan for changes it is told about. Use
one after mounting a filesystem under a root, after restoring a backup, or
when 'sifctl status' reports a root degraded (directories it could not watch
are otherwise only rescanned periodically).

rescan prints the directories queued and returns at once; 'sifctl status'
shows the scan's progress. DIR may be relative to the current directory.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 1 {
				var err error
				if dir, err = absDir(args[0]); err != nil {
					return failed(err)
				}
			}
			resp, err := g.client().Rescan(cmd.Context(), dir)
			if err != nil {
				return failed(err)
			}
			if g.json {
				return g.printJSON(resp)
			}
			printRescan(g, resp)
			return nil
		},
	}
}

func printRescan(g *globals, r *ipc.RescanResponse) {
	fmt.Fprintf(g.stdout, "queued %d %s\n", len(r.Queued), plural(len(r.Queued), "directory", "directories"))
	for _, d := range r.Queued {
		fmt.Fprintf(g.stdout, "  %s\n", quoteName(d.Exact()))
	}
}
