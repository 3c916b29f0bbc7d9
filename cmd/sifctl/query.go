package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// Reading a query file, shared by similar and basis: its fingerprints,
// and what to say when it could not be read.

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
		if !check {
			sk, err := ipc.SketchFileContext(ctx, abs, p)
			return abs, sk, nil, err
		}
		sk, d, err := ipc.QueryFileContext(ctx, abs, p, o)
		return abs, sk, d, err
	}
	// A read of standard input cannot be interrupted; read it on another
	// goroutine, so that SIGINT or SIGTERM (which cancel ctx) end the
	// query at once.
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, g.stdin)
		pw.CloseWithError(err)
	}()
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	defer stop()
	if check {
		sk, d, err = ipc.ReadQuery(pr, p, o)
	} else {
		sk, err = fingerprint.SketchQuery(pr, p)
	}
	if err != nil {
		return "", nil, nil, fmt.Errorf("standard input: %w", err)
	}
	return "", sk, d, nil
}

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
