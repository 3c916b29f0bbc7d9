package main

import (
	"errors"
	"fmt"

	"github.com/sif-dev/sif/ipc"
)

// Codes of queryErrorLine.
const (
	// codeChanged: the query file changed while sifctl read it; it was
	// not queried.
	codeChanged = "changed"
)

// queryErrorLine is what `similar --json` and `basis --json` print, in
// place of an answer, for a query file that changed while it was read:
// the query and an error of the shape the daemon's errors have.
type queryErrorLine struct {
	Query    string     `json:"query"`
	QueryRaw string     `json:"query_raw,omitempty"`
	Error    queryError `json:"error"`
}

type queryError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// queryFailed reports the query named file (abs, its absolute path) that
// could not be read or sketched: one line on stderr, and with --json, for
// a file that changed while it was read, a queryErrorLine on stdout, so
// that a program reading the answers sees which query has none. The
// caller counts it as an error (exit status 2); the error returned is one
// of writing stdout.
func (g *globals) queryFailed(file, abs string, err error) error {
	if !errors.Is(err, ipc.ErrChanged) {
		fmt.Fprintf(g.stderr, "sifctl: %v\n", err)
		return nil
	}
	msg := fmt.Sprintf("%v; not queried: run it again once the file is stable", err)
	fmt.Fprintf(g.stderr, "sifctl: %s\n", msg)
	if !g.json {
		return nil
	}
	q, raw := ipc.PathFields(abs)
	return g.printJSON(queryErrorLine{Query: q, QueryRaw: raw, Error: queryError{Code: codeChanged, Message: msg}})
}
