package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

// Output helpers shared by the commands: JSON lines and lists written as
// they come, counts with their nouns, exact paths, names quoted for text
// and records ended with NUL for --null.

// jsonList writes the list of a JSON object as its elements come: the
// object up to the list's "[" (open) before the first, a comma before each
// other. The caller writes what follows the list.
type jsonList struct {
	open string
	n    int // the elements written
}

func (l *jsonList) add(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	sep := ","
	if l.n == 0 {
		sep = l.open
	}
	l.n++
	_, err = io.WriteString(w, sep+string(b))
	return err
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := ipc.MarshalJSONLine(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// count renders n with its noun, e.g. "1 set", "2 sets".
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// exactPath returns a wire path's exact bytes.
func exactPath(p, raw string) string {
	if e, err := ipc.JoinPath(p, raw); err == nil {
		return e
	}
	return p
}

// textPath names a file in text output: its exact bytes quoted as ls
// quotes names (quoteName), after "HOST:" for a file of another host.
func textPath(host string, p ipc.FilePath) string {
	if host != "" {
		return host + ":" + quoteName(p.Exact())
	}
	return quoteName(p.Exact())
}

// nullFlag gives cmd the flag -0/--null; the command's help says what
// its records are.
func (g *globals) nullFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&g.null, "null", "0", false, "for scripts (xargs -0): end each record with a NUL byte instead of a newline, and print names as they are, unquoted (see below)")
}

// writeRecords writes each of names as it is, ended with a NUL byte
// (--null), and then, if group, one more NUL byte: an empty record ends
// a group, as in jdupes -0.
func writeRecords(w io.Writer, group bool, names ...string) error {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(0)
	}
	if group {
		b.WriteByte(0)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// hostPath is a file's name as --null prints it: its exact bytes, after
// "HOST:" for a file of another host.
func hostPath(host string, p ipc.FilePath) string {
	if host != "" {
		return host + ":" + p.Exact()
	}
	return p.Exact()
}
