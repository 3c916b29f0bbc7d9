package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

// scriptOptions are dupes' flags for --script.
type scriptOptions struct {
	file   string // "-": stdout; "": no script
	keep   string
	delete bool
}

func (o *scriptOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.file, "script", "", "write to `FILE` (- for stdout) a shell script that hard-links (or, with --delete, removes) the copies, to review then run with sh")
	cmd.Flags().StringVar(&o.keep, "keep", "oldest", "with --script: the file to keep of each set: oldest, newest or under:DIR")
	cmd.Flags().BoolVar(&o.delete, "delete", false, "with --script: remove the copies instead of linking them")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if o.file == "" && (cmd.Flags().Changed("keep") || cmd.Flags().Changed("delete")) {
			return failedf("--keep and --delete go with --script (or see dedupe)")
		}
		return nil
	}
}

// write writes the script of the sets under prefix, to stdout or to a new
// executable file that is removed again if the answer is cut short.
func (o *scriptOptions) write(ctx context.Context, g *globals, do ipc.DupesOptions) error {
	if do.Fleet {
		return failedf("--script acts on this host's files: it cannot be given with --fleet")
	}
	rule, err := parseKeep(o.keep)
	if err != nil {
		return failed(err)
	}
	out := g.stdout
	var f *os.File
	if o.file != "-" {
		if f, err = os.OpenFile(o.file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755); err != nil {
			return failed(err)
		}
		out = f
	}
	bw := bufio.NewWriter(out)
	sw := &scriptWriter{w: bw, keep: rule, delete: o.delete}
	sw.header(time.Now())
	_, err = g.client().DupesWith(ctx, do, sw.set)
	if err == nil {
		sw.end()
		err = bw.Flush()
	}
	if f != nil {
		err = errors.Join(err, closeExecutable(f))
		if err != nil {
			os.Remove(o.file)
		}
	}
	if err != nil {
		return failed(err)
	}
	if f != nil {
		fmt.Fprintf(g.stdout, "Wrote %s: %s, %s to review, then run with sh.\n", quoteName(o.file),
			count(sw.sets, "set", "sets"), count(sw.commands, "command", "commands"))
	}
	if sw.commands == 0 {
		return nothing()
	}
	return nil
}

// closeExecutable closes f, executable by its owner at least whatever the
// umask or its old mode.
func closeExecutable(f *os.File) error {
	fi, err := f.Stat()
	if err == nil && fi.Mode()&0o100 == 0 {
		err = f.Chmod(fi.Mode() | 0o100)
	}
	return errors.Join(err, f.Close())
}

// scriptWriter writes a POSIX shell script acting on identical sets.
type scriptWriter struct {
	w              io.Writer
	keep           keepRule
	delete         bool
	sets, commands int
	err            error
}

const scriptHead = `#!/bin/sh
# Written by sifctl dupes --script on %s.
# For each set of identical files in sif's index: the file kept (--keep %s),
# then a command for each other file that %s.
# Review it, delete the lines you do not want, then run it: sh THIS-FILE.
# It acts with the rights of whoever runs it. Each command first compares
# the file with the kept one (cmp): a file that is no longer identical, is
# not a regular file or already is a hard link of the kept one is left as
# it is and named on stderr. The exit status is 1 if a command failed.
set -u
status=0

keep() { K=$1; }

# check FILE: whether FILE may be replaced by the kept file.
check() {
	if [ -L "$1" ] || [ ! -f "$1" ]; then
		printf 'skipped, not a regular file: %%s\n' "$1" >&2
		return 1
	fi
	if [ "$K" -ef "$1" ]; then
		printf 'skipped, already a hard link of %%s: %%s\n' "$K" "$1" >&2
		return 1
	fi
	if ! cmp -s "$K" "$1"; then
		printf 'skipped, not identical to %%s: %%s\n' "$K" "$1" >&2
		return 1
	fi
}

failed() {
	printf 'failed: %%s\n' "$1" >&2
	status=1
}

# link FILE: replaces FILE by a hard link to the kept file, made under a
# temporary name then renamed over FILE, so that FILE is never missing.
link() {
	check "$1" || return 0
	t="${1%%/*}/.sif-dedupe.$$"
	ln "$K" "$t" || { failed "$1"; return 0; }
	mv -f "$t" "$1" || { rm -f "$t"; failed "$1"; }
}

# remove FILE: removes FILE.
remove() {
	check "$1" || return 0
	rm -f "$1" || failed "$1"
}

`

func (s *scriptWriter) header(now time.Time) {
	rule := "oldest"
	switch {
	case s.keep.newest:
		rule = "newest"
	case s.keep.under != "":
		rule = "under:" + s.keep.under
	}
	what := "replaces it by a hard link to the kept file"
	if s.delete {
		what = "removes it"
	}
	s.printf(scriptHead, now.UTC().Format(time.RFC3339), shellComment(rule), what)
}

func (s *scriptWriter) printf(f string, a ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, f, a...)
	}
}

func (s *scriptWriter) set(set ipc.DupeSet) error {
	s.sets++
	cs := statSet(set)
	k := s.keep.pick(cs)
	if k < 0 {
		s.printf("# %d identical files of %d bytes: none to keep here\n\n", len(cs), set.Size)
		return s.err
	}
	s.printf("# %d identical files of %d bytes: keep %s\n", len(cs), set.Size, shellComment(cs[k].path))
	s.printf("%s\n", shellCall("keep", cs[k].path))
	verb := "link"
	if s.delete {
		verb = "remove"
	}
	for i, c := range cs {
		switch {
		case i == k:
		case c.err != nil:
			s.printf("# gone: %s\n", shellComment(c.path))
		case os.SameFile(cs[k].fi, c.fi):
			s.printf("# already a hard link: %s\n", shellComment(c.path))
		default:
			s.commands++
			s.printf("%s\n", shellCall(verb, c.path))
		}
	}
	s.printf("\n")
	return s.err
}

func (s *scriptWriter) end() { s.printf("exit $status\n") }

// shellCall is the shell line calling fn with the one argument arg, on
// one line whatever arg's bytes: single-quoted when they are printable
// text, else decoded by printf from octal escapes (a "/" appended, then
// cut, keeps the trailing newlines that $(...) would drop).
func shellCall(fn, arg string) string {
	if plainText(arg) {
		return fn + " " + singleQuoted(arg)
	}
	return "n=$(printf '" + octalEscaped(arg) + "/'); " + fn + ` "${n%/}"`
}

// shellComment is arg as it may stand in a comment: one line.
func shellComment(arg string) string {
	if plainText(arg) {
		return arg
	}
	return octalEscaped(arg)
}

func plainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func singleQuoted(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// octalEscaped is s as a printf format printing s: the bytes other than
// printable ASCII, and ', \ and %, as \NNN.
func octalEscaped(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '\'' && c != '\\' && c != '%' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, `\%03o`, c)
		}
	}
	return b.String()
}
