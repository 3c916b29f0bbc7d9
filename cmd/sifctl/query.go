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

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// Reading a query file, shared by similar and basis: its fingerprints,
// and what to say when it could not be read.

// queries is what similar and basis set up before they read their FILEs:
// a client, the daemon's fingerprint parameters, and --prefix made
// absolute.
type queries struct {
	ctx    context.Context
	g      *globals
	c      *ipc.Client
	params fingerprint.Params
	prefix string
}

// startQueries sets up the queries of a command over files whose --prefix
// is prefix: it makes prefix absolute, asks the daemon for its
// parameters, and checks that standard input is named at most once. Its
// error is the command's.
func startQueries(cmd *cobra.Command, g *globals, prefix string, files []string) (*queries, error) {
	abs, err := absPrefix(prefix)
	if err != nil {
		return nil, failed(err)
	}
	ctx := cmd.Context()
	c := g.client()
	info, err := c.Info(ctx)
	if err != nil {
		return nil, failed(err)
	}
	if n := countStdin(files); n > 1 {
		return nil, failedf("-: standard input named %d times; it can be read only once", n)
	}
	return &queries{ctx: ctx, g: g, c: c, params: info.Params, prefix: abs}, nil
}

// read reads the query named file, as readQuery does with o and check.
// A query that could not be read is reported (queryFailed) and read
// returns ok false: the caller counts an error and goes on to the next
// FILE. An error returned ends the command: an interrupt, or a failure to
// write stdout.
func (q *queries) read(file string, o ipc.ReadOptions, check bool) (abs string, sk *fingerprint.Sketch, d *ipc.QueryData, ok bool, err error) {
	abs, sk, d, err = readQuery(q.ctx, q.g, file, q.params, o, check)
	switch {
	case err == nil:
		return abs, sk, d, true, nil
	case q.ctx.Err() != nil:
		return abs, nil, nil, false, failed(fmt.Errorf("%s: interrupted", file))
	}
	return abs, nil, nil, false, q.g.queryFailed(file, abs, err)
}

// queryFields returns the query and query_raw fields of the JSON line
// answering the query named file, at abs: "-" for standard input.
func queryFields(file, abs string) (query, raw string) {
	query, raw = ipc.PathFields(abs)
	if file == "-" {
		query = "-"
	}
	return query, raw
}

// queryName is the name the answer to the query named file is printed
// under: file as given, or "(standard input)" for "-".
func queryName(file string) string {
	if file == "-" {
		return "(standard input)"
	}
	return quoteName(file)
}

func countStdin(files []string) int {
	n := 0
	for _, f := range files {
		if f == "-" {
			n++
		}
	}
	return n
}

// readQuery fingerprints the query named file: the file at that path,
// made absolute, or standard input for "-", read as it streams in, with
// no path. With check, it also keeps what the daemon needs to check the
// matches (ipc.QueryData). Reading stops when ctx is done. A file that
// changed while it was read is an error wrapping ipc.ErrChanged; abs is
// set even on error.
func readQuery(ctx context.Context, g *globals, file string, p fingerprint.Params, o ipc.ReadOptions, check bool) (abs string, sk *fingerprint.Sketch, d *ipc.QueryData, err error) {
	if file != "-" {
		abs, err := filepath.Abs(file)
		if err != nil {
			return "", nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		if !check && o.SimiHash {
			sk, err := ipc.SketchFileSimiHash(ctx, abs, p)
			return abs, sk, nil, err
		}
		if !check {
			sk, err := ipc.SketchFileContext(ctx, abs, p)
			return abs, sk, nil, err
		}
		sk, d, err := ipc.QueryFileContext(ctx, abs, p, o)
		return abs, sk, d, err
	}
	pr, done := g.stdinUntil(ctx)
	defer done()
	switch {
	case check:
		sk, d, err = ipc.ReadQuery(pr, p, o)
	case o.SimiHash:
		sk, err = fingerprint.SketchReader(pr, p)
	default:
		sk, err = fingerprint.SketchQuery(pr, p)
	}
	if err != nil {
		return "", nil, nil, fmt.Errorf("standard input: %w", err)
	}
	return "", sk, d, nil
}

// Codes of queryErrorLine for a query that failed on this side, before
// the daemon was asked; one the daemon refused has the daemon's code
// (ipc.Code*: bad_prefix, too_large, params_mismatch, ...).
const (
	// codeChanged: the query file changed while sifctl read it; it was
	// not queried.
	codeChanged = "changed"
	// codeNotFound: no file by that name.
	codeNotFound = "not_found"
	// codeUnreadable: the file could not be read: permission denied, or
	// an I/O error.
	codeUnreadable = "unreadable"
	// codeNotRegular: a fifo, socket or device, or a directory where the
	// command compares files (basis, --explain, --by simihash).
	codeNotRegular = "not_regular"
	// codeTooLarge: too large for what was asked (--explain reads the
	// query whole, up to a limit).
	codeTooLarge = "too_large"
)

// queryErrorLine is what `similar --json` and `basis --json` print, in
// place of an answer, for a query that failed: a FILE that could not be
// read, or that the daemon refused, or a line of a signature file that
// could not be asked (signature.go): the query and an error of the shape
// the daemon's errors have. A program reading the answers thus gets one
// line per query, in order, and sees which has none.
type queryErrorLine struct {
	Query    string `json:"query"`
	QueryRaw string `json:"query_raw,omitempty"`
	// Signature names the line of a signature file the query was read
	// from (--signature).
	Signature *signatureRef `json:"signature,omitempty"`
	Error     queryError    `json:"error"`
}

type queryError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// queryFailed reports the query named file (abs, its absolute path) that
// could not be read or sketched, as queryError does, with the code of why
// (localCode). The caller counts it as an error (exit status 2); the
// error returned is one of writing stdout.
func (g *globals) queryFailed(file, abs string, err error) error {
	msg := err.Error()
	if errors.Is(err, ipc.ErrChanged) {
		msg += "; not queried: run it again once the file is stable"
	}
	return g.queryError(file, abs, localCode(abs, err), msg)
}

// queryError reports that the query named file (abs, its absolute path)
// has no answer: msg on stderr, and with --json a queryErrorLine on stdout
// in the query's place. The error returned is one of writing stdout.
func (g *globals) queryError(file, abs, code, msg string) error {
	fmt.Fprintf(g.stderr, "sifctl: %s\n", msg)
	if !g.json {
		return nil
	}
	q, raw := queryFields(file, abs)
	return g.printJSON(queryErrorLine{Query: q, QueryRaw: raw, Error: queryError{Code: code, Message: msg}})
}

// localCode is the code of err, a failure to read the query at abs ("" for
// standard input).
func localCode(abs string, err error) string {
	switch {
	case errors.Is(err, ipc.ErrChanged):
		return codeChanged
	case errors.Is(err, errTooLarge):
		return codeTooLarge
	case errors.Is(err, fs.ErrNotExist):
		return codeNotFound
	}
	if abs != "" {
		if st, serr := os.Stat(abs); serr == nil && !st.Mode().IsRegular() {
			return codeNotRegular
		}
	}
	return codeUnreadable
}

// refused returns the daemon's answer err when it is the failure of the
// one query asked, which is reported in the query's place before the next
// is asked: any error the daemon answered, but those that say it serves
// no query now (shutting down, busy, or not to this caller), which end the
// command.
func refused(err error) (*ipc.Error, bool) {
	var e *ipc.Error
	if !errors.As(err, &e) {
		return nil, false
	}
	switch e.Code {
	case ipc.CodeUnavailable, ipc.CodeBusy, ipc.CodeForbidden:
		return nil, false
	}
	return e, true
}

// transport reports whether err is a failure to reach the daemon, not an
// answer of it: such an error may wrap the system's (permission denied on
// the socket), which must not be taken for the query's.
func transport(err error) bool {
	for _, e := range []error{ipc.ErrNoDaemon, ipc.ErrDenied, ipc.ErrBusy, ipc.ErrNotSif} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// askFailed reports err, the failure of asking the daemon about the query
// named file (abs, its absolute path). A refusal of that query (refused)
// is reported in its place and nil returned: the caller counts an error
// and asks the next. Any other error is returned, and ends the command.
func (g *globals) askFailed(file, abs string, err error) error {
	if e, ok := refused(err); ok {
		return g.queryError(file, abs, string(e.Code), fmt.Sprintf("%s: %s", queryName(file), e.Message))
	}
	return failed(fmt.Errorf("%s: %w", file, describe(err, g.socket)))
}

// queryArgs checks the arguments of similar and basis (cmd): at least
// one FILE, or none with --signature.
func queryArgs(cmd *cobra.Command, signature string, args []string) error {
	switch {
	case signature != "" && len(args) > 0:
		return fmt.Errorf("--signature %s asks with saved signatures: no FILE with it (%s)", signature, args[0])
	case signature == "" && len(args) == 0:
		return fmt.Errorf("no FILE to ask about: usage: %s (see '%s --help')", cmd.UseLine(), cmd.CommandPath())
	}
	return nil
}

// stdinUntil returns standard input as a reader whose reads end, with
// ctx's error, once ctx is done: a read of standard input cannot be
// interrupted, so it is read on another goroutine, and SIGINT or SIGTERM
// (which cancel ctx) end the command at once. The caller calls done once
// it has read.
func (g *globals) stdinUntil(ctx context.Context) (r io.Reader, done func()) {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, g.stdin)
		pw.CloseWithError(err)
	}()
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	return pr, func() { stop(); pr.Close() }
}
