package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/cmd/internal/cliflags"
	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/index/explain"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// compareLine is the --json output of compare: one entry per scheme.
type compareLine struct {
	A         string `json:"a"`
	B         string `json:"b"`
	SizeA     int64  `json:"size_a"`
	SizeB     int64  `json:"size_b"`
	Identical bool   `json:"identical"`
	// Checked is the measure sifctl similar A reports for B once it has
	// checked it on the bytes; nil when similar would keep its estimate
	// (B larger than ipc.MaxCheckSize, or no window of A to compare).
	Checked *compareCheck   `json:"checked"`
	Schemes []compareScheme `json:"schemes"`
	// SumDistance is the SimiHash sum-table distance (SimiHash.SumDistance,
	// kept for the clients that read it here).
	SumDistance uint64          `json:"simihash_distance"`
	SimiHash    compareSimiHash `json:"simihash"`
	// Explain is what the files share, with --explain.
	Explain *explain.Explanation `json:"explain,omitempty"`
}

// compareCheck is the check of B as a match of query A, made as the
// daemon makes it (see checkPair), in percent but for SharedBytes.
type compareCheck struct {
	Containment        float64 `json:"containment"`         // of A in B
	ReverseContainment float64 `json:"reverse_containment"` // of B in A
	Resemblance        float64 `json:"resemblance"`
	// SharedBytes is the smaller of A's bytes in a window found in B and
	// B's bytes in a window found in A: at most either file's size.
	SharedBytes int64  `json:"shared_bytes"`
	Measure     string `json:"measure"` // "exact" or "sampled", as in similar
}

// compareSimiHash is the SimiHash comparison of A and B. The distances are
// also given in percent of A's size, since SimiFind's tolerances are
// proportional to the size of the file it asks about; the verdict is
// SimiFind's for query A and candidate B under the default tolerances
// (fingerprint.Tolerances.Judge), what sifctl similar --by simihash A
// would say of B.
type compareSimiHash struct {
	KeyA        uint32  `json:"key_a"` // skew keys
	KeyB        uint32  `json:"key_b"`
	KeyDistance uint64  `json:"key_distance"`
	KeyPct      float64 `json:"key_distance_pct"` // of A's size
	SumDistance uint64  `json:"sum_distance"`
	SumPct      float64 `json:"sum_distance_pct"` // of A's size
	// Tolerances are SimiFind's defaults; KeyTolerance and SumTolerance
	// the distances they allow for A's size, SizesClose whether B's size
	// is within the size ratio of A's.
	Tolerances   fingerprint.Tolerances `json:"tolerances"`
	KeyTolerance uint64                 `json:"key_tolerance"`
	SumTolerance uint64                 `json:"sum_tolerance"`
	SizesClose   bool                   `json:"sizes_close"`
	// Similar: similar --by simihash A would list B (key and sum
	// distances within their tolerances, sizes close).
	Similar bool `json:"similar"`
}

// compareScheme is one scheme's estimate, from fingerprints: what sifctl
// similar --fast reports under that scheme.
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
		Long: `compare reads two files, A (FILE1) and B (FILE2), and says how much of
each is found in the other, in the words sifctl similar uses. It needs no
daemon.

  checked:   what 'sifctl similar A' reports for B once it has checked B on
             the bytes (as it checks its best matches): the containment of A
             in B (the share of A's 32-byte windows found in B; the
             percentage similar lists), the reverse containment (of B in A:
             what 'similar B' lists for A), the resemblance (windows in both
             over windows in either) and the shared bytes (the bytes of
             either file lying in a window found in the other, the smaller
             of the two counts, so never more than either size). "exact"
             counts every window; "sampled" a sample of them, as similar
             does past 1 MiB. A B over 16 MiB is not checked, as similar
             does not check it.
  manber:    the index's estimate from fingerprints, what 'sifctl similar
             --fast' reports (but for the fingerprints an index finds too
             common to count): containment of A in B and of B in A,
             resemblance (shared over union).
  chunks:    the same estimates from content-defined chunks, with the bytes
             of the chunks both files hold (a lower bound on shared bytes).
  SimiHash:  not a share but two distances, each 0 for files with equal
             counts: the skew keys' difference and the sum tables' (the sum
             of the differences of the 16 tag counts), also in percent of
             A's size, since SimiHash's tolerances are proportional to it;
             each beside its default tolerance, and SimiFind's verdict:
             whether 'sifctl similar --by simihash A' lists B.

--scheme and its parameters replace the two estimates with one scheme's; a
parameter alone selects the default scheme, manber. A parameter of the
other scheme (--avg-chunk with manber, --window with chunks) is an error.

With --json: {"a", "b", "size_a", "size_b", "identical", "checked":
{"containment", "reverse_containment", "resemblance", "shared_bytes",
"measure"} or null, "schemes": [{"params", "fingerprints_a",
"fingerprints_b", "a_in_b", "b_in_a", "resemblance", "shared_bytes"},
...], "simihash": {"key_a", "key_b", "key_distance", "key_distance_pct",
"sum_distance", "sum_distance_pct", "tolerances": {"key", "size_ratio",
"sum"}, "key_tolerance", "sum_tolerance", "sizes_close", "similar"}},
percentages from 0 to 100 (tolerances as fractions).

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
--threshold percent of the other (checked, or estimated when there is no
check), 1 otherwise, 2 on error.`,
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
			estimated := false // an estimate reaches the threshold
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
					out.SizeA, out.SizeB, out.Identical = a.Size, b.Size, c.Identical
					out.SimiHash = simiCompare(a, b)
					out.SumDistance = out.SimiHash.SumDistance
				}
				cs := compareScheme{Params: sp.String(), FingerprintsA: len(a.Features), FingerprintsB: len(b.Features),
					AInB: pct(c.AInB), BInA: pct(c.BInA), Resemblance: pct(c.Resemblance)}
				if c.SharedBytes >= 0 {
					n := c.SharedBytes
					cs.SharedBytes = &n
				}
				out.Schemes = append(out.Schemes, cs)
				if cs.AInB >= threshold || cs.BInA >= threshold {
					estimated = true
				}
			}
			var err error
			if out.Checked, err = checkPair(cmd.Context(), args[0], args[1]); err != nil {
				return failed(err)
			}
			similar := estimated
			if ck := out.Checked; ck != nil {
				similar = ck.Containment >= threshold || ck.ReverseContainment >= threshold
			}
			var a, b []byte
			if maxDF < -1 {
				return failedf("--max-df %d: want -1 (no cap), 0 (the daemon's default) or a count", maxDF)
			}
			if explainFlag {
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

// checkPair checks B as a match of query A the way sifctl similar A has
// the daemon check it (ipc/server's check): A is read as similar reads a
// query (its bytes, or past ipc.MaxContent a signature of its windows) and
// measured against B's bytes. It returns nil when similar would keep the
// index's estimate: B larger than ipc.MaxCheckSize, or no window of A kept
// at the sampling level.
//
// The measure's shared bytes are A's bytes lying in a window found in B,
// which exceed B's size when A repeats what it shares with B (a
// duplicated paragraph counts twice in A, once in B). So B is also
// measured against A, and the shared bytes are the smaller of the two
// counts: at most either file's size.
func checkPair(ctx context.Context, fa, fb string) (*compareCheck, error) {
	ab, err := measurePair(ctx, fa, fb)
	if err != nil || ab == nil {
		return nil, err
	}
	ba, err := measurePair(ctx, fb, fa)
	if err != nil {
		return nil, err
	}
	c := &compareCheck{Containment: pct(ab.Containment), ReverseContainment: pct(ab.ReverseContainment),
		Resemblance: pct(ab.Resemblance), SharedBytes: min(ab.SharedBytes, ab.Size), Measure: ipc.MeasureExact}
	if ba != nil {
		c.SharedBytes = min(c.SharedBytes, ba.SharedBytes)
	}
	if ab.Level > 0 {
		c.Measure = ipc.MeasureSampled
	}
	return c, nil
}

// measurePair measures query file fq against candidate file fc as the
// daemon does (see checkPair), or returns nil when it would not.
func measurePair(ctx context.Context, fq, fc string) (*exact.Measure, error) {
	aq, err := filepath.Abs(fq)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fq, err)
	}
	ac, err := filepath.Abs(fc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fc, err)
	}
	sk, d, err := ipc.QueryFileContext(ctx, aq, fingerprint.DefaultParams(), ipc.ReadOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", aq, err)
	}
	var q *exact.Query
	if w := d.Windows; w != nil {
		sig := make([]uint64, len(w.Hashes)/8)
		for i := range sig {
			sig[i] = binary.BigEndian.Uint64(w.Hashes[8*i:])
		}
		if q, err = exact.NewSignatureQuery(sk.Size, w.Level, sig); err != nil {
			return nil, fmt.Errorf("%s: %w", aq, err)
		}
	} else {
		q = exact.NewQuery(d.Content)
	}
	defer q.Release()
	f, err := ipc.OpenRegular(ac)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ac, err)
	}
	if st.Size() > ipc.MaxCheckSize {
		return nil, nil
	}
	m, err := q.Measure(ipc.ContextReader(ctx, f), st.Size())
	switch {
	case errors.Is(err, exact.ErrNoEvidence):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", ac, err)
	}
	return &m, nil
}

// simiCompare compares the SimiHash sum tables and skew keys of a and b,
// and judges b as SimiFind would for query a under the default tolerances.
func simiCompare(a, b *fingerprint.Sketch) compareSimiHash {
	t := fingerprint.DefaultTolerances()
	v := t.Judge(&a.Summary, &b.Summary)
	s := compareSimiHash{KeyA: a.Key, KeyB: b.Key, KeyDistance: v.KeyDistance, SumDistance: v.SumDistance,
		Tolerances: t, KeyTolerance: v.KeyTolerance, SumTolerance: v.SumTolerance, SizesClose: v.SizesClose, Similar: v.Similar}
	if a.Size > 0 {
		s.KeyPct = pct(float64(s.KeyDistance) / float64(a.Size))
		s.SumPct = pct(float64(s.SumDistance) / float64(a.Size))
	}
	return s
}

func printCompare(g *globals, c *compareLine) {
	w := g.stdout
	fmt.Fprintf(w, "A: %s (%d bytes)\nB: %s (%d bytes)\n", quoteName(c.A), c.SizeA, quoteName(c.B), c.SizeB)
	if c.Identical {
		fmt.Fprintln(w, "identical content")
	}
	if k := c.Checked; k != nil {
		fmt.Fprintf(w, "checked on the bytes (%s), as sifctl similar reports a match it checked:\n", k.Measure)
		fmt.Fprintf(w, "  containment of A in B %6.2f%%   (similar A lists B at this)\n", k.Containment)
		fmt.Fprintf(w, "  containment of B in A %6.2f%%   (similar B lists A at this)\n", k.ReverseContainment)
		fmt.Fprintf(w, "  resemblance           %6.2f%%   (windows in both over windows in either)\n", k.Resemblance)
		fmt.Fprintf(w, "  shared bytes          %7d   (of each file, in a window found in the other: the smaller count)\n", k.SharedBytes)
	} else {
		fmt.Fprintf(w, "not checked on the bytes: B is over %d MiB, or A has no window to compare; sifctl similar reports its estimate\n", ipc.MaxCheckSize>>20)
	}
	for _, s := range c.Schemes {
		fmt.Fprintf(w, "%s, estimated from %d and %d fingerprints (as similar --fast reports it):\n", s.Params, s.FingerprintsA, s.FingerprintsB)
		fmt.Fprintf(w, "  A in B %6.2f%%   B in A %6.2f%%   resemblance %6.2f%%", s.AInB, s.BInA, s.Resemblance)
		if s.SharedBytes != nil {
			fmt.Fprintf(w, "   shared bytes >= %d (whole chunks in both)", *s.SharedBytes)
		}
		fmt.Fprintln(w)
	}
	h := c.SimiHash
	fmt.Fprintln(w, "SimiHash, distances (0 for equal tag counts; smaller is more alike):")
	rel := func(p float64) string {
		if c.SizeA == 0 {
			return "A is empty"
		}
		return fmt.Sprintf("%.2f%% of A's size", p)
	}
	fmt.Fprintf(w, "  key distance        %d (%s; skew keys %d and %d), tolerance %d (%g%% of A's size)\n",
		h.KeyDistance, rel(h.KeyPct), h.KeyA, h.KeyB, h.KeyTolerance, 100*h.Tolerances.Key)
	fmt.Fprintf(w, "  sum-table distance  %d (%s), tolerance %d (%g%% of A's size)\n", h.SumDistance, rel(h.SumPct), h.SumTolerance, 100*h.Tolerances.Sum)
	fmt.Fprintf(w, "  sizes               %s (size ratio %g)\n", map[bool]string{true: "close", false: "too far apart"}[h.SizesClose], h.Tolerances.SizeRatio)
	fmt.Fprintf(w, "  %s\n", simiVerdictLine(h))
}

// simiVerdictLine says whether SimiFind calls the pair similar, and if
// not, why: the first test it fails, in SimiFind's order.
func simiVerdictLine(h compareSimiHash) string {
	const lists = "similar: 'sifctl similar --by simihash A' lists B"
	switch {
	case h.Similar:
		return lists
	case h.KeyDistance > h.KeyTolerance:
		return "not similar by SimiHash: the key distance is over its tolerance, so 'similar --by simihash A' does not list B"
	case !h.SizesClose:
		return "not similar by SimiHash: the sizes are too far apart, so 'similar --by simihash A' does not list B"
	}
	return "not similar by SimiHash: the sum-table distance is over its tolerance, so 'similar --by simihash A' does not list B"
}
