package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sif-dev/sif/ipc"
)

// Asking with saved signatures (similar --signature, basis --signature):
// the lines `sifctl sketch` prints, read back one by one and sent as the
// query, without the bytes.

// maxSignatureLine is the longest line a signature file may hold: a
// signature is a request body, and the daemon takes none longer by
// default (ipc/server's DefaultMaxBody). A variable, so tests can shrink
// it.
var maxSignatureLine = 64 << 20

// Codes of queryErrorLine for a signature.
const (
	// codeBadSignature: the line is not a signature (not JSON,
	// truncated, too long, a field missing or malformed).
	codeBadSignature = "bad_signature"
	// codeParamsMismatch: the signature was made with other fingerprint
	// parameters than the index's (ipc.CodeParamsMismatch).
	codeParamsMismatch = string(ipc.CodeParamsMismatch)
)

// signature is one query read from a signature file: where it is, and
// the sketch it holds (nil when the line holds none).
type signature struct {
	file string // as named on the command line; "-" for standard input
	line int    // from 1
	q    *ipc.QuerySketch
}

// where names the line in messages: FILE:LINE, as grep does.
func (s *signature) where() string {
	if s.file == "-" {
		return fmt.Sprintf("(standard input):%d", s.line)
	}
	return fmt.Sprintf("%s:%d", quoteName(s.file), s.line)
}

// signatureRef is the "signature" field of an answer to a signature: the
// file (as named, "-" for standard input) and the line it was read from.
type signatureRef struct {
	File    string `json:"file"`
	FileRaw string `json:"file_raw,omitempty"`
	Line    int    `json:"line"`
}

func (s *signature) ref() *signatureRef {
	f, raw := ipc.PathFields(s.file)
	return &signatureRef{File: f, FileRaw: raw, Line: s.line}
}

// path is the signature's own path, exact, or "" when it has none (or
// holds no sketch).
func (s *signature) path() string {
	if s.q == nil {
		return ""
	}
	return exactPath(s.q.Path, s.q.PathRaw)
}

// fields returns the query and query_raw fields of its answer's JSON
// line: the signature's path, or "-" when it has none, as for a query
// read from standard input.
func (s *signature) fields() (query, raw string) {
	if p := s.path(); p != "" {
		return ipc.PathFields(p)
	}
	return "-", ""
}

// name is what its answer is printed under: FILE:LINE: PATH, or FILE:LINE
// when it has no path.
func (s *signature) name() string {
	if p := s.path(); p != "" {
		return s.where() + ": " + quoteName(p)
	}
	return s.where()
}

// askSignatures sends, in order, each signature of the file named file
// ("-": standard input) to ask, which asks the daemon, prints the answer
// and reports whether it found what was looked for. A line that holds no
// signature for this index, or that the daemon refuses (refused), is
// reported as its query's error (signatureFailed), and the next is read;
// but a file whose first line is not JSON, or too long, is not a file of
// signatures: that line is reported and the rest is not read.
// It returns how many signatures were answered, how many of those found
// something, and how many lines failed; an error returned ends the
// command: the file could not be read, an interrupt, a daemon that
// failed otherwise, a failure to write stdout.
func (q *queries) askSignatures(file string, ask func(s *signature) (bool, error)) (answered, found, errs int, err error) {
	g := q.g
	seen := false // a line held a signature
	err = eachSignatureLine(q.ctx, g, file, func(s *signature, line []byte, tooLong bool) error {
		if !seen && (tooLong || !json.Valid(line)) {
			// Not a file of signatures (a data file named by mistake):
			// one error, not one per line.
			errs++
			msg := fmt.Sprintf("longer than %d MiB: not a signature", maxSignatureLine>>20)
			if !tooLong {
				_, derr := ipc.DecodeQuerySketch(line)
				msg = derr.Error()
			}
			if err := g.signatureFailed(s, codeBadSignature, msg+"; the rest is not read, as no line before held one"); err != nil {
				return err
			}
			return errNotSignatures
		}
		code, msg := "", ""
		switch {
		case tooLong:
			code, msg = codeBadSignature, fmt.Sprintf("longer than %d MiB: not a signature the daemon takes", maxSignatureLine>>20)
		default:
			sk, derr := ipc.DecodeQuerySketch(line)
			if derr != nil {
				code, msg = codeBadSignature, derr.Error()
				break
			}
			s.q, seen = sk, true
			if p, _ := sk.Params.Normalize(); p != q.params {
				code, msg = codeParamsMismatch, fmt.Sprintf("made with the parameters %s, not the index's %s: sketch the file again with those (sifctl sketch asks this daemon for them; or sifctl sketch --params)",
					paramsJSON(sk.Params), paramsJSON(q.params))
			}
		}
		if code == "" {
			ok, aerr := ask(s)
			ie, isRefused := refused(aerr)
			var se *statusError
			switch {
			case errors.As(aerr, &se): // stdout could not be written
				return aerr
			case aerr == nil:
				answered++
				if ok {
					found++
				}
				return nil
			case isRefused:
				code, msg = string(ie.Code), "sifd refused it: "+ie.Message
			case q.ctx.Err() != nil:
				return failed(fmt.Errorf("%s: interrupted", s.where()))
			default:
				return failed(fmt.Errorf("%s: %w", s.where(), describe(aerr, g.socket)))
			}
		}
		errs++
		return g.signatureFailed(s, code, msg)
	})
	var se *statusError
	switch {
	case err == errNotSignatures:
		return answered, found, errs, nil
	case errors.As(err, &se):
		return answered, found, errs, err
	case err != nil && q.ctx.Err() != nil:
		return answered, found, errs, failed(fmt.Errorf("%s: interrupted", file))
	case err != nil:
		return answered, found, errs, failed(err)
	case answered+errs == 0:
		return 0, 0, 0, failedf("%s: holds no signature (sifctl sketch prints them)", signatureFileName(file))
	}
	return answered, found, errs, nil
}

// errNotSignatures ends the reading of a file whose first line is not a
// signature, nor JSON.
var errNotSignatures = errors.New("not a file of signatures")

// signatureFailed reports the signature s that could not be asked: one
// line on stderr naming its file and line, and with --json a
// queryErrorLine on stdout, so that a program reading the answers sees
// which has none. The error returned is one of writing stdout.
func (g *globals) signatureFailed(s *signature, code, msg string) error {
	fmt.Fprintf(g.stderr, "sifctl: %s: %s\n", s.where(), msg)
	if !g.json {
		return nil
	}
	q, raw := s.fields()
	return g.printJSON(queryErrorLine{Query: q, QueryRaw: raw, Signature: s.ref(), Error: queryError{Code: code, Message: msg}})
}

// paramsJSON renders fingerprint parameters as /v1/info shows them.
func paramsJSON(p any) string {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Sprint(p)
	}
	return string(b)
}

func signatureFileName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

// eachSignatureLine reads the file named file ("-": standard input) line
// by line and calls fn with each line that is not blank, numbered from 1,
// its end of line trimmed; a line longer than maxSignatureLine is passed
// empty with tooLong set, and the next line is read. Reading stops when
// ctx is done. fn's error is returned as it is; the file's own errors
// name it.
func eachSignatureLine(ctx context.Context, g *globals, file string, fn func(s *signature, line []byte, tooLong bool) error) error {
	r, done, err := openSignatures(ctx, g, file)
	if err != nil {
		return err
	}
	defer done()
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	tooLong, n := false, 0
	for {
		piece, err := br.ReadSlice('\n')
		if !tooLong && len(buf)+len(piece) > maxSignatureLine+1 { // +1: the newline
			tooLong, buf = true, nil
		}
		if !tooLong {
			buf = append(buf, piece...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && err != io.EOF:
			return fmt.Errorf("%s: %w", signatureFileName(file), err)
		}
		if len(piece) > 0 || len(buf) > 0 || tooLong {
			n++
			if line := bytes.TrimSpace(buf); len(line) > 0 || tooLong {
				if ferr := fn(&signature{file: file, line: n}, line, tooLong); ferr != nil {
					return ferr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		buf, tooLong = buf[:0], false
	}
}

// openSignatures opens the signature file named file: standard input for
// "-", read on another goroutine so that an interrupt ends the read at
// once, or the file, which may be a pipe (<(sifctl sketch f)) but not a
// directory. The caller calls done once it has read.
func openSignatures(ctx context.Context, g *globals, file string) (r io.Reader, done func(), err error) {
	if file == "-" {
		r, done := g.stdinUntil(ctx)
		return r, done, nil
	}
	f, err := os.Open(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: is a directory, not a file of signatures", file)
	}
	return ipc.ContextReader(ctx, f), func() { f.Close() }, nil
}
