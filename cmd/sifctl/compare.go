package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/cmd/internal/cliflags"
	"github.com/sif-dev/sif/index/explain"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// compareLine is the --json output of compare: one entry per scheme.
type compareLine struct {
	A         string          `json:"a"`
	B         string          `json:"b"`
	SizeA     int64           `json:"size_a"`
	SizeB     int64           `json:"size_b"`
	Identical bool            `json:"identical"`
	Schemes   []compareScheme `json:"schemes"`
	// SumDistance is the SimiHash sum-table distance.
	SumDistance uint64 `json:"simihash_distance"`
	// Explain is what the files share, with --explain.
	Explain *explain.Explanation `json:"explain,omitempty"`
}

type compareScheme struct {
	Params        string  `json:"params"`
	FingerprintsA int     `json:"fingerprints_a"`
	FingerprintsB int     `json:"fingerprints_b"`
	AInB          float64 `json:"a_in_b"` // percent of A found in B
	BInA          float64 `json:"b_in_a"`
	Resemblance   float64 `json:"resemblance"`
	SharedBytes   *int64  `json:"shared_bytes"`
}

func newCompareCmd(g *globals) *cobra.Command {
	var threshold float64
	var p fingerprint.Params
	var explainFlag bool
	var maxDF int
	cmd := &cobra.Command{
		Use:   "compare FILE1 FILE2",
		Short: "Compare two files directly (no daemon needed)",
		Long: `compare fingerprints two files and prints how much of each is found in the
other (containment, both ways), their resemblance (shared over union) and the
bytes they share (a lower bound, from content-defined chunks), under the
manber and chunks schemes. It needs no daemon. --scheme and its parameters
replace the two defaults with one scheme; a parameter alone selects the
default scheme, manber. A parameter of the other scheme (--avg-chunk with
manber, --window with chunks) is an error.

--explain also shows which parts the files share: runs of whole lines
(byte ranges when either file is binary), found exactly on their bytes
whatever their line ends (CRLF or LF), with the share of each file they
cover, side by side (highlighted on a terminal, unless NO_COLOR is set).
When a sifd answers on the socket, a run whose fingerprints of FILE1 its
index holds in more than --max-df files (a licence header, boilerplate)
is marked "~": sifctl similar FILE1 would not count it. With --json the
runs are in "explain":
  {"a": SIDE, "b": SIDE, "unit": "lines"|"bytes", "runs": [{"a_lines": [FIRST,
   LAST], "b_lines": [FIRST, LAST], "a_bytes": [OFFSET, LENGTH], "b_bytes":
   [OFFSET, LENGTH], "boilerplate": BOOL}, ...], "a_share": PCT, "b_share": PCT,
   "a_boilerplate_share": PCT, "b_boilerplate_share": PCT,
   "boilerplate_judged": BOOL, "note": TEXT}
with SIDE {"path", "size", "type": "text"|"binary", "lines"}. Runs are in
A's order and never overlap in A; lines count from 1 (unit "lines" only);
a share is the percent of the file its runs cover, a boilerplate share the
part covered only by boilerplate runs; "note" says why boilerplate was not
judged (no daemon answered). Files over 64 MiB are not explained.

Exit status: 0 when the files are identical or one contains at least
--threshold percent of the other, 1 otherwise, 2 on error.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if threshold < 0 || threshold > 100 {
				return failedf("--threshold %v: want a percentage from 0 to 100", threshold)
			}
			schemes := []fingerprint.Params{{Scheme: fingerprint.Manber}, {Scheme: fingerprint.Chunks}}
			if p != (fingerprint.Params{}) {
				// A scheme parameter without --scheme selects the
				// default scheme only; one of the other scheme is an
				// error, not silently dropped.
				how := ""
				if p.Scheme == "" {
					p.Scheme, how = fingerprint.DefaultParams().Scheme, "the default"
				}
				if err := cliflags.CheckParams(cmd.Flags(), p.Scheme, how); err != nil {
					return failed(err)
				}
				schemes = []fingerprint.Params{p}
			}
			out := compareLine{A: args[0], B: args[1]}
			similar := false
			for i, sp := range schemes {
				sp, err := sp.Normalize()
				if err != nil {
					return failed(err)
				}
				a, err := sketch(cmd.Context(), args[0], sp)
				if err != nil {
					return failed(err)
				}
				b, err := sketch(cmd.Context(), args[1], sp)
				if err != nil {
					return failed(err)
				}
				c := fingerprint.Compare(a, b)
				if i == 0 {
					out.SizeA, out.SizeB, out.Identical, out.SumDistance = a.Size, b.Size, c.Identical, c.SumDistance
				}
				cs := compareScheme{Params: sp.String(), FingerprintsA: len(a.Features), FingerprintsB: len(b.Features),
					AInB: pct(c.AInB), BInA: pct(c.BInA), Resemblance: pct(c.Resemblance)}
				if c.SharedBytes >= 0 {
					n := c.SharedBytes
					cs.SharedBytes = &n
				}
				out.Schemes = append(out.Schemes, cs)
				if cs.AInB >= threshold || cs.BInA >= threshold {
					similar = true
				}
			}
			var a, b []byte
			if maxDF < -1 {
				return failedf("--max-df %d: want -1 (no cap), 0 (the daemon's default) or a count", maxDF)
			}
			if explainFlag {
				var err error
				if out.Explain, a, b, err = explainPair(cmd.Context(), g, args[0], args[1], maxDF); err != nil {
					return failed(err)
				}
			}
			if g.json {
				if err := g.printJSON(out); err != nil {
					return err
				}
			} else {
				printCompare(g, &out)
				if out.Explain != nil {
					fmt.Fprintln(g.stdout)
					if err := out.Explain.WriteText(g.stdout, a, b, g.textOptions()); err != nil {
						return failed(err)
					}
				}
			}
			if !similar && !out.Identical {
				return nothing()
			}
			return nil
		},
	}
	cliflags.Float64Var(cmd.Flags(), &threshold, "threshold", 25, "percentage that makes the files similar, for the exit status")
	cliflags.AddParams(cmd.Flags(), &p, `compare under one scheme only: "manber" or "chunks"`)
	cmd.Flags().BoolVar(&explainFlag, "explain", false, "show the runs of lines (or bytes) the files share")
	cmd.Flags().IntVar(&maxDF, "max-df", 0, "with --explain: fingerprints found in more than this many indexed files are boilerplate (0: the daemon's default)")
	return cmd
}

// sketch reads the file named file whole, stopping when ctx is done.
func sketch(ctx context.Context, file string, p fingerprint.Params) (*fingerprint.Sketch, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	// The whole sketch: compare prints the SimiHash distance too.
	f, err := ipc.OpenRegular(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sk, err := fingerprint.SketchReader(ipc.ContextReader(ctx, f), p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", abs, err)
	}
	return sk, nil
}

// explainPair reads the two files and explains what they share, marking
// the boilerplate when a daemon answers. It returns the bytes it read,
// for the text view.
func explainPair(ctx context.Context, g *globals, fa, fb string, maxDF int) (*explain.Explanation, []byte, []byte, error) {
	var abs [2]string
	var data [2][]byte
	for i, f := range []string{fa, fb} {
		var err error
		if abs[i], err = filepath.Abs(f); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		if data[i], _, err = readWhole(abs[i]); err != nil {
			return nil, nil, nil, err
		}
	}
	e, err := explain.Explain(data[0], data[1], nil)
	if err != nil {
		return nil, nil, nil, err
	}
	e.A.Path, e.A.PathRaw = ipc.PathFields(fa)
	e.B.Path, e.B.PathRaw = ipc.PathFields(fb)
	judgeByDaemon(ctx, g, e, abs[0], data[0], maxDF)
	return e, data[0], data[1], nil
}

func pct(x float64) float64 { return float64(int64(x*10000+0.5)) / 100 }

func printCompare(g *globals, c *compareLine) {
	w := g.stdout
	fmt.Fprintf(w, "A: %s (%d bytes)\nB: %s (%d bytes)\n", c.A, c.SizeA, c.B, c.SizeB)
	if c.Identical {
		fmt.Fprintln(w, "identical content")
	}
	for _, s := range c.Schemes {
		fmt.Fprintf(w, "%s: %d and %d fingerprints\n", s.Params, s.FingerprintsA, s.FingerprintsB)
		fmt.Fprintf(w, "  A in B %6.2f%%   B in A %6.2f%%   resemblance %6.2f%%", s.AInB, s.BInA, s.Resemblance)
		if s.SharedBytes != nil {
			fmt.Fprintf(w, "   shared bytes >= %d", *s.SharedBytes)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "SimiHash sum-table distance: %d\n", c.SumDistance)
}
