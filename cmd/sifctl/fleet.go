package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

func newFleetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Check and tend this host's part of the fleet index",
		Long: `A fleet index is one database, shared by many hosts' sifd, that holds the
files each publishes (the [fleet] table of sifd's configuration: which roots,
which database, this host's name). sifd publishes in the background and keeps
the database equal to its own index; 'sifctl status' shows the link: connected
or not, the last error, the changes not yet published and how long the oldest
has waited.

These commands are for root, sifd's user and the operator group. sifd runs
them: sifctl never holds the database's credentials.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newFleetHostsCmd(g), newFleetCheckCmd(g), newFleetForgetCmd(g))
	return cmd
}

func newFleetCheckCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Compare this host's rows in the fleet index with its own index",
		Long: `check asks sifd to compare this host's rows in the fleet index with its own
index: every published file (path, size, modification time, content), and
every content those rows name (its signature, a posting per fingerprint). It
reads the whole index and every row of the host: a few seconds per 100,000
files.

It prints the counts and the first differences. Changes not yet published show
as differences until sifd catches up; the output says how many there were.
Exit status: 0 when the rows equal the index, 1 when they differ, 2 on an
error (no fleet, or the database unavailable).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := g.client().FleetCheck(cmd.Context())
			if err != nil {
				return failed(err)
			}
			if g.json {
				if err := g.printJSON(rep); err != nil {
					return err
				}
			} else {
				printFleetCheck(g, rep)
			}
			if !rep.OK {
				return nothing()
			}
			return nil
		},
	}
}

func printFleetCheck(g *globals, r *ipc.FleetCheck) {
	w := g.stdout
	verdict := "the fleet's rows equal the index"
	if !r.OK {
		verdict = "the fleet's rows differ from the index"
	}
	fmt.Fprintf(w, "host %s: %s\n", r.Host, verdict)
	fmt.Fprintf(w, "  %d published %s in the index, %d %s in the fleet\n",
		r.Files, plural(r.Files, "file", "files"), r.Rows, plural(r.Rows, "row", "rows"))
	if r.Missing > 0 {
		fmt.Fprintf(w, "  %d %s missing or out of date in the fleet:\n", r.Missing, plural(r.Missing, "file", "files"))
		for _, p := range r.MissingPaths {
			fmt.Fprintf(w, "    %s\n", quoteName(p))
		}
	}
	if r.Extra > 0 {
		fmt.Fprintf(w, "  %d %s in the fleet for files the index does not publish (file ids %v)\n",
			r.Extra, plural(r.Extra, "row", "rows"), r.ExtraIDs)
	}
	if r.BadContents > 0 {
		fmt.Fprintf(w, "  %d %s without their whole signature in the fleet\n", r.BadContents, plural(r.BadContents, "content", "contents"))
	}
	if r.Pending > 0 {
		fmt.Fprintf(w, "  %d %s not yet published when the check ran\n", r.Pending, plural(r.Pending, "change was", "changes were"))
	}
}

func newFleetForgetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "forget HOST",
		Short: "Remove a host that is gone for good from the fleet index",
		Long: `forget removes HOST from the fleet index: its files, and the contents no
other host holds. Use it for a host that is gone for good; a host that is
only silent is already left out of answers once its silence passes the
fleet's 'silence' setting, and one that still runs publishes itself again
on its next change.

Exit status: 0 when the host was removed, 2 on an error (no such host, no
fleet, or the database unavailable).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("name one host to forget (sifctl fleet forget HOST); got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := g.client().FleetForget(cmd.Context(), args[0])
			if err != nil {
				return failed(err)
			}
			if g.json {
				return g.printJSON(resp)
			}
			fmt.Fprintf(g.stdout, "forgot host %s: %d %s and %d %s no other host holds\n", resp.Host,
				resp.Files, plural(int(resp.Files), "file", "files"), resp.Contents, plural(int(resp.Contents), "content", "contents"))
			return nil
		},
	}
}

func newFleetHostsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "hosts",
		Short: "List the hosts of the fleet and the roots each publishes",
		Long: `hosts lists the hosts of the fleet heard from within the fleet's 'silence'
setting (the others are left out of answers until they publish again), by
name: when each was last heard from, its sif version, and the roots it
publishes. This host is marked with '*'.

Exit status: 0, 2 on an error (no fleet, or the database unavailable: with
--json the answer is still printed, with its fleet_error).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			resp, err := g.client().FleetHosts(cmd.Context())
			if err != nil {
				return failed(err)
			}
			if g.json {
				if err := g.printJSON(resp); err != nil {
					return err
				}
			} else {
				printFleetHosts(g, resp, time.Now())
			}
			if e := resp.FleetError; e != nil {
				return failedf("%s", e.Message)
			}
			return nil
		},
	}
}

func printFleetHosts(g *globals, r *ipc.FleetHostsResponse, now time.Time) {
	w := g.stdout
	if r.FleetError != nil {
		return
	}
	fmt.Fprintf(w, "%d %s in the fleet:\n", len(r.Hosts), plural(len(r.Hosts), "host", "hosts"))
	for _, h := range r.Hosts {
		mark := " "
		if h.Host == r.Host {
			mark = "*"
		}
		version := h.Version
		if version == "" {
			version = "unknown version"
		}
		fmt.Fprintf(w, "%s %s  last heard from %s ago, %s\n", mark, h.Host, now.Sub(h.LastSeen).Round(time.Second), version)
		for _, root := range h.Roots {
			fmt.Fprintf(w, "    %s\n", quoteName(root.Exact()))
		}
	}
}
