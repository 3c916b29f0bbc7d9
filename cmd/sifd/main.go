// Command sifd is the sif daemon: it keeps an index of the files under its
// roots and answers similarity queries on a Unix socket.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sif-dev/sif/cmd/internal/cliflags"
	"github.com/sif-dev/sif/daemon"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit statuses.
const (
	exitOK       = 0
	exitProblems = 1 // check found problems
	exitError    = 2
)

// exitError carries an exit status through cobra.
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var se *statusError
	if errors.As(err, &se) {
		if se.err != nil {
			fmt.Fprintf(stderr, "sifd: %v\n", se.err)
		}
		return se.code
	}
	fmt.Fprintf(stderr, "sifd: %v\n", err)
	return exitError
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "sifd",
		Short: "sifd keeps an index of similar files and answers queries about them",
		Long: `sifd indexes the files under one or more directory trees (roots) by their
approximate fingerprints and answers, over a Unix socket, which indexed files
are similar to a given one, which groups of files are similar, and which are
identical. Use sifctl to ask it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(stderr), newCheckCmd(stdout))
	root.AddCommand(newServiceCmds(stdout)...)
	return root
}

type runFlags struct {
	config    string
	roots     []string
	db        string
	socket    string
	workers   int
	maxSize   int64
	logLevel  string
	logFormat string
	params    fingerprint.Params
}

func newRunCmd(stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [--config FILE] [--root DIR...]",
		Short: "Scan the roots into the index, then serve queries until SIGINT or SIGTERM",
		Long: `run scans every root into the index with one worker per core (files whose
size, modification time and inode are unchanged since the last run are not
read again; records of vanished files are removed), logs its progress, and
serves queries on the socket until it receives SIGINT or SIGTERM, then closes
the index cleanly.

Defaults: as root, the index is in ` + daemon.SystemDB + ` and the socket is
/run/sifd/sifd.sock; otherwise the index is in $XDG_STATE_HOME/sifd/index
(~/.local/state/sifd/index) and the socket is $XDG_RUNTIME_DIR/sifd.sock.
$SIF_SOCKET overrides the default socket.

The fingerprint scheme is stored in the index when it is created; later runs
use the stored one. Naming a different scheme for an existing index is an
error: move the index aside (or pass another --db) to rebuild it.

Configuration file: --config FILE reads a TOML file (see README.md) that can
set the roots, exclusions, size limits, settle delays, workers, db, socket,
log level and [scheme]. Without --config, ` + daemon.SystemConfigFile + ` (as root)
or $XDG_CONFIG_HOME/sifd/config.toml (~/.config/sifd/config.toml) is read if
it exists; --config "" reads none. Relative paths in the file are relative
to the file's directory. Flags given on the command line override the file;
--root flags replace the file's roots.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fc, err := loadConfigFile(cmd.Flags(), f.config)
			if err != nil {
				return &statusError{exitError, err}
			}
			cfg, level := f.apply(cmd.Flags(), fc)
			log, err := newLogger(stderr, level, f.logFormat)
			if err != nil {
				return &statusError{exitError, err}
			}
			if fc.Path != "" {
				log.Info("configuration file", "path", fc.Path)
			}
			cfg.Version = version
			cfg.Logger = log
			if err := daemon.RunService(cmd.Context(), cfg); err != nil {
				return &statusError{exitError, err}
			}
			return nil
		},
	}
	addRunFlags(cmd.Flags(), &f)
	return cmd
}

// addRunFlags adds run's flags to fl; install takes the same ones.
func addRunFlags(fl *pflag.FlagSet, f *runFlags) {
	fl.StringVar(&f.config, "config", "", "TOML configuration file (default: see above)")
	fl.StringArrayVar(&f.roots, "root", nil, "directory tree to index (repeatable; replaces the file's roots)")
	fl.StringVar(&f.db, "db", "", "index directory (default: see above)")
	fl.StringVar(&f.socket, "socket", "", "Unix socket to serve on (default: see above)")
	fl.IntVar(&f.workers, "workers", 0, "files read in parallel (default: one per core)")
	fl.Int64Var(&f.maxSize, "max-size", 0, fmt.Sprintf("skip files larger than this many bytes; -1 for no limit (default %d)", daemon.DefaultMaxFileSize))
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&f.logFormat, "log-format", "text", "text or json")
	cliflags.AddParams(fl, &f.params, `fingerprint scheme for a new index: "manber" or "chunks" (default: the stored one, else `+string(fingerprint.DefaultParams().Scheme)+`)`)
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

func newCheckCmd(stdout io.Writer) *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "check [--db DIR]",
		Short: "Verify the index's invariants; exit 1 if any is broken",
		Long: `check opens the index read-only and verifies that every posting belongs to a
live file whose forward list holds it with the same weight, every forward
entry has its posting, every record's weight and feature count match its
forward list, and every path, record and identical-content key agrees with
the others. It prints what is wrong and
exits 1, or prints a summary and exits 0. The daemon must not be running on
the same index.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if db == "" {
				db = daemon.DefaultDB()
			}
			if _, err := os.Stat(db); err != nil {
				return &statusError{exitError, fmt.Errorf("--db %s: %w", db, err)}
			}
			ix, err := index.Open(db, &index.Options{ReadOnly: true})
			if err != nil {
				if errors.Is(err, index.ErrLocked) {
					err = fmt.Errorf("%w (stop sifd first, or check a copy)", err)
				}
				return &statusError{exitError, err}
			}
			defer ix.Close()
			rep, err := ix.Check()
			if err != nil {
				return &statusError{exitError, err}
			}
			for _, p := range rep.Problems {
				fmt.Fprintln(stdout, p)
			}
			if rep.More > 0 {
				fmt.Fprintf(stdout, "... and %d more problems\n", rep.More)
			}
			if !rep.OK() {
				return &statusError{exitProblems, fmt.Errorf("%s: index is inconsistent (%d problems)", db, len(rep.Problems)+rep.More)}
			}
			fmt.Fprintf(stdout, "%s: ok: %d files, %d postings, %d fingerprints (%s)\n",
				db, rep.Files, rep.Postings, rep.Fingerprints, ix.Params())
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "", "index directory (default: the daemon's default)")
	return cmd
}

// loadConfigFile reads the configuration file named by --config or, when
// --config is absent, the default one if it exists. It returns a zero
// FileConfig when there is no file to read.
func loadConfigFile(fl *pflag.FlagSet, name string) (daemon.FileConfig, error) {
	if !fl.Changed("config") {
		name = daemon.DefaultConfigFile()
		if name == "" {
			return daemon.FileConfig{}, nil
		}
		if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
			return daemon.FileConfig{}, nil
		}
	}
	if name == "" {
		return daemon.FileConfig{}, nil
	}
	return daemon.LoadConfigFile(name)
}

// apply returns the configuration to run with and the log level: the
// file's values, each replaced by its flag if that was given on the command
// line.
func (f *runFlags) apply(fl *pflag.FlagSet, fc daemon.FileConfig) (daemon.Config, string) {
	cfg := fc.Config
	set := func(name string, apply func()) {
		if fl.Changed(name) {
			apply()
		}
	}
	set("root", func() { cfg.Roots = f.roots })
	set("db", func() { cfg.DB = f.db })
	set("socket", func() { cfg.Socket = f.socket })
	set("workers", func() { cfg.Workers = f.workers })
	set("max-size", func() { cfg.MaxFileSize = f.maxSize })
	set("scheme", func() { cfg.Params.Scheme = f.params.Scheme })
	set("window", func() { cfg.Params.Window = f.params.Window })
	set("bits", func() { cfg.Params.Bits = f.params.Bits })
	set("mod-bits", func() { cfg.Params.ModBits = f.params.ModBits })
	set("min-chunk", func() { cfg.Params.MinChunk = f.params.MinChunk })
	set("avg-chunk", func() { cfg.Params.AvgChunk = f.params.AvgChunk })
	set("max-chunk", func() { cfg.Params.MaxChunk = f.params.MaxChunk })
	level := fc.LogLevel
	if level == "" || fl.Changed("log-level") {
		level = f.logLevel
	}
	return cfg, level
}
