package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

const rootsHelp = `roots lists the directories sifd watches and indexes, one a line:

  PATH       the root
  STATE      scanning, watching, polling, degraded or failed
  WATCHED    directories watched for changes under it
  FILES      files its current or last scan found
  SOURCE     "config" (sifd's configuration or command line) or "added"
             (sifctl roots add)
  REASON     why a root is polling, degraded or failed

'sifctl roots add DIR' and 'sifctl roots remove DIR' change the roots of
the running daemon at once, and print the roots after the change. DIR may be
relative to the current directory. The change persists across restarts: the
daemon stores it in its state directory (DB.state/roots.json, beside the
index), not in the configuration file, and it wins over the configuration:
a root removed here stays out even when the configuration names it, until
it is added again.
Adding a root starts a scan of it. Removing a root stops watching it and
drops its files from the index; the files themselves are not touched.

Exit status: 0 when there are roots, 1 when there are none, 2 on error.`

func newRootsCmd(g *globals) *cobra.Command {
	list := func(cmd *cobra.Command, _ []string) error {
		resp, err := g.client().Roots(cmd.Context())
		if err != nil {
			return failed(err)
		}
		return g.showRoots(resp)
	}
	cmd := &cobra.Command{
		Use:   "roots [list | add DIR | remove DIR]",
		Short: "List, add or remove the directories sifd indexes",
		Long:  rootsHelp,
		Args:  cobra.NoArgs,
		RunE:  list,
	}
	cmd.AddCommand(
		&cobra.Command{
			Use:   "list",
			Short: "List the roots with their state (the default)",
			Long:  rootsHelp,
			Args:  cobra.NoArgs,
			RunE:  list,
		},
		&cobra.Command{
			Use:   "add DIR",
			Short: "Watch and index DIR too, from now on and after restarts",
			Long: `add makes DIR a root of the running daemon: it is scanned at once, then
watched for changes. The change persists across restarts: the daemon stores
it in its state directory. DIR may be relative to the current directory; the
daemon must be able to read it. The roots after the change are printed as by
'sifctl roots'.`,
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				dir, err := absDir(args[0])
				if err != nil {
					return failed(err)
				}
				resp, err := g.client().AddRoot(cmd.Context(), dir)
				if err != nil {
					return failed(err)
				}
				return g.showRoots(resp)
			},
		},
		&cobra.Command{
			Use:   "remove DIR",
			Short: "Stop indexing the root DIR and drop its files from the index",
			Long: `remove stops watching the root DIR and drops its files from the index, so
queries no longer find them; the files themselves are not touched. From
the moment it returns, queries answer none of them and 'sifctl status'
counts none; the daemon deletes their records in the background, paced to
keep the index's other writes flowing, and 'sifctl status' shows how many
are left until it is done (a stop meanwhile: the next start finishes). The
change persists across restarts: the daemon stores it in its index
directory. DIR may be relative to the current directory, and must name a
root, not a directory under one. The roots after the change are printed as
by 'sifctl roots'.`,
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				dir, err := absDir(args[0])
				if err != nil {
					return failed(err)
				}
				resp, err := g.client().RemoveRoot(cmd.Context(), dir)
				if err != nil {
					return failed(err)
				}
				return g.showRoots(resp)
			},
		},
	)
	return cmd
}

// showRoots prints the roots, as a table or JSON, and returns nothing()
// when there are none.
func (g *globals) showRoots(resp *ipc.RootsResponse) error {
	if g.json {
		if err := g.printJSON(resp); err != nil {
			return err
		}
	} else {
		printRoots(g.stdout, resp.Roots)
	}
	if len(resp.Roots) == 0 {
		return nothing()
	}
	return nil
}

// printRoots writes roots as an aligned table.
func printRoots(w io.Writer, roots []ipc.RootStatus) {
	if len(roots) == 0 {
		fmt.Fprintln(w, "No roots. Add one with 'sifctl roots add DIR'.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSTATE\tWATCHED\tFILES\tSOURCE\tREASON")
	for _, r := range roots {
		watched := strconv.Itoa(r.Watched)
		if r.Unwatched > 0 {
			watched += fmt.Sprintf(" (%d not)", r.Unwatched)
		}
		reason := r.Reason
		if reason == "" && r.State == ipc.RootFailed {
			reason = r.LastError
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", quoteName(r.Path), r.State, watched, r.FilesSeen, dash(r.Source), reason)
	}
	tw.Flush()
}

// dash stands in for an empty table cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
