package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"

	"github.com/sif-dev/sif/index/explain"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// explainedMatch is one match of `sifctl similar --explain --json`: the
// match and what it shares with the query, or why that could not be said.
type explainedMatch struct {
	ipc.Match
	Explain      *explain.Explanation `json:"explain,omitempty"`
	ExplainError string               `json:"explain_error,omitempty"`
	// bytes is the match's content as explained, for the text view.
	bytes []byte
}

// readWhole reads the regular file at path into memory, refusing one
// larger than explain.DefaultMaxSize. It returns what Stat said of the
// open file.
func readWhole(path string) ([]byte, os.FileInfo, error) {
	f, err := ipc.OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	data, err := readLimited(f, path)
	return data, st, err
}

// errTooLarge is wrapped by the error of a query too large to explain.
var errTooLarge = errors.New("too large to explain")

// readLimited reads r to its end, refusing more than
// explain.DefaultMaxSize bytes; name is what errors call it.
func readLimited(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, explain.DefaultMaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > explain.DefaultMaxSize {
		return nil, fmt.Errorf("%s: larger than %d MiB, %w", name, explain.DefaultMaxSize>>20, errTooLarge)
	}
	return data, nil
}

// textOptions shape the side-by-side view: the terminal's width when
// stdout is a terminal, else 100 columns, and colours as --color says
// (auto: on a terminal, unless NO_COLOR is set or TERM is dumb).
func (g *globals) textOptions() *explain.TextOptions {
	o := &explain.TextOptions{Width: 100, Name: func(s explain.Side) string { return quoteName(exactPath(s.Path, s.PathRaw)) }}
	f, ok := g.stdout.(*os.File)
	tty := ok && term.IsTerminal(int(f.Fd()))
	if tty {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			o.Width = w
		}
	}
	o.Color = useColor(g.color, tty, os.LookupEnv)
	return o
}

// useColor decides --color (auto, always or never) for an output that is
// a terminal or not; lookup is os.LookupEnv.
func useColor(flag string, tty bool, lookup func(string) (string, bool)) bool {
	switch flag {
	case "always":
		return true
	case "never":
		return false
	}
	_, noColor := lookup("NO_COLOR")
	term, _ := lookup("TERM")
	return tty && !noColor && term != "dumb"
}

// judge marks the boilerplate of e, whose A side is data, from the hashes
// a daemon listed as too common to count (ipc.SimilarResponse.Common)
// under params p.
func judge(e *explain.Explanation, data []byte, p fingerprint.Params, common []string) error {
	fps, err := explain.Fingerprints(data, p)
	if err != nil {
		return err
	}
	hs := make([]uint64, 0, len(common))
	for _, c := range common {
		h, err := strconv.ParseUint(c, 16, 64)
		if err != nil {
			return fmt.Errorf("common hash %q from the daemon: %w", c, err)
		}
		hs = append(hs, h)
	}
	e.MarkBoilerplate(fps, explain.CommonSet(hs))
	return nil
}

// judgeByDaemon asks the daemon, if one answers, which fingerprints of A
// (at abs, content data) are too common to count, and marks e's
// boilerplate; otherwise it says in e.Note why it was not judged.
func judgeByDaemon(ctx context.Context, g *globals, e *explain.Explanation, abs string, data []byte, maxDF int) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := g.client()
	info, err := c.Info(ctx)
	if err != nil {
		e.Note = "no index to ask: " + shortDaemonError(err, g.socket)
		return
	}
	sk, err := fingerprint.SketchReader(bytes.NewReader(data), info.Params)
	if err != nil {
		e.Note = err.Error()
		return
	}
	req := ipc.NewSimilarRequest(abs, sk)
	req.Fast, req.ListCommon, req.Limit, req.MaxDF = true, true, 1, maxDF
	resp, err := c.Similar(ctx, req)
	if err != nil {
		e.Note = "the index did not answer: " + shortDaemonError(err, g.socket)
		return
	}
	if err := judge(e, data, info.Params, resp.Common); err != nil {
		e.Note = err.Error()
	}
}

func shortDaemonError(err error, socket string) string {
	switch {
	case errors.Is(err, ipc.ErrNoDaemon):
		return "no sifd on " + socket
	case errors.Is(err, ipc.ErrDenied):
		return "permission denied on " + socket
	}
	return err.Error()
}

// explainMatch explains match m of the query q (its bytes, fingerprints
// fps under the index's parameters and the hashes the daemon skipped).
// A match the client cannot read, or that is too large, gets an error
// text instead; one that changed since it was indexed is explained as it
// is now, and marked.
func explainMatch(q []byte, qname string, m ipc.Match, judgeFn func(*explain.Explanation) error) explainedMatch {
	out := explainedMatch{Match: m}
	path, err := ipc.JoinPath(m.Path, m.PathRaw)
	if err != nil {
		out.ExplainError = err.Error()
		return out
	}
	data, st, err := readWhole(path)
	if err != nil {
		out.ExplainError = "cannot read it: " + err.Error()
		return out
	}
	e, err := explain.Explain(q, data, nil)
	if err != nil {
		out.ExplainError = err.Error()
		return out
	}
	e.A.Path, e.A.PathRaw = ipc.PathFields(qname)
	e.B.Path, e.B.PathRaw = m.Path, m.PathRaw
	e.B.Changed = m.Changed || st.Size() != m.Size || st.ModTime().UnixNano() != m.MtimeNs
	if err := judgeFn(e); err != nil {
		e.Note = err.Error()
	}
	out.Explain = e
	out.bytes = data
	return out
}
