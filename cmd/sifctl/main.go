// Command sifctl asks a running sifd which files are similar, grouped, or
// identical, and compares two files directly. It also manages the daemon's
// roots and synchronises scripts with it (rescan, wait), and prints the
// signatures (a file's fingerprints, what a query sends) that similar and
// basis --signature ask with later or on another machine (sketch).
//
// sifctl holds the flags and the printing, one file per command
// (similar.go, groups.go, ...); the client is package ipc, and directory
// similarity (similar DIR, groups --dirs) is package ipc/dirsim.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/cmd/internal/cliflags"
	"github.com/sif-dev/sif/cmd/internal/gendocs"
	"github.com/sif-dev/sif/ipc"
)

var version = "dev"

// Exit statuses, as grep's; a command a signal ended exits with 128 plus
// the signal's number (interrupted.status).
const (
	exitFound   = 0 // something was found
	exitNothing = 1 // nothing was found
	exitError   = 2 // an error occurred
)

// statusError carries an exit status through cobra. A nil err means the
// status is not an error (exitNothing).
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string {
	if e.err == nil {
		return "nothing found"
	}
	return e.err.Error()
}

func nothing() error                   { return &statusError{code: exitNothing} }
func failed(err error) error           { return &statusError{code: exitError, err: err} }
func failedf(f string, a ...any) error { return failed(fmt.Errorf(f, a...)) }

func main() {
	exit(run(withSignals(context.Background()), os.Args[1:], os.Stdout, os.Stderr))
}

// globals are the flags every command shares.
type globals struct {
	socket string
	json   bool
	color  string // --color: auto, always or never
	null   bool   // -0/--null, of the commands that take it (nullFlag)

	progressTo   io.Writer // tests: show progress lines here as if on a terminal
	beforeOutput func()    // erases a progress line before the first line of the answer
	stdin        io.Reader
	stdout       io.Writer
	stderr       io.Writer
}

func (g *globals) client() *ipc.Client { return ipc.NewClient(g.socket) }

// outputStarts erases the progress line, if any, before the answer's
// first line is printed.
func (g *globals) outputStarts() {
	if g.beforeOutput != nil {
		g.beforeOutput()
	}
}

// printJSON writes v to stdout as one line of JSON.
func (g *globals) printJSON(v any) error {
	b, err := ipc.MarshalJSONLine(v)
	if err != nil {
		return failed(err)
	}
	if _, err := g.stdout.Write(b); err != nil {
		return failed(err)
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWithStdin(ctx, args, os.Stdin, stdout, stderr)
}

// runWithStdin is run with the standard input stdin.
func runWithStdin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "sifctl",
		Short: "Ask sifd which files are similar",
		Long: `sifctl asks a running sifd (over its Unix socket) which indexed files are
similar to given files, which groups of files are similar, and which files are
identical. sifctl compare works without a daemon. It also lists and changes
the daemon's roots (roots), asks for a reconcile with the disk (rescan),
waits until the index has caught up with the disk (wait), prints a
file's signature, its fingerprints, to ask with later or on another machine
(sketch; similar and basis --signature), and writes what the copies and
near-copies cost as one HTML page (report).

The socket is --socket, else $SIF_SOCKET, else sifd's default:
/run/sifd/sifd.sock as root; otherwise $XDG_RUNTIME_DIR/sifd.sock, or
without a runtime directory $XDG_STATE_HOME/sifd/sifd.sock (else
~/.local/state/sifd/sifd.sock), and if no sifd of your own listens there,
the system one.

In text output, a file name a shell would not take as one word is quoted
as ls quotes it on a terminal: 'a b', "don't", 'a'$'\n''b' (a newline),
'a'$'\303' (a byte that is not UTF-8), so that each line stays one line
and a name can be pasted into a shell. --json keeps the names as they are
("path", and "path_raw" for one that is not UTF-8), and so does -0
(--null) of similar, groups and dupes, which ends each record with a NUL
byte for xargs -0.

Exit status, as grep's: 0 when something was found, 1 when nothing was,
2 on error. For wait, 1 means it timed out. SIGINT or SIGTERM stops any
command within a second, with status 130 or 143 (128 plus the signal's
number, as a shell reports it).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// The socket's default depends on the environment and on which
	// sockets exist, so the flag's own default is empty (cobra prints no
	// second default) and the usage states the rule, the same in the
	// manual pages made from it.
	root.PersistentFlags().StringVar(&g.socket, "socket", "",
		"sifd's Unix socket (default: $SIF_SOCKET, else your own sifd's, else the system one, "+ipc.SystemSocket+")")
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print JSON (one object per line) instead of text")
	root.PersistentFlags().StringVar(&g.color, "color", "auto", "highlight text output: auto (on a terminal, unless NO_COLOR is set or TERM is dumb), always or never")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if g.socket == "" {
			g.socket = ipc.ClientSocket()
		}
		switch g.color {
		case "auto", "always", "never":
		default:
			return &statusError{exitError, fmt.Errorf("--color %q: want auto, always or never", g.color)}
		}
		if g.null && g.json {
			return &statusError{exitError, fmt.Errorf("--null and --json are two forms of output: give one of them (see '%s --help')", cmd.CommandPath())}
		}
		return nil
	}
	root.AddCommand(newSimilarCmd(g), newGroupsCmd(g), newDupesCmd(g), newDedupeCmd(g), newReportCmd(g), newStatusCmd(g), newCompareCmd(g),
		newRootsCmd(g), newRescanCmd(g), newWaitCmd(g), newBasisCmd(g), newSketchCmd(g), newFleetCmd(g))
	root.AddCommand(gendocs.Command())
	root.SetFlagErrorFunc(cliflags.FlagError)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	err = cliflags.ArgsError(cmd, err)
	if ie := interruptOf(ctx); ie != nil {
		// Whatever the command made of its cancelled context, the signal
		// is the reason it ended.
		fmt.Fprintf(stderr, "sifctl: %v\n", ie)
		return ie.status()
	}
	if err == nil {
		return exitFound
	}
	var se *statusError
	if errors.As(err, &se) {
		if se.err != nil {
			fmt.Fprintf(stderr, "sifctl: %v\n", describe(se.err, g.socket))
		}
		return se.code
	}
	fmt.Fprintf(stderr, "sifctl: %v\n", err)
	return exitError
}

// describe turns client errors into one line a person can act on.
func describe(err error, socket string) error {
	switch {
	case errors.Is(err, ipc.ErrNoDaemon):
		return fmt.Errorf("no sifd is listening on %s (start one with 'sifd run --root DIR', or name its socket with --socket or SIF_SOCKET)", socket)
	case errors.Is(err, ipc.ErrDenied):
		return fmt.Errorf("permission denied on %s: %s", socket, deniedCause(socket, os.Stat))
	case errors.Is(err, ipc.ErrBusy):
		return fmt.Errorf("sifd is busy: it is serving as many requests as it takes at once, and still was after a few tries; try again later (%s)", socket)
	case errors.Is(err, ipc.ErrNotSif):
		return fmt.Errorf("%s does not answer like sifd: %v", socket, err)
	}
	return err
}

// deniedCause says what keeps this user from connecting to socket: a
// directory on its path that it may not search, or the socket itself. The
// daemon's own access setting is not the cause: it answers 403, not a
// refused connection. stat is os.Stat.
func deniedCause(socket string, stat func(string) (fs.FileInfo, error)) string {
	socket = filepath.Clean(socket)
	var path []string // socket, its directory, …, the root
	for p := socket; ; p = filepath.Dir(p) {
		path = append(path, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	// From the root down, the first directory whose entry cannot be looked
	// up is one this user may not search.
	for i := len(path) - 1; i > 0; i-- {
		dir, child := path[i], path[i-1]
		if _, err := stat(child); errors.Is(err, fs.ErrPermission) {
			mode := "mode unknown"
			if fi, err := stat(dir); err == nil {
				mode = fmt.Sprintf("mode %04o", fi.Mode().Perm())
			}
			return fmt.Sprintf("the directory %s (%s) does not let you reach the socket; the daemon's runtime directory must be searchable by every user who may ask (0755)", dir, mode)
		}
	}
	if fi, err := stat(socket); err == nil {
		return fmt.Sprintf("the socket (mode %04o) is private to the user the daemon runs as (socket_access = \"owner\", a per-user daemon's default; the system daemon's is open to every user)", fi.Mode().Perm())
	}
	return "the daemon's socket is private to the user it runs as"
}
