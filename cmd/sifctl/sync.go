package main

import (
	"context"
	"errors"
	"fmt"
	"time"

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
		fmt.Fprintf(g.stdout, "  %s\n", d.Exact())
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// waitGrace is how much longer than its --timeout wait gives the daemon to
// answer before giving up on it.
const waitGrace = 30 * time.Second

func newWaitCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait [--timeout D]",
		Short: "Wait until sifd has applied every change made before the call",
		Long: `wait returns once sifd has applied to its index every change made under its
roots before wait was called: a file written, moved or deleted before
'sifctl wait' is found (or no longer found) by the queries made after it. It
is meant for scripts, sync tools and tests that change files and then query
the index, instead of sleeping and hoping.

It works with cookie files: in each root the daemon creates a hidden file
named .sifd-cookie-*, deletes it at once, and waits for the change events of
that file. Events arrive in order, so by then the daemon has seen every
earlier change, and it answers once those are applied. Roots that have no
change events (polling) or that the daemon cannot write to are rescanned
instead; wait lists them.

Exit status: 0 once the daemon has caught up; 1 when --timeout ran out first
(the daemon keeps working: 'sifctl status' shows its queue); 2 on error.
With --json, the daemon's answer is printed:
  {"cookies": N, "rescanned": [{"path": ROOT}, ...], "elapsed_ns": N}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 || timeout > ipc.MaxWait {
				return failedf("--timeout %s: want a duration above 0, at most %s", timeout, ipc.MaxWait)
			}
			// The daemon ends the wait at timeout. The client sets no
			// deadline of its own, so give up only if the daemon does not
			// answer well after that.
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout+waitGrace)
			defer cancel()
			resp, err := g.client().Wait(ctx, timeout)
			if err != nil {
				return waitFailed(cmd.Context(), err, timeout)
			}
			if g.json {
				return g.printJSON(resp)
			}
			printWait(g, resp)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", ipc.DefaultWait, "give up after this long (at most 1h)")
	return cmd
}

// waitFailed maps a failed wait to its exit status: 1 when it timed out,
// 2 otherwise. parent is the command's context, to tell our own backstop
// from an interrupt.
func waitFailed(parent context.Context, err error, timeout time.Duration) error {
	var e *ipc.Error
	switch {
	case errors.As(err, &e) && e.Code == ipc.CodeTimeout:
		return &statusError{code: exitNothing, err: fmt.Errorf(
			"wait: timed out after %s: the daemon has not applied every change yet ('sifctl status' shows its queue)", timeout)}
	case errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil:
		return &statusError{code: exitNothing, err: fmt.Errorf(
			"wait: timed out: the daemon did not answer within %s", timeout+waitGrace)}
	}
	return failed(err)
}

func printWait(g *globals, r *ipc.WaitResponse) {
	elapsed := time.Duration(r.ElapsedNs)
	switch {
	case elapsed >= time.Second:
		elapsed = elapsed.Round(10 * time.Millisecond)
	case elapsed >= time.Millisecond:
		elapsed = elapsed.Round(time.Millisecond)
	default:
		elapsed = elapsed.Round(time.Microsecond)
	}
	fmt.Fprintf(g.stdout, "up to date after %s: %d %s synchronised by cookie file",
		elapsed, r.Cookies, plural(r.Cookies, "root", "roots"))
	if len(r.Rescanned) > 0 {
		fmt.Fprintf(g.stdout, ", %d rescanned", len(r.Rescanned))
	}
	fmt.Fprintln(g.stdout)
	for _, p := range r.Rescanned {
		fmt.Fprintf(g.stdout, "  rescanned %s\n", p.Exact())
	}
}
