package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status [--json]",
		Short: "Show what sifd is doing: roots, scan progress, counts, last errors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := g.client().Status(cmd.Context())
			if err != nil {
				return failed(err)
			}
			if g.json {
				return g.printJSON(st)
			}
			printStatus(g, st)
			return nil
		},
	}
}

func printStatus(g *globals, st *ipc.Status) {
	w := g.stdout
	fmt.Fprintf(w, "sifd %s (pid %d), %s, up %s\n", st.Version, st.PID, st.State, time.Since(st.Started).Round(time.Second))
	fmt.Fprintf(w, "  index:   %s\n  socket:  %s\n  scheme:  %s\n", st.DB, st.Socket, st.Params)
	ix := st.Index
	fmt.Fprintf(w, "  indexed: %d files, %s; %d postings; %s on disk\n",
		ix.Files, human(ix.Bytes), ix.Postings, human(ix.DiskBytes))
	for _, r := range st.Roots {
		fmt.Fprintf(w, "  root %s: %s, %d files seen (%s), %d read (%s) in %.1fs\n",
			r.Path, r.State, r.FilesSeen, human(r.BytesSeen), r.FilesRead, human(r.BytesRead), r.ScanSecs)
		if r.LastError != "" {
			fmt.Fprintf(w, "    error: %s\n", r.LastError)
		}
	}
	c := st.Counters
	fmt.Fprintf(w, "  since start: %d indexed, %d unchanged, %d removed\n", c.Indexed, c.Unchanged, c.Removed)
	fmt.Fprintf(w, "  skipped: %d unreadable, %d special, %d symlinks, %d vanished, %d changing, %d too large; %d index errors\n",
		c.Unreadable, c.Special, c.Symlinks, c.Vanished, c.ChangedDuringRead, c.TooLarge, c.Errors)
	if len(st.LastError) > 0 {
		fmt.Fprintln(w, "  last errors:")
		for _, e := range st.LastError {
			fmt.Fprintf(w, "    %s\n", e)
		}
	}
}

func human(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
