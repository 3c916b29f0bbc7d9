// Command sifd is the sif daemon: it keeps an index of the files under its
// roots and answers similarity queries on a Unix socket.
//
// main turns SIGINT and SIGTERM into the cancellation of one root context
// and decides the exit status; the daemon itself is daemon.Run. In the
// foreground, `sifd run` runs the daemon in a child process and starts it
// again if it dies (supervise_unix.go). What ties
// sifd to a service manager is here too: install and control through
// kardianos/service (service.go), running under systemd or the Windows
// service manager (runservice.go), and systemd's notify protocol
// (notify.go).
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
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sif-dev/sif/cmd/internal/cliflags"
	"github.com/sif-dev/sif/cmd/internal/gendocs"
	"github.com/sif-dev/sif/daemon"
	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc/server"
	"github.com/sif-dev/sif/watcher"
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

func (e *statusError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func main() {
	// In the foreground, `sifd run` runs the daemon in a child process
	// and restarts it if it dies (supervise_unix.go).
	if code, ok := supervise(os.Args[1:]); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(exited(run(ctx, os.Args[1:], os.Stdout, os.Stderr)))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetFlagErrorFunc(cliflags.FlagError)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	err = cliflags.ArgsError(cmd, err)
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
	root.AddCommand(newRunCmd(stderr), newCheckCmd(stdout), newDumpCmd(stdout))
	root.AddCommand(newServiceCmds(stdout)...)
	root.AddCommand(gendocs.Command())
	return root
}

type runFlags struct {
	config    string
	roots     []string
	db        string
	socket    string
	workers   int
	maxSize   int64
	minSize   int64
	exclude   []string
	settle    time.Duration
	maxSettle time.Duration
	rescan    time.Duration
	networkFS string
	sockAcc   string
	operators string
	noWatch   bool
	eventBuf  uint
	dropEv    int
	minFree   int64
	progress  time.Duration
	sockCheck time.Duration
	logLevel  string
	logFormat string
	memLimit  string
	runAs     string
	params    fingerprint.Params
	simihash  bool
}

func newRunCmd(stderr io.Writer) *cobra.Command {
	var f runFlags
	var pprofAddr string
	cmd := &cobra.Command{
		Use:   "run [--config FILE] [--root DIR...]",
		Short: "Watch the roots and keep the index equal to them; serve queries until SIGINT or SIGTERM",
		Long: `run watches every directory under the roots, scans them into the index
with one worker per core (files whose size, modification time and inode are
unchanged since the last run are not read again; records of vanished files
are removed), logs its progress, and from then on applies every change as
it happens: a changed file is read once it has been quiet for the settle
delay (or at the latest after the max settle delay while it keeps changing);
a moved or renamed file is recognised by its device, inode, size and mtime
and not read again; deletions are applied promptly. Lost events (kernel
queue overflow) trigger a reconcile of the root, with back-off. Roots on
filesystems without change events (NFS, SMB, FUSE) are rescanned every
rescan interval, or refused with --network-fs refuse. It serves queries on
the socket until SIGINT or SIGTERM, then closes the index cleanly. SIGHUP
reloads the configuration file: roots, exclusions and size limits apply at
once; an invalid file leaves the running configuration in place. A socket
file that is removed or replaced by a stale socket is made again within
2 seconds (at once on SIGHUP), and logged.

Under systemd ($NOTIFY_SOCKET set, as for the Type=notify unit sifd install
writes), sifd speaks the notify protocol: READY=1 once its socket serves
queries (the first scan goes on: 'sifctl wait' waits for it), the first
scan's progress as the unit's status line, and STOPPING=1 when it stops.

Defaults: as root, the index is in ` + daemon.SystemDB + ` and the socket is
/run/sifd/sifd.sock; otherwise the index is in $XDG_STATE_HOME/sifd/index
(~/.local/state/sifd/index) and the socket is $XDG_RUNTIME_DIR/sifd.sock.
$SIF_SOCKET overrides the default socket.

The fingerprint scheme is stored in the index when it is created; later runs
use the stored one. Naming a different scheme for an existing index is an
error: move the index aside (or pass another --db) to rebuild it.

Configuration file: --config FILE reads a TOML file (every key is in the
operator's guide, /usr/share/doc/sif/packaging/README.md) that can
set the roots, exclusions, size limits, settle delays, workers, db, socket,
log level, memory limit and [scheme]. Without --config, ` + config.SystemFile + ` (as root)
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
			if cfg.Fleet, err = fleetConfig(fc.Fleet); err != nil {
				return &statusError{exitError, err}
			}
			if err := checkSchemeFlags(cmd.Flags(), cfg.Params.Scheme); err != nil {
				return &statusError{exitError, err}
			}
			log, lv, err := newLeveledLogger(stderr, level, f.logFormat)
			if err != nil {
				return &statusError{exitError, err}
			}
			cfg.LogLevel, cfg.LevelVar = level, lv
			if err := runAs(f.runAs, cfg, fc.Path, os.Args[1:], cmd.Flags().Changed, log); err != nil {
				return &statusError{exitError, err}
			}
			if fc.Path != "" {
				log.Info("configuration file", "path", fc.Path)
			}
			if err := applyMemoryLimit(cmd.Flags(), f.memLimit, fc, log); err != nil {
				return &statusError{exitError, err}
			}
			if pprofAddr != "" {
				if err := servePprof(cmd.Context(), pprofAddr, log); err != nil {
					return &statusError{exitError, err}
				}
			}
			cfg.Version = version
			cfg.Logger = log
			cfg.Notifier = systemdNotifier()
			fl := cmd.Flags()
			cfg.Reload = func() (daemon.Config, error) {
				fc, err := loadConfigFile(fl, f.config)
				if err != nil {
					return daemon.Config{}, err
				}
				c, level := f.apply(fl, fc)
				c.LogLevel = level
				if c.Fleet, err = fleetConfig(fc.Fleet); err != nil {
					return daemon.Config{}, err
				}
				return c, nil
			}
			err = runService(cmd.Context(), cfg)
			if errors.Is(err, daemon.ErrRestart) && cmd.Context().Err() == nil {
				// The index is stuck in this process (a write of its
				// log failed): start afresh in a new one, which finds
				// the run marker and reconciles every root.
				log.Error("restarting sifd in a new process", "err", err)
				err = fmt.Errorf("%w; restarting failed: %v", err, reexec())
			}
			if err != nil {
				return &statusError{exitError, err}
			}
			return nil
		},
	}
	addRunFlags(cmd.Flags(), &f)
	cmd.Flags().StringVar(&pprofAddr, "pprof", "", `debugging: serve Go's runtime profiles (CPU, heap, goroutines, block, mutex) at http://ADDR/debug/pprof/; ADDR must be on the loopback, e.g. 127.0.0.1:6060 (default: off)`)
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
	fl.Int64Var(&f.minSize, "min-size", 0, "skip files smaller than this many bytes")
	fl.StringArrayVar(&f.exclude, "exclude", nil, `glob of paths not to index, e.g. ".git/" (a directory), "*.swp" (repeatable; replaces the file's)`)
	fl.DurationVar(&f.settle, "settle-delay", 0, fmt.Sprintf("how long a changed file must be quiet before it is read (default %v)", watcher.DefaultSettleDelay))
	fl.DurationVar(&f.maxSettle, "max-settle-delay", 0, fmt.Sprintf("read a file that keeps changing at the latest this long after its first change (default %v)", watcher.DefaultMaxSettleDelay))
	fl.DurationVar(&f.rescan, "rescan-interval", 0, fmt.Sprintf("how often roots without change events and unwatched directories are rescanned (default %v)", daemon.DefaultRescanInterval))
	fl.StringVar(&f.sockAcc, "socket-access", "", `who may connect: "all" local users, each answered with only the files they may read (default for the system socket /run/sifd/sifd.sock), or "owner": the daemon's user and root (default otherwise)`)
	fl.StringVar(&f.runAs, runAsFlag, "", "started as root, become this user after making the index's and socket's directories, keeping only the right to read every file (CAP_DAC_READ_SEARCH), as the systemd unit does; Linux only (default: stay the user that started sifd)")
	fl.StringVar(&f.operators, "operator-group", "", "group (name or gid) whose members may add and remove roots and ask for rescans, besides root and the daemon's user")
	fl.StringVar(&f.networkFS, "network-fs", "", `roots on filesystems without change events (NFS, SMB, FUSE): "scan" them periodically (default) or "refuse" them`)
	fl.Int64Var(&f.minFree, "min-free-space", 0, fmt.Sprintf("bytes kept free on the index's filesystem: below it, index writes wait for room; -1 for none (default %d)", config.DefaultMinFreeSpace))
	fl.BoolVar(&f.noWatch, "no-watch", false, "do not watch for changes: scan at start and every rescan interval")
	fl.UintVar(&f.eventBuf, "event-buffer", 0, "events buffered between the kernel and the daemon (default: fsnotify's)")
	fl.IntVar(&f.dropEv, "debug-drop-events", 0, "drop every Nth change event and reconcile as if the kernel had lost it")
	fl.MarkHidden("event-buffer") // for tests that force event loss
	fl.MarkHidden("debug-drop-events")
	fl.DurationVar(&f.progress, "progress-interval", 0, fmt.Sprintf("how often the first scan's progress is logged and sent to systemd (default %v)", daemon.DefaultProgressEvery))
	fl.MarkHidden("progress-interval") // for tests that watch the progress
	fl.DurationVar(&f.sockCheck, "socket-check-interval", 0, fmt.Sprintf("how often the socket file is checked, and made again if it was removed or replaced (default %v)", server.DefaultCheckEvery))
	fl.MarkHidden("socket-check-interval") // for tests of SIGHUP's
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fl.StringVar(&f.memLimit, "memory-limit", "", fmt.Sprintf(`soft limit of the Go heap, e.g. "128MiB", or "unlimited": the collector works harder near it; the index's %d MiB cache comes on top (default %d MiB, or $GOMEMLIMIT)`, index.DefaultCacheSize>>20, config.DefaultMemoryLimit>>20))
	fl.BoolVar(&f.simihash, "simihash", index.DefaultSimiHash, "a new index keeps SimiHash keys, for 'sifctl similar --by simihash' (default: the stored setting, else "+fmt.Sprint(index.DefaultSimiHash)+")")
	cliflags.AddParams(fl, &f.params, `fingerprint scheme for a new index: "manber" or "chunks" (default: the stored one, else `+string(fingerprint.DefaultParams().Scheme)+`)`)
}

// checkSchemeFlags refuses a scheme parameter flag that does not apply to
// scheme, the scheme named by --scheme or the configuration file ("" when
// neither names one: the index's stored scheme decides).
func checkSchemeFlags(fl *pflag.FlagSet, scheme fingerprint.Scheme) error {
	how := ""
	if !fl.Changed("scheme") {
		how = "from the configuration file"
	}
	return cliflags.CheckParams(fl, scheme, how)
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	log, _, err := newLeveledLogger(w, level, format)
	return log, err
}

// newLeveledLogger returns a logger writing to w and its level, which a
// reload of the configuration may change while it runs.
func newLeveledLogger(w io.Writer, level, format string) (*slog.Logger, *slog.LevelVar, error) {
	lv := new(slog.LevelVar)
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), lv, nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), lv, nil
	default:
		return nil, nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

func newCheckCmd(stdout io.Writer) *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "check [--db DIR]",
		Short: "Verify the index's invariants; exit 1 if any is broken",
		Long: `check opens the index read-only and verifies that every posting belongs to a
live content whose forward list holds it with the same weight, every forward
entry has its posting, every content's totals match its forward list, every
content is held by a file and no two contents are equal, and every path,
record, copy, hash and inode key agrees with the others. It prints what is
wrong and exits 1, or prints a summary and exits 0. A damaged file of the
index (a table whose checksum does not match or that was cut short, a broken
MANIFEST) also makes it exit 1, naming the file and what was wrong; sifd run
moves such an index aside and rebuilds it. A directory that holds no index
is refused (exit 2, "--db DIR: not a sif index") and nothing is written to
it. The daemon must not be running on the same index.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ix, db, err := openReadOnly(db, "check")
			if index.IsDamaged(err) {
				return &statusError{exitProblems, fmt.Errorf("%s: index is damaged: %w", db, err)}
			}
			if err != nil {
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
			if rep.Damaged {
				return &statusError{exitProblems, fmt.Errorf("%s: index is damaged (sifd run moves a damaged index aside and rebuilds it)", db)}
			}
			if !rep.OK() {
				return &statusError{exitProblems, fmt.Errorf("%s: index is inconsistent (%d problems)", db, len(rep.Problems)+rep.More)}
			}
			simi := ""
			if ix.SimiHash() {
				simi = ", simihash keys"
			}
			fmt.Fprintf(stdout, "%s: ok: %d files, %d postings, %d fingerprints (%s%s)\n",
				db, rep.Files, rep.Postings, rep.Fingerprints, ix.Params(), simi)
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "", "index directory (default: the daemon's default)")
	return cmd
}

func newDumpCmd(stdout io.Writer) *cobra.Command {
	var db, prefix string
	cmd := &cobra.Command{
		Use:   "dump [--db DIR] [--prefix P]",
		Short: "Print one canonical line per indexed file, for comparing two indexes",
		Long: `dump opens the index read-only and prints one line per indexed file in the
directory tree --prefix (all files by default), sorted by path:

  "PATH" size=N mtime=NS dev=N ino=N mode=0OCTAL type=T strong=HEX weight=N features=N fwd=HEX

PATH is quoted as in Go, so bytes that are not UTF-8 show as \x escapes;
mtime is in Unix nanoseconds; strong is the SHA-256 of the content (all
zeros when unknown); weight and features are the file's total fingerprint
weight and number of distinct fingerprints; fwd is a 64-bit hash of the
file's fingerprints and their weights, equal for files that fingerprint
alike.

A line depends only on what the index knows of the file, not on its file
id nor on the order or history of the writes that put it there, so two
indexes of the same tree dump the same lines when they agree. To see
whether a long-running daemon's index has drifted from the disk, stop the
daemon, dump its index, build a fresh index of the same roots and diff the
dumps:

  sifd dump > live.txt
  sifd run --db /tmp/fresh --socket /tmp/fresh.sock --root TREE
      (stop it with Ctrl-C once it logs "ready")
  sifd dump --db /tmp/fresh > fresh.txt
  diff live.txt fresh.txt

The daemon must not be running on the index dumped: stop it first, or dump
a copy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ix, _, err := openReadOnly(db, "dump")
			if err != nil {
				return &statusError{exitError, err}
			}
			defer ix.Close()
			if err := ix.Dump(prefix, stdout); err != nil {
				return &statusError{exitError, err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "", "index directory (default: the daemon's default)")
	cmd.Flags().StringVar(&prefix, "prefix", "", "dump only the files in this directory tree (whole path components)")
	return cmd
}

// openReadOnly opens the index in db, or in the daemon's default index
// directory when db is empty, read-only, for the subcommand verb (check or
// dump). It returns the index and the directory it is in. It refuses a
// directory that is not an index without writing anything to it.
func openReadOnly(db, verb string) (*index.Index, string, error) {
	if db == "" {
		db = daemon.DefaultDB()
	}
	if _, err := os.Stat(db); err != nil {
		return nil, db, fmt.Errorf("--db %s: %w", db, err)
	}
	ix, err := index.Open(db, &index.Options{ReadOnly: true})
	if err != nil {
		switch {
		case errors.Is(err, index.ErrLocked):
			err = fmt.Errorf("%w (stop sifd first, or %s a copy)", err, verb)
		case errors.Is(err, index.ErrNotIndex):
			err = fmt.Errorf("--db %s: not a sif index: it holds no index database (nothing was written to it); name the daemon's index directory", db)
		}
		return nil, db, err
	}
	return ix, db, nil
}

// loadConfigFile reads the configuration file named by --config or, when
// --config is absent, the default one if it exists. It returns a zero
// config.File when there is no file to read.
func loadConfigFile(fl *pflag.FlagSet, name string) (config.File, error) {
	if !fl.Changed("config") {
		name = config.DefaultFile()
		if name == "" {
			return config.File{}, nil
		}
		if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
			return config.File{}, nil
		}
	}
	if name == "" {
		return config.File{}, nil
	}
	return config.Load(name)
}

// fleetConfig turns the file's [fleet] table into the daemon's, reading
// the database's URL (from SIF_FLEET_URL or the URL file) and the host
// name. Its errors never show the URL.
func fleetConfig(f *config.Fleet) (*daemon.FleetConfig, error) {
	if f == nil {
		return nil, nil
	}
	url, err := f.URL(nil)
	if err != nil {
		return nil, err
	}
	host, err := f.HostName(nil)
	if err != nil {
		return nil, err
	}
	return &daemon.FleetConfig{URL: url, Host: host, Publish: f.Publish, Silence: f.Silence, Timeout: f.Timeout, AskGroup: f.AskGroup}, nil
}

// apply returns the configuration to run with and the log level: the
// file's values, each replaced by its flag if that was given on the command
// line.
func (f *runFlags) apply(fl *pflag.FlagSet, fc config.File) (daemon.Config, string) {
	cfg := daemon.Config{
		Roots: fc.Roots, Exclude: fc.Exclude, MinFileSize: fc.MinFileSize, MaxFileSize: fc.MaxFileSize,
		SettleDelay: fc.SettleDelay, MaxSettleDelay: fc.MaxSettleDelay, RescanInterval: fc.RescanInterval,
		NetworkFS: fc.NetworkFS, Workers: fc.Workers, DB: fc.DB, Socket: fc.Socket,
		SocketAccess: fc.SocketAccess, OperatorGroup: fc.OperatorGroup, MinFreeSpace: fc.MinFreeSpace,
		Params: fc.Params, SimiHash: fc.SimiHash,
	}
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
	set("min-size", func() { cfg.MinFileSize = f.minSize })
	set("exclude", func() { cfg.Exclude = f.exclude })
	set("settle-delay", func() { cfg.SettleDelay = f.settle })
	set("max-settle-delay", func() { cfg.MaxSettleDelay = f.maxSettle })
	set("rescan-interval", func() { cfg.RescanInterval = f.rescan })
	set("network-fs", func() { cfg.NetworkFS = f.networkFS })
	set("socket-access", func() { cfg.SocketAccess = f.sockAcc })
	set("operator-group", func() { cfg.OperatorGroup = f.operators })
	set("no-watch", func() { cfg.NoWatch = f.noWatch })
	set("min-free-space", func() { cfg.MinFreeSpace = f.minFree })
	set("event-buffer", func() { cfg.EventBuffer = f.eventBuf })
	set("debug-drop-events", func() { cfg.DropEvents = f.dropEv })
	set("progress-interval", func() { cfg.ProgressEvery = f.progress })
	set("socket-check-interval", func() { cfg.SocketCheckEvery = f.sockCheck })
	set("scheme", func() { cfg.Params.Scheme = f.params.Scheme })
	set("window", func() { cfg.Params.Window = f.params.Window })
	set("bits", func() { cfg.Params.Bits = f.params.Bits })
	set("mod-bits", func() { cfg.Params.ModBits = f.params.ModBits })
	set("min-chunk", func() { cfg.Params.MinChunk = f.params.MinChunk })
	set("avg-chunk", func() { cfg.Params.AvgChunk = f.params.AvgChunk })
	set("max-chunk", func() { cfg.Params.MaxChunk = f.params.MaxChunk })
	set("simihash", func() { cfg.SimiHash = &f.simihash })
	level := fc.LogLevel
	if level == "" || fl.Changed("log-level") {
		level = f.logLevel
	}
	return cfg, level
}
