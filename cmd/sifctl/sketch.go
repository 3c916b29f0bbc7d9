package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

type sketchFlags struct {
	noPath bool
	params string
}

func newSketchCmd(g *globals) *cobra.Command {
	var f sketchFlags
	cmd := &cobra.Command{
		Use:   "sketch [flags] FILE...|-",
		Short: "Print each FILE's signature: what a query by fingerprints sends",
		Long: `sketch fingerprints each FILE as similar and basis do and prints, one line
of JSON per FILE, exactly what they send the daemon to ask about it by its
fingerprints alone: the signature. It is for asking later, or elsewhere,
without the file:

  sifctl sketch draft.c > draft.sig            # save it (as ssdeep -k does)
  sifctl similar --signature draft.sig         # ask with it, here or on another machine
  sifctl sketch --no-path f | ssh receiver sifctl basis --signature -
  curl --unix-socket /run/sifd/sifd.sock -d @draft.sig http://sifd/v1/similar

A line is {"params": PARAMS, "path": ABSOLUTE_PATH, "path_raw"?: BASE64,
"size": N, "strong": SHA256, "type": "text"|"binary", "features":
[{"hash": HEX16, "count": N, "len": N}, ...], "simihash": {"sum": [16
counts], "key": N}}: the parameters the file was fingerprinted with (the
daemon's, from its /v1/info, unless --params names others), the file's path
(its exact bytes in path_raw when they are not UTF-8), its size, its
SHA-256, its type, its fingerprints, sorted, and its SimiHash sum table and
key, for 'similar --by simihash --signature'. A line
is a request body POST /v1/similar and POST /v1/basis take as it is (one
line per request); ipc/API.md describes every field. No byte of the file
is in it, so the daemon answers with the index's estimates, as for
similar --fast: the answer says it is an estimate.

The path is the query's own: the daemon does not list the file at that path
as a match of itself. A receiver that may hold an older version at the
same path (a sync tool) wants it listed: --no-path leaves the path out, as
for "-" (standard input, read once), which has none.

FILE must be a regular file; a directory, a fifo, a socket or a device is
refused, and so is a file that changes while it is read. Each FILE that
cannot be sketched is named on stderr, the others are still printed.

The output is JSON with or without --json. Exit status: 0 when every FILE
was sketched, 2 when one was not or on any other error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSketch(cmd, g, &f, args)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.noPath, "no-path", false, "leave each FILE's path out of its signature (for another machine)")
	fl.StringVar(&f.params, "params", "", `fingerprint with these parameters (JSON, as /v1/info's "params") instead of asking the daemon`)
	return cmd
}

func runSketch(cmd *cobra.Command, g *globals, f *sketchFlags, files []string) error {
	if n := countStdin(files); n > 1 {
		return failedf("-: standard input named %d times; it can be read only once", n)
	}
	ctx := cmd.Context()
	var p fingerprint.Params
	if f.params != "" {
		var err error
		if p, err = parseParams(f.params); err != nil {
			return failed(err)
		}
	} else {
		info, err := g.client().Info(ctx)
		if err != nil {
			return failed(err)
		}
		p = info.Params
	}
	errs := 0
	var line []byte
	for _, file := range files {
		abs, sk, _, err := readQuery(ctx, g, file, p, ipc.ReadOptions{SimiHash: true}, false)
		switch {
		case err != nil && ctx.Err() != nil:
			return failed(fmt.Errorf("%s: interrupted", file))
		case err != nil:
			fmt.Fprintf(g.stderr, "sifctl: %v\n", describeSketchError(err))
			errs++
			continue
		}
		if f.noPath {
			abs = ""
		}
		q := ipc.NewQuerySketch(abs, sk)
		q.SimiHash = ipc.SimiHashOf(sk)
		if line, err = q.AppendJSONLine(line[:0]); err != nil {
			return failed(err)
		}
		if _, err := g.stdout.Write(line); err != nil {
			return failed(err)
		}
	}
	if errs > 0 {
		return &statusError{code: exitError}
	}
	return nil
}

// describeSketchError says of a FILE that could not be sketched that its
// signature was not printed, when it changed while it was read.
func describeSketchError(err error) error {
	if errors.Is(err, ipc.ErrChanged) {
		return fmt.Errorf("%w; not sketched: run it again once the file is stable", err)
	}
	return err
}

// parseParams reads --params: a JSON object of fingerprint parameters,
// completed with the scheme's defaults.
func parseParams(s string) (fingerprint.Params, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	var p fingerprint.Params
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf(`--params %s: %v; want a JSON object such as {"scheme": "manber"}, /v1/info's "params"`, s, err)
	}
	n, err := p.Normalize()
	if err != nil {
		return p, fmt.Errorf("--params %s: %w", s, err)
	}
	return n, nil
}
