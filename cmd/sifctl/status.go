package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status [--json]",
		Short: "Show what sifd is doing: roots, scan progress, queue, counts, last errors",
		Long: `status shows what sifd is doing: its index, each root's state (scanning,
watching, polling, degraded, failed or missing, with the reason for the
last four), whether index writes are on hold (degraded, e.g. for want of
space) or the index was rebuilt, the removed roots whose files are still
being deleted from the index (not counted in its totals), files that keep
changing,
what is left out for lack of permission (the first ten paths),
the progress of a scan in progress (files and bytes done of those found so
far, rate and, once every file has been found, the time left), the
directories watched, the work queued, and what the daemon did since it
started. With --json, the daemon's report as it is.`,
		Args: cobra.NoArgs,
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
	if st.Reason != "" {
		fmt.Fprintf(w, "  %s: %s\n", st.State, st.Reason)
	}
	if rb := st.IndexRebuilt; rb != nil {
		fmt.Fprintf(w, "  index rebuilt at %s: %s", rb.At.Local().Format(time.DateTime), rb.Reason)
		if rb.MovedTo != "" {
			fmt.Fprintf(w, "; the old one is in %s (delete it once the scan is done)", rb.MovedTo)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  index:   %s\n  socket:  %s\n  scheme:  %s\n", st.DB, st.Socket, st.Params)
	ix := st.Index
	fmt.Fprintf(w, "  indexed: %d files, %s; %d distinct contents, %d postings; %s on disk",
		ix.Files, human(ix.Bytes), ix.Contents, ix.Postings, human(ix.DiskBytes))
	if ix.Compacting {
		fmt.Fprint(w, " (compacting)")
	}
	fmt.Fprintln(w)
	if st.UncleanStart {
		fmt.Fprintln(w, "  note:    previous run did not shut down cleanly; first scan re-read recent changes")
	}
	for _, r := range st.Roots {
		printRootStatus(w, &r)
	}
	for _, r := range st.RemovedRoots {
		fmt.Fprintf(w, "  root %s: not in effect: configured, but removed with sifctl roots remove (sifctl roots add puts it back)\n", quoteName(r.Exact()))
	}
	for _, f := range st.Forgetting {
		fmt.Fprintf(w, "  root %s: removed; forgetting its %d files (%s), counted out of the index above and answered no more\n",
			f.Dir.Exact(), f.Files, human(f.Bytes))
	}
	if f := st.Fleet; f != nil {
		printFleetStatus(w, f)
	}
	q := st.Queue
	fmt.Fprintf(w, "  queue: %d settling, %d live, %d from scans, %d directory scans; %d workers busy\n",
		q.Settling, q.Live, q.Scan, q.Scans, q.Busy)
	c := st.Counters
	fmt.Fprintf(w, "  since start: %d indexed, %d unchanged, %d renamed, %d removed, %d excluded\n",
		c.Indexed, c.Unchanged, c.Renamed, c.Removed, c.Excluded)
	fmt.Fprintf(w, "  skipped: %d unreadable, %d special, %d symlinks, %d vanished, %d changing, %d too large, %d too small; %d index errors\n",
		c.Unreadable, c.Special, c.Symlinks, c.Vanished, c.ChangedDuringRead, c.TooLarge, c.TooSmall, c.Errors)
	fmt.Fprintf(w, "  events: %d received, %d overflows (each forces a reconcile)\n", c.Events, c.Overflows)
	for _, p := range st.StillChanging {
		fmt.Fprintf(w, "  still changing: %s (read at most once per max settle delay)\n", quoteName(p))
	}
	if len(st.LastError) > 0 {
		fmt.Fprintln(w, "  last errors:")
		for _, e := range st.LastError {
			fmt.Fprintf(w, "    %s\n", e)
		}
	}
}

// printFleetStatus writes the daemon's link to the fleet index.
func printFleetStatus(w io.Writer, f *ipc.FleetStatus) {
	link := "connected"
	if !f.Connected {
		link = "not connected"
	}
	fmt.Fprintf(w, "  fleet: host %s, %s", f.Host, link)
	if len(f.Publishing) == 0 {
		fmt.Fprint(w, "; publishes nothing (asks only)")
	} else {
		fmt.Fprintf(w, "; publishes %s", strings.Join(f.Publishing, ", "))
	}
	fmt.Fprintln(w)
	if len(f.Publishing) > 0 {
		more := ""
		if f.PendingMore {
			more = "+"
		}
		fmt.Fprintf(w, "    %d%s changes not yet published", f.Pending, more)
		if f.Pending > 0 {
			fmt.Fprintf(w, " (oldest waiting %s)", (time.Duration(f.LagSecs * float64(time.Second))).Round(time.Second))
		}
		fmt.Fprintf(w, "; %d files published since start", f.Published)
		if f.Resyncing {
			fmt.Fprint(w, "; comparing this host's fleet rows with the index")
		}
		fmt.Fprintln(w)
	}
	if f.LastError != "" {
		fmt.Fprintf(w, "    last error (%s): %s\n", f.ErrorAt.Local().Format(time.DateTime), f.LastError)
	}
}

// printRootStatus writes one root of a status: its state and why, the scan
// in progress or the last one, and what is watched.
func printRootStatus(w io.Writer, r *ipc.RootStatus) {
	fmt.Fprintf(w, "  root %s: %s", quoteName(r.Path), r.State)
	if r.Reason != "" {
		fmt.Fprintf(w, " (%s)", r.Reason)
	}
	fmt.Fprintln(w)
	if r.State == ipc.RootScanning {
		fmt.Fprintf(w, "    scan: %d/%d files, %s/%s", r.FilesDone, r.FilesSeen, human(r.BytesDone), human(r.BytesSeen))
		if r.BytesPerSec > 0 {
			fmt.Fprintf(w, ", %.1f MB/s", r.BytesPerSec/1e6)
		}
		if r.ETASecs != nil {
			fmt.Fprintf(w, ", ETA %s", (time.Duration(*r.ETASecs * float64(time.Second))).Round(time.Second))
		}
		if !r.WalkDone {
			fmt.Fprint(w, ", still finding files")
		}
		fmt.Fprintf(w, "; %d read (%s) in %.1fs\n", r.FilesRead, human(r.BytesRead), r.ScanSecs)
	} else if r.Scans > 0 || r.FilesSeen > 0 {
		fmt.Fprintf(w, "    last scan: %d files seen (%s), %d read (%s) in %.1fs",
			r.FilesSeen, human(r.BytesSeen), r.FilesRead, human(r.BytesRead), r.ScanSecs)
		if r.ScanFinish != "" {
			fmt.Fprintf(w, ", finished %s", r.ScanFinish)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "    watched dirs: %d", r.Watched)
	if r.Unwatched > 0 {
		fmt.Fprintf(w, ", %d %s could not be watched", r.Unwatched, plural(r.Unwatched, "subtree", "subtrees"))
	}
	if r.FS != "" {
		fmt.Fprintf(w, "; filesystem %s", r.FS)
	}
	if r.Source != "" {
		fmt.Fprintf(w, "; from %s", sourceText(r.Source))
	}
	fmt.Fprintln(w)
	if dn := r.Denied; dn != nil {
		more := ""
		if dn.More {
			more = " or more"
		}
		fmt.Fprintf(w, "    permission denied: %d%s %s left out, retried when their permissions change:\n",
			dn.Count, more, plural(dn.Count, "path", "paths"))
		for _, p := range dn.Paths {
			fmt.Fprintf(w, "      %s\n", quoteName(p))
		}
		if dn.Count > len(dn.Paths) {
			fmt.Fprintf(w, "      ... and %d more\n", dn.Count-len(dn.Paths))
		}
	}
	if r.LastError != "" {
		fmt.Fprintf(w, "    error: %s\n", r.LastError)
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

// sourceText says where a root comes from.
func sourceText(source string) string {
	switch source {
	case "config":
		return "the configuration (file or --root)"
	case "added":
		return "sifctl roots add"
	}
	return source
}
