package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

type basisFlags struct {
	limit     int
	prefix    string
	maxDF     int
	signature string
	fleet     bool
}

// basisLine is one line of `sifctl basis --json`.
type basisLine struct {
	Query           string               `json:"query"`
	QueryRaw        string               `json:"query_raw,omitempty"`
	Size            int64                `json:"size"`
	Basis           *ipc.BasisCandidate  `json:"basis"`
	CompressedBytes int64                `json:"compressed_bytes"`
	Candidates      []ipc.BasisCandidate `json:"candidates"`
	// Repetitive: the query has few distinct windows (as in similar).
	Repetitive bool `json:"repetitive"`
	// Signature and Estimated: as in similarLine (--signature).
	Signature *signatureRef `json:"signature,omitempty"`
	Estimated bool          `json:"estimated,omitempty"`
	// FleetError: as in similarLine (--fleet).
	FleetError *ipc.Error `json:"fleet_error,omitempty"`
}

func newBasisCmd(g *globals) *cobra.Command {
	var f basisFlags
	cmd := &cobra.Command{
		Use:   "basis [flags] FILE...|- | --signature SIGFILE",
		Short: "Name the indexed file a sync tool should send each FILE as a delta from",
		Long: `basis answers a sync tool's question before it copies FILE: which indexed
file would an rsync-style delta of FILE be smallest from, and how many bytes
would it send? The daemon estimates, for the indexed files that share the
most with FILE, the size of the delta librsync's rdiff would make (blocks of
about the square root of the basis's size, rolling and strong hashes,
literal bytes plus commands), simulated on the bytes of both files, and
compares the best with sending FILE compressed (gzip -6):

  draft.c (10763 bytes): basis /srv/src/foo.c, about 412 bytes to send (compressed: 3907)
        412  /srv/src/foo.c  10901
       5120  /srv/src/bar.c  10979

or "no basis: send it compressed (about 3907 bytes)" when no delta beats
compression, or "identical to PATH: nothing to send". FILE is sent to the
daemon as its bytes up to 1 MiB, as a signature of its 32-byte windows
beyond (the estimate is then made from the windows it shares). A FILE
of few distinct windows (zeros, one repeated byte) is said to be
repetitive; one that changes while sifctl reads it is not queried, as in
similar.

With --json, one object per FILE and line:
  {"query": PATH, "size": N, "basis": CANDIDATE or null, "compressed_bytes": N,
   "candidates": [CANDIDATE, ...], "repetitive": BOOL}
with CANDIDATE {"path": ABSOLUTE_PATH, "size": N, "mtime_ns": N,
"estimated_bytes": N, "identical": BOOL, "method": "identical"|"delta"|
"windows"|"fingerprints", "copied": PCT, "changed": BOOL}, cheapest first;
an estimate from fingerprints alone also has "estimated_bytes_low" and
"estimated_bytes_high". A FILE that failed (a directory, not found, too
large, a --prefix under no root, ...) has in its place the line {"query":
PATH, "error": {"code": CODE, "message": TEXT}}, with the codes 'sifctl
similar --help' lists, and the exit status is 2.

--signature SIGFILE asks with saved signatures instead of FILEs (the lines
'sifctl sketch' prints; SIGFILE a file of them, "-" standard input), one
query per line, in order, as a sync tool asks the receiver before it sends:

  sifctl sketch --no-path f | ssh receiver sifctl basis --signature -

The daemon then has the fingerprints and not the bytes: each candidate's
delta is estimated from the share of the fingerprints it holds ("method":
"fingerprints"; an identical file is still found), and sending the file
without a basis is weighed at its size, its compressed size being unknown.
Fingerprints do not say whether the changes are gathered (a small delta)
or scattered (rdiff loses a block of the basis to each), so such an
estimate is a range, printed after it ("about 2950 bytes to send, between
1480 and 5890") and after each candidate, with its middle (the geometric
mean) as the estimate: measured against rdiff (sifbench basis), rdiff's
delta fell in the range for nine files in ten, and was within a factor of
2 of the estimate for most.
The output says the answer is an estimate ("estimated": true, and
"signature": {"file", "line"}, with --json); a bad line is reported as in
'sifctl similar --help'.

--fleet asks the fleet index too (sifd with a [fleet] table; for root, sifd's
user and the fleet's ask group): candidates on every host of the fleet, each
named HOST:PATH ("host" in JSON), other hosts' estimated from fingerprints;
the best tells a sync tool which host already holds the best basis. When the
fleet does not answer in time, this host's candidates are listed, the error
is said on stderr (and as "fleet_error" with --json), and the exit status is
2.

Exit status: 0 when every FILE has a basis, 1 when one has none, 2 on error.`,
		Args: func(cmd *cobra.Command, args []string) error { return queryArgs(cmd, f.signature, args) },
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBasis(cmd, g, &f, args)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.limit, "limit", 0, "list at most this many candidates per FILE (0: the daemon's default, 8)")
	fl.StringVar(&f.prefix, "prefix", "", "only bases in this directory tree (whole path components; relative to the current directory)")
	fl.IntVar(&f.maxDF, "max-df", 0, "ignore fingerprints found in more than this many files (0: the daemon's default, -1: none)")
	fl.StringVar(&f.signature, "signature", "", `ask with the signatures in this file ("-": standard input), as 'sifctl sketch' prints them, instead of FILEs`)
	fl.BoolVar(&f.fleet, "fleet", false, "ask the fleet index too: candidates on every host of the fleet, each with its host")
	return cmd
}

func runBasis(cmd *cobra.Command, g *globals, f *basisFlags, files []string) error {
	if f.limit < 0 {
		return failedf("--limit %d: must not be negative", f.limit)
	}
	qs, err := startQueries(cmd, g, f.prefix, files)
	if err != nil {
		return err
	}
	if f.signature != "" {
		return basisSignatures(qs, f)
	}
	ctx, c := qs.ctx, qs.c
	none, errs := false, 0
	for _, file := range files {
		abs, sk, data, ok, err := qs.read(file, ipc.ReadOptions{Compressed: true}, true)
		if err != nil {
			return err
		}
		if !ok {
			errs++
			continue
		}
		req := ipc.NewBasisRequest(abs, sk, data)
		req.Limit, req.PathPrefix, req.MaxDF, req.Fleet = f.limit, qs.prefix, f.maxDF, f.fleet
		resp, err := c.Basis(ctx, req)
		if err != nil {
			if err := g.askFailed(file, abs, err); err != nil {
				return err
			}
			errs++
			continue
		}
		if resp.FleetError != nil {
			errs++
		}
		if resp.Basis == nil {
			none = true
		}
		rep := repetitive(qs.params, sk.Size, len(sk.Features), defaultMinFingerprints)
		if g.json {
			q, raw := queryFields(file, abs)
			line := basisLine{Query: q, QueryRaw: raw, Size: resp.Size, Basis: resp.Basis,
				CompressedBytes: resp.CompressedBytes, Candidates: resp.Candidates, Repetitive: rep, FleetError: resp.FleetError}
			if err := g.printJSON(line); err != nil {
				return err
			}
			continue
		}
		printBasis(g, queryName(file), rep, false, resp)
	}
	switch {
	case errs > 0:
		return &statusError{code: exitError}
	case none:
		return nothing()
	}
	return nil
}

// printBasis writes the answer r for the query file; rep says it is
// repetitive, sig that it was asked with a signature: the answer is an
// estimate, and the cost of sending the file whole is its size.
func printBasis(g *globals, file string, rep, sig bool, r *ipc.BasisResponse) {
	w := g.stdout
	if e := r.FleetError; e != nil {
		defer fmt.Fprintf(g.stderr, "sifctl: %s: %s; the candidates listed are this host's only\n", file, e.Message)
	}
	name := func(c *ipc.BasisCandidate) string {
		return textPath(c.Host, ipc.FilePath{Path: c.Path, PathRaw: c.PathRaw})
	}
	if rep {
		fmt.Fprintf(w, "%s (%d bytes, repetitive: few distinct windows): ", file, r.Size)
	} else {
		fmt.Fprintf(w, "%s (%d bytes): ", file, r.Size)
	}
	switch b := r.Basis; {
	case b == nil && sig:
		fmt.Fprintf(w, "no basis: send it compressed (at most %d bytes, its size)\n", r.CompressedBytes)
	case b == nil:
		fmt.Fprintf(w, "no basis: send it compressed (about %d bytes)\n", r.CompressedBytes)
	case b.Identical:
		fmt.Fprintf(w, "identical to %s: nothing to send\n", name(b))
	case sig:
		fmt.Fprintf(w, "basis %s, about %d bytes to send%s (whole: %d)\n", name(b), b.EstimatedBytes, rangeText(b), r.CompressedBytes)
	default:
		fmt.Fprintf(w, "basis %s, about %d bytes to send%s (compressed: %d)\n", name(b), b.EstimatedBytes, rangeText(b), r.CompressedBytes)
	}
	if sig {
		fmt.Fprintf(w, "  %s\n", estimatedBasisNote)
	}
	for _, c := range r.Candidates {
		note := ""
		switch {
		case c.Identical:
			note = "  identical"
		case c.Changed:
			note = "  changed since indexed"
		}
		if c.EstimatedBytesHigh > 0 {
			note += fmt.Sprintf("  %d to %d", c.EstimatedBytesLow, c.EstimatedBytesHigh)
		}
		fmt.Fprintf(w, "  %9d  %s  %d%s\n", c.EstimatedBytes, name(&c), c.Size, note)
	}
}

// rangeText is ", between LOW and HIGH" for an estimate from fingerprints
// alone, which has a range, else "".
func rangeText(b *ipc.BasisCandidate) string {
	if b.EstimatedBytesHigh == 0 {
		return ""
	}
	return fmt.Sprintf(", between %d and %d", b.EstimatedBytesLow, b.EstimatedBytesHigh)
}

// estimatedBasisNote is what the text answer to a signature says.
const estimatedBasisNote = "estimated: the bytes were not sent (a signature); the deltas are estimated from fingerprints"

// basisSignatures answers `sifctl basis --signature`: each signature of
// the file is asked without the bytes.
func basisSignatures(qs *queries, f *basisFlags) error {
	g := qs.g
	fleetDown := 0
	answered, found, errs, err := qs.askSignatures(f.signature, func(s *signature) (bool, error) {
		req := &ipc.BasisRequest{QuerySketch: *s.q, Limit: f.limit, PathPrefix: qs.prefix, MaxDF: f.maxDF, Fleet: f.fleet}
		resp, err := qs.c.Basis(qs.ctx, req)
		if err != nil {
			return false, err
		}
		if resp.FleetError != nil {
			fleetDown++
		}
		rep := repetitive(qs.params, s.q.Size, len(s.q.Features), defaultMinFingerprints)
		if g.json {
			line := basisLine{Size: resp.Size, Basis: resp.Basis, CompressedBytes: resp.CompressedBytes,
				Candidates: resp.Candidates, Repetitive: rep, Signature: s.ref(), Estimated: true, FleetError: resp.FleetError}
			line.Query, line.QueryRaw = s.fields()
			return resp.Basis != nil, g.printJSON(line)
		}
		printBasis(g, s.name(), rep, true, resp)
		return resp.Basis != nil, nil
	})
	switch {
	case err != nil:
		return err
	case errs > 0 || fleetDown > 0:
		return &statusError{code: exitError}
	case found < answered:
		return nothing()
	}
	return nil
}
