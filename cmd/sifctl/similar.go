package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/cmd/internal/cliflags"
	"github.com/sif-dev/sif/index/explain"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/dirsim"
)

type similarFlags struct {
	threshold float64
	limit     int
	sizeRatio float64
	sameExt   bool
	sameType  bool
	prefix    string
	maxDF     int
	fast      bool
	explain   bool
	signature string
	fleet     bool
	by        string
	keyTol    float64 // --key-tolerance, percent of the size
	sumTol    float64 // --sum-tolerance, percent of the size
}

// similarLine is one line of `sifctl similar --json`.
type similarLine struct {
	Query        string `json:"query"`
	QueryRaw     string `json:"query_raw,omitempty"`
	Size         int64  `json:"size"`
	Fingerprints int    `json:"fingerprints"`
	Skipped      int    `json:"skipped"`
	TooFew       bool   `json:"too_few"`
	// Repetitive: the query has few distinct windows (zeros, one repeated
	// byte, a short pattern), hence fewer fingerprints than its size
	// would give: not too small, but too uniform to judge by them.
	Repetitive bool `json:"repetitive"`
	// Template: the query is mostly content found in many files (one of a
	// family made from a template or form); Total is how many files
	// passed the threshold, before --limit.
	Template bool        `json:"template"`
	Total    int         `json:"total"`
	Checked  int         `json:"checked"`
	Matches  []ipc.Match `json:"matches"`
	// Signature names the line of the signature file the query was read
	// from (--signature); Estimated says the answer is then the index's
	// estimate: the query's bytes were not sent, so no match was checked
	// against them.
	Signature *signatureRef `json:"signature,omitempty"`
	Estimated bool          `json:"estimated,omitempty"`
	// FleetError is set when --fleet asked the fleet and it did not
	// answer: the matches are this host's only, and the exit status is 2.
	FleetError *ipc.Error `json:"fleet_error,omitempty"`
}

// similarExplained is one line of `sifctl similar --explain --json`.
type similarExplained struct {
	similarLine
	Matches []explainedMatch `json:"matches"`
}

func newSimilarCmd(g *globals) *cobra.Command {
	var f similarFlags
	cmd := &cobra.Command{
		Use:   "similar [flags] FILE...|DIR...|- | --signature SIGFILE",
		Short: "List the indexed files that contain a good part of each FILE",
		Long: `similar fingerprints each FILE (it need not be indexed, or even under a
root) and lists the indexed files that contain at least --threshold percent
of it, best first, in the spirit of Manber's sif:

  /home/ann/draft.c (10763 bytes, 42 fingerprints):
    100%  /srv/src/foo.c  10763  identical
     79%  /srv/src/bar.c  10979

The percentage is the containment of FILE in the listed file: the share of
FILE's fingerprints found there. The file itself is not listed. Fingerprints
found in very many indexed files (boilerplate, licence headers) are ignored
above --max-df: the count ignored is shown, and the percentage is of FILE's
distinctive part. A FILE that is mostly such fingerprints (one of a family
of files made from one template or form, or the template itself) is a
template: they are counted, the answer is its family, the closest first,
with how many files it holds, and the matches found through them are
marked "template":

  /srv/types/op0007.d.ts (1930 bytes, 57 fingerprints):
    template: most of this file is found in more than 200 files; 1999 files hold 25% or more of it, the closest first
     97%  /srv/types/op0008.d.ts  1930  template
     ...
    and 1979 more files (--limit)

A file too small, or too common, to carry enough
fingerprints is reported as such, and only identical files are listed for
it; so is one too repetitive (few distinct windows: zeros, one repeated
byte, a short pattern), which is "repetitive" even when the check below
judges it. FILE must be a regular file: fifos, sockets and devices are
refused at once. A FILE that changes while sifctl reads it is not
queried: it is an error. "-" reads the query from
standard input (once); it has no path, so an indexed file identical to it
is listed too.

The best matches are then checked: sifctl sends FILE's bytes (a signature
of its 32-byte windows past 1 MiB), and the daemon measures the 8 best by
the estimate (plus ties, while it has read less than 8 MiB of them) on
their current bytes, over 32-byte windows: exact containment,
resemblance and shared bytes ("measure": "exact", or "sampled" past 1
MiB). They are listed first, by containment, then resemblance, then how
much of FILE's path they share; a match changed since it was indexed is
measured as it is now and marked, one deleted is left out, and one
identical to FILE and unchanged since is not read again. --fast keeps
the index's estimates ("measure": "estimated").

With --json, one object per FILE and line:
  {"query": PATH, "size": N, "fingerprints": N, "skipped": N, "too_few": BOOL,
   "repetitive": BOOL, "template": BOOL, "total": N, "matches": [{"path": ABSOLUTE_PATH,
   "size": N, "containment": PCT, "reverse_containment": PCT, "resemblance": PCT,
   "shared_bytes": N or null, "identical": BOOL, "type": "text"|"binary", "mtime_ns": N,
   "measure": "exact"|"sampled"|"estimated", "changed": BOOL, "template": BOOL}, ...],
   "checked": N}
A FILE that failed is said on stderr and, with --json, has in its place
the line {"query": PATH, "error": {"code": CODE, "message": TEXT}}; the
next FILE is asked, and the exit status is 2. CODE is one of
  not_found     no such file
  unreadable    permission denied, or an I/O error
  not_regular   a fifo, socket or device (or a directory where files are
                compared: --explain, --by simihash)
  changed       the file changed while sifctl read it: run it again
  too_large     more fingerprints than the daemon takes in one query, or
                too large to explain
  bad_prefix    --prefix is under no root of the daemon (nor above one)
or another code of the daemon's refusal (ipc/API.md). A daemon that cannot
be reached, or answers none (busy, shutting down), ends the command.

--explain shows, under each match, which parts of FILE and of the match
are shared: runs of whole lines (byte ranges for binary files) found on
their current bytes, with the share of each file they cover, side by side
(highlighted on a terminal, unless NO_COLOR is set). A run whose
fingerprints the index holds in more than --max-df files (a licence
header, boilerplate) is marked "~": it did not count. sifctl reads the
matches itself: a match it cannot read is said to be so, and one that
changed since it was indexed is explained as it is now. With --json each
match gets "explain" (the form 'sifctl compare --help' shows) or
"explain_error".

A DIR (any argument that is a directory; it need not be indexed) lists the
indexed directories that hold a good part of it, one line per copy, at its
top:

  proj (directory, 10 files, 62519 bytes):
    100%  /srv/src/proj  62519  10 identical, 0 similar, 0 missing; reverse 100%
     78%  /srv/backup/2024/proj  58120  7 identical, 2 similar, 1 missing; reverse 81%

sifctl walks DIR (symlinks are not followed; special and empty files are
skipped and counted; a file or directory it cannot read is named on stderr
and makes the exit status 2 once the answer is printed), fingerprints each
file as --fast does and asks for its matches. A directory's percentage is
the share of DIR's bytes found in files under it (an identical file whole,
a similar one by its containment); "reverse" is the share of the bytes
indexed under it found in DIR. A directory above a copy that holds nothing
more of DIR is not listed, nor a part of a listed copy (its src/). The
numbers are the index's estimates: no candidate is read. With --json, one
line per DIR: {"query": PATH, "dir": true, "size": N, "files": N, "empty":
N, "special": N, "unreadable": N, "matches": [{"path", "size",
"indexed_files", "containment", "reverse_containment", "resemblance",
"shared_bytes", "files": {"identical", "similar", "missing"}, "measure":
"estimated", "truncated"?}, ...], "elapsed_ns": N}; "truncated" says the
directory holds more than 200,000 indexed files, which were not all counted.

--signature SIGFILE asks with saved signatures instead of files: the lines
'sifctl sketch' prints (SIGFILE a file of them, "-" standard input), one
query per line, answered in order as FILEs are. The daemon gets the
fingerprints and not the bytes, so the answer is the one the file itself
gets with --fast: the index's estimates, and the output says so:

  draft.sig:1: /home/ann/draft.c (10763 bytes, 42 fingerprints):
    estimated: the bytes were not sent (a signature); no match was checked against them
     79%  /srv/src/bar.c  10979

With --json the line also has "signature": {"file": SIGFILE, "line": N}
and "estimated": true, and "query" is the signature's path ("-" when it
has none). A line that is not a signature of this index (not JSON,
truncated, longer than 64 MiB, made with other parameters) is named, with
its file and line, on stderr and with --json as {"query", "signature",
"error": {"code": "bad_signature"|"params_mismatch"|CODE, "message"}};
the next line is asked, and the exit status is 2.

--fleet asks the fleet index too (sifd with a [fleet] table; for root, sifd's
user and the fleet's ask group): every match then names its host (HOST:PATH,
"host" in JSON); this host's are checked as usual, other hosts' are
estimates from fingerprints ("estimated"). For a DIR, the directories on
every host that hold a good part of it: a directory on another host is
another directory, even at DIR's own path (a copy kept in the same place
is listed as HOST:DIR), its top is the highest root that host publishes,
and its reverse containment comes from the files and bytes the host
published under it. When the fleet does not answer in time, this host's
matches (or directories) are listed, the error is said on stderr (and as
"fleet_error" with --json), and the exit status is 2.

-0 (--null) prints, for scripts, the matches' names and nothing else, as
find -print0 does: each match (each directory, for a DIR) as it is,
unquoted (HOST:PATH with --fleet), ended by a NUL byte, best first; with
several FILEs, the matches of each in turn, so a file may come more than
once. The queries, percentages and notes are left out (--json has them);
--explain is not taken. For example:

  sifctl similar -0 --threshold 90 draft.c | xargs -0 ls -l

` + simiHashHelp,
		Args: func(cmd *cobra.Command, args []string) error { return queryArgs(cmd, f.signature, args) },
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSimilar(cmd, g, &f, args)
		},
	}
	fl := cmd.Flags()
	cliflags.Float64Var(fl, &f.threshold, "threshold", 25, "least percentage of FILE a match must contain")
	fl.IntVar(&f.limit, "limit", 0, "list at most this many matches per FILE (0: all)")
	cliflags.Float64Var(fl, &f.sizeRatio, "size-ratio", 0, "drop matches whose size differs from FILE's by more than this factor (0: any size)")
	fl.BoolVar(&f.sameExt, "same-ext", false, "only matches with FILE's extension")
	fl.BoolVar(&f.sameType, "same-type", false, "only matches of FILE's type (text or binary)")
	fl.StringVar(&f.prefix, "prefix", "", "only matches in this directory tree (whole path components; relative to the current directory)")
	fl.IntVar(&f.maxDF, "max-df", 0, "ignore fingerprints found in more than this many files (0: the daemon's default, -1: none)")
	fl.BoolVar(&f.fast, "fast", false, "keep the index's estimates: do not check the best matches against their bytes")
	fl.BoolVar(&f.explain, "explain", false, "show the runs of lines (or bytes) each match shares with FILE")
	fl.StringVar(&f.signature, "signature", "", `ask with the signatures in this file ("-": standard input), as 'sifctl sketch' prints them, instead of FILEs`)
	fl.BoolVar(&f.fleet, "fleet", false, "ask the fleet index too: matches on every host of the fleet, each with its host (see 'sifctl fleet --help')")
	fl.StringVar(&f.by, "by", ipc.ByManber, `how to find matches: "manber" (fingerprints: files holding a good part of FILE) or "simihash" (SimiFind: near-identical files, within a few percent)`)
	d := fingerprint.DefaultTolerances()
	cliflags.Float64Var(fl, &f.keyTol, "key-tolerance", 100*d.Key, "--by simihash: greatest key distance, in percent of FILE's size")
	cliflags.Float64Var(fl, &f.sumTol, "sum-tolerance", 100*d.Sum, "--by simihash: greatest sum-table distance, in percent of FILE's size")
	g.nullFlag(cmd)
	return cmd
}

func runSimilar(cmd *cobra.Command, g *globals, f *similarFlags, files []string) error {
	if err := checkSimiFlags(cmd, f); err != nil {
		return err
	}
	if f.by == ipc.BySimiHash {
		if f.sizeRatio != 0 && f.sizeRatio < 1 {
			return failedf("--size-ratio %v: want 0 (the default) or a factor of at least 1", f.sizeRatio)
		}
		qs, err := startQueries(cmd, g, f.prefix, files)
		if err != nil {
			return err
		}
		return similarBySimiHash(qs, f, files)
	}
	if f.threshold < 0 || f.threshold > 100 {
		return failedf("--threshold %v: want a percentage from 0 to 100", f.threshold)
	}
	if f.sizeRatio != 0 && f.sizeRatio < 1 {
		return failedf("--size-ratio %v: want 0 (any size) or a factor of at least 1", f.sizeRatio)
	}
	if f.fleet && f.explain {
		return failedf("--explain shows the bytes a match shares; the fleet's files are on other hosts (drop --fleet or --explain)")
	}
	if g.null && f.explain {
		return failedf("--explain shows the runs each match shares, which --null, a list of names, leaves out: give one of them")
	}
	if f.signature != "" && f.explain {
		return failedf("--explain shows the bytes FILE shares; a signature (--signature) carries none")
	}
	qs, err := startQueries(cmd, g, f.prefix, files)
	if err != nil {
		return err
	}
	if f.signature != "" {
		return similarSignatures(qs, f)
	}
	ctx, c, prefix := qs.ctx, qs.c, qs.prefix
	found, errs := false, 0
	for _, file := range files {
		if isDir(file) { // directory similarity: similarDir, below
			abs, _ := filepath.Abs(file)
			if f.explain {
				errs++
				if err := g.queryError(file, abs, codeNotRegular, file+": is a directory; --explain compares files"); err != nil {
					return err
				}
				continue
			}
			ok, incomplete, err := similarDir(ctx, g, c, qs.params, f, prefix, file)
			if err != nil {
				if err := g.dirFailed(file, abs, err); err != nil {
					return err
				}
				errs++
				continue
			}
			found = found || ok
			if incomplete {
				errs++
			}
			continue
		}
		var qbytes []byte // the query's bytes, for --explain
		if f.explain {
			if qbytes, err = readExplainQuery(g, file); err != nil {
				abs, _ := filepath.Abs(file)
				if file == "-" {
					abs = ""
				}
				errs++
				if err := g.queryFailed(file, abs, err); err != nil {
					return err
				}
				continue
			}
		}
		abs, sk, data, ok, err := qs.read(file, ipc.ReadOptions{}, !f.fast)
		if err != nil {
			return err
		}
		if !ok {
			errs++
			continue
		}
		// A query read from standard input has no path: no file is
		// excluded as itself.
		req := ipc.NewSimilarRequest(abs, sk)
		req.Attach(data)
		req.Fast = f.fast
		req.Threshold = &f.threshold
		req.Limit, req.SizeRatio, req.SameExt, req.SameType = f.limit, f.sizeRatio, f.sameExt, f.sameType
		req.PathPrefix, req.MaxDF = prefix, f.maxDF
		req.ListCommon = f.explain
		req.Fleet = f.fleet
		resp, err := c.Similar(ctx, req)
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
		if len(resp.Matches) > 0 {
			found = true
		}
		if g.json {
			q, raw := queryFields(file, abs)
			line := similarLine{Query: q, QueryRaw: raw, Size: sk.Size, Fingerprints: resp.Fingerprints,
				Skipped: resp.Skipped, TooFew: resp.TooFew, Checked: resp.Checked, Matches: resp.Matches,
				Template: resp.Template, Total: resp.Total, FleetError: resp.FleetError,
				Repetitive: repetitive(qs.params, sk.Size, resp.Fingerprints, resp.MinFingerprints)}
			if f.explain {
				ex := similarExplained{similarLine: line, Matches: make([]explainedMatch, 0, len(resp.Matches))}
				for _, m := range resp.Matches {
					em := explainMatch(qbytes, explainName(file, abs), m, judgeFor(qbytes, qs.params, resp.Common))
					em.bytes = nil
					ex.Matches = append(ex.Matches, em)
				}
				if err := g.printJSON(ex); err != nil {
					return err
				}
				continue
			}
			if err := g.printJSON(line); err != nil {
				return err
			}
			continue
		}
		if err := printSimilar(g, queryName(file), sk.Size, f.threshold, repetitive(qs.params, sk.Size, resp.Fingerprints, resp.MinFingerprints), "", resp); err != nil {
			return failed(err)
		}
		if f.explain {
			printExplained(g, qbytes, explainName(file, abs), resp, qs.params)
		}
	}
	switch {
	case errs > 0:
		return &statusError{code: exitError}
	case !found:
		return nothing()
	}
	return nil
}

// printSimilar writes the answer r for the query file of size bytes;
// rep says it is repetitive; note, if not empty, is a line said of the
// whole answer.
func printSimilar(g *globals, file string, size int64, threshold float64, rep bool, note string, r *ipc.SimilarResponse) error {
	w := g.stdout
	if e := r.FleetError; e != nil {
		defer fmt.Fprintf(g.stderr, "sifctl: %s: %s; the matches listed are this host's only\n", file, e.Message)
	}
	if g.null {
		return matchRecords(w, r.Matches)
	}
	fmt.Fprintf(w, "%s (%d bytes, %d fingerprints", file, size, r.Fingerprints)
	if r.Skipped > 0 {
		fmt.Fprintf(w, ", %d too common to count", r.Skipped)
	}
	fmt.Fprintln(w, "):")
	if note != "" {
		fmt.Fprintf(w, "  %s\n", note)
	}
	switch {
	case rep && r.TooFew:
		fmt.Fprintf(w, "  too repetitive to judge similarity: few distinct windows (the same bytes repeat), %d distinct %s where at least %d are needed; identical files only\n",
			r.Fingerprints, plural(r.Fingerprints, "fingerprint", "fingerprints"), r.MinFingerprints)
	case rep:
		fmt.Fprintf(w, "  repetitive: few distinct windows (the same bytes repeat), %d distinct %s; matches are measured on its windows\n",
			r.Fingerprints, plural(r.Fingerprints, "fingerprint", "fingerprints"))
	case r.TooFew && r.Fingerprints >= r.MinFingerprints:
		fmt.Fprintf(w, "  too little distinctive content to judge similarity: %d of %d fingerprints are too common to count; identical files only\n",
			r.Skipped, r.Fingerprints)
	case r.TooFew:
		fmt.Fprintf(w, "  too small to judge similarity: %d fingerprints, at least %d needed; identical files only\n",
			r.Fingerprints, r.MinFingerprints)
	case r.Template:
		fmt.Fprintf(w, "  template: most of this file is found in more than %d files; %s %g%% or more of it, the closest first\n",
			r.MaxDF, count(r.Total, "file holds", "files hold"), threshold)
	}
	if len(r.Matches) == 0 {
		if r.TooFew {
			fmt.Fprintln(w, "  no identical file")
		} else {
			fmt.Fprintf(w, "  nothing similar at %g%% or more\n", threshold)
		}
		return nil
	}
	for _, m := range r.Matches {
		p := textPath(m.Host, ipc.FilePath{Path: m.Path, PathRaw: m.PathRaw})
		note := ""
		switch {
		case m.Identical:
			note = "  identical"
		case m.Changed:
			note = "  changed since indexed"
		case m.Template:
			note = "  template"
		}
		if m.Host != "" && m.Measure == ipc.MeasureEstimated && !m.Identical && note == "" {
			note = "  estimated"
		}
		fmt.Fprintf(w, "  %3.0f%%  %s  %d%s\n", m.Containment, p, m.Size, note)
	}
	if n := r.Total - len(r.Matches); n > 0 && len(r.Matches) > 0 {
		fmt.Fprintf(w, "  and %d more %s (--limit)\n", n, plural(n, "file", "files"))
	}
	return nil
}

// matchRecords writes the matches' names, one record each (--null).
func matchRecords(w io.Writer, matches []ipc.Match) error {
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = hostPath(m.Host, ipc.FilePath{Path: m.Path, PathRaw: m.PathRaw})
	}
	return writeRecords(w, false, names...)
}

// readExplainQuery reads the whole query for --explain: the file, or
// standard input, which is then read from memory by readQuery.
func readExplainQuery(g *globals, file string) ([]byte, error) {
	if file == "-" {
		b, err := readLimited(g.stdin, "standard input")
		if err != nil {
			return nil, err
		}
		g.stdin = bytes.NewReader(b)
		return b, nil
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	b, _, err := readWhole(abs)
	return b, err
}

// explainName is the query's name in an explanation: its absolute path,
// or "-" for standard input.
func explainName(file, abs string) string {
	if file == "-" {
		return "-"
	}
	return abs
}

// judgeFor marks boilerplate in explanations of query q from the hashes
// the daemon skipped.
func judgeFor(q []byte, p fingerprint.Params, common []string) func(*explain.Explanation) error {
	return func(e *explain.Explanation) error { return judge(e, q, p, common) }
}

// printExplained writes, after the list of matches, the side-by-side
// view of each, reading each match as it goes.
func printExplained(g *globals, q []byte, qname string, r *ipc.SimilarResponse, p fingerprint.Params) {
	o := g.textOptions()
	for _, m := range r.Matches {
		fmt.Fprintln(g.stdout)
		em := explainMatch(q, qname, m, judgeFor(q, p, r.Common))
		if em.Explain == nil {
			fmt.Fprintf(g.stdout, "%s: cannot explain: %s\n", quoteName(exactPath(m.Path, m.PathRaw)), em.ExplainError)
			continue
		}
		em.Explain.WriteText(g.stdout, q, em.bytes, o)
	}
}

// `sifctl similar DIR`: the directories that hold a good part of DIR,
// found by package ipc/dirsim; below, the answer's shape, its progress
// line and its printing.

// dirProgressAfter is how long a directory query runs before it shows
// its progress on a terminal.
const dirProgressAfter = time.Second

// dirLine is the answer of `sifctl similar --json DIR`: the shape of
// similarLine, for a directory.
type dirLine struct {
	Query    string `json:"query"`
	QueryRaw string `json:"query_raw,omitempty"`
	Dir      bool   `json:"dir"`
	Size     int64  `json:"size"`  // bytes of the files compared
	Files    int    `json:"files"` // the files compared
	// Skipped counts the files not compared: empty ones, symlinks,
	// fifos, sockets and devices, and those that could not be read.
	Empty      int            `json:"empty,omitempty"`
	Special    int            `json:"special,omitempty"`
	Unreadable int            `json:"unreadable,omitempty"`
	Matches    []dirsim.Match `json:"matches"`
	ElapsedNs  int64          `json:"elapsed_ns"`
	// FleetError: as in similarLine (--fleet).
	FleetError *ipc.Error `json:"fleet_error,omitempty"`
}

// isDir reports whether file names a directory (following a symlink).
func isDir(file string) bool {
	if file == "-" {
		return false
	}
	st, err := os.Stat(file)
	return err == nil && st.IsDir()
}

// similarDir answers `sifctl similar DIR` for one directory: it prints
// the answer and reports whether anything was found and whether it is
// incomplete (some files could not be read, or the fleet did not
// answer). An error is one the whole command fails with.
func similarDir(ctx context.Context, g *globals, c *ipc.Client, p fingerprint.Params, f *similarFlags, prefix, dir string) (found, incomplete bool, err error) {
	start := time.Now()
	var done atomic.Int64
	stop := func() {}
	defer func() { stop() }()
	o := &dirsim.Options{Threshold: &f.threshold, Limit: f.limit, SizeRatio: f.sizeRatio, SameExt: f.sameExt,
		SameType: f.sameType, MaxDF: f.maxDF, Prefix: prefix, Params: &p, Fleet: f.fleet,
		Progress: func(n, total int) {
			if n == 0 {
				stop = showProgress(g, dir, total, func() int { return int(done.Load()) })
			}
			done.Store(int64(n))
			if n == total {
				stop()
			}
		},
		Skipped: func(path string, err error) {
			fmt.Fprintf(g.stderr, "sifctl: %s: %v (skipped)\n", quoteName(path), err)
		}}
	r, err := dirsim.Similar(ctx, c, dir, o)
	if err != nil {
		return false, false, err
	}
	line := dirLine{Dir: true, Size: r.Size, Files: r.Files, Empty: r.Empty, Special: r.Special,
		Unreadable: r.Unreadable, Matches: r.Matches, ElapsedNs: time.Since(start).Nanoseconds(), FleetError: r.FleetError}
	line.Query, line.QueryRaw = ipc.PathFields(r.Dir)
	switch {
	case g.json:
		if err := g.printJSON(line); err != nil {
			return false, false, err
		}
	case g.null:
		if err := dirRecords(g.stdout, r.Matches); err != nil {
			return false, false, failed(err)
		}
	default:
		printSimilarDir(g.stdout, dir, &line, f.threshold)
	}
	if e := r.FleetError; e != nil {
		fmt.Fprintf(g.stderr, "sifctl: %s: %s; the directories listed are this host's only\n", quoteName(dir), e.Message)
	}
	return len(r.Matches) > 0, r.Unreadable > 0 || r.FleetError != nil, nil
}

// dirFailed reports err, the failure of similarDir on the directory named
// dir (abs, its absolute path): the directory could not be read, or the
// daemon refused it (refused), reported in its place, and nil returned;
// any other error (no daemon, an interrupt, stdout) is returned, and ends
// the command.
func (g *globals) dirFailed(dir, abs string, err error) error {
	var se *statusError
	switch {
	case errors.As(err, &se):
		return err
	case transport(err):
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return g.queryFailed(dir, abs, err)
	}
	return g.askFailed(dir, abs, err)
}

// showProgress writes "DIR: n/total files" to stderr, when it is a
// terminal, every 200 ms once dirProgressAfter has passed, until the
// returned stop is called (more than once is fine); stop clears the line.
func showProgress(g *globals, dir string, total int, done func() int) (stop func()) {
	f, ok := g.stderr.(*os.File)
	if !ok {
		return func() {}
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return func() {}
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTimer(dirProgressAfter)
		defer t.Stop()
		shown := false
		for {
			select {
			case <-quit:
				if shown {
					fmt.Fprint(f, "\r\033[K")
				}
				return
			case <-t.C:
				fmt.Fprintf(f, "\r\033[Ksifctl: %s: %d/%d files", quoteName(dir), done(), total)
				shown = true
				t.Reset(200 * time.Millisecond)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-finished }) }
}

// printSimilarDir prints a directory's answer as text: its matches, one
// line each, as for a file, with what became of its files there.
func printSimilarDir(w io.Writer, dir string, l *dirLine, threshold float64) {
	fmt.Fprintf(w, "%s (directory, %d files, %d bytes", quoteName(dir), l.Files, l.Size)
	if n := l.Empty + l.Special + l.Unreadable; n > 0 {
		fmt.Fprintf(w, "; %d skipped: %d empty, %d not regular, %d unreadable", n, l.Empty, l.Special, l.Unreadable)
	}
	fmt.Fprintln(w, "):")
	switch {
	case l.Files == 0:
		fmt.Fprintln(w, "  no file to compare")
		return
	case len(l.Matches) == 0:
		fmt.Fprintf(w, "  no directory holds %g%% or more of it\n", threshold)
		return
	}
	for _, m := range l.Matches {
		rev := "?"
		if m.ReverseContainment != nil {
			rev = fmt.Sprintf("%.0f%%", *m.ReverseContainment)
		}
		p := textPath(m.Host, m.FilePath)
		fmt.Fprintf(w, "  %3.0f%%  %s  %d  %d identical, %d similar, %d missing; reverse %s\n",
			m.Containment, p, m.Size, m.Files.Identical, m.Files.Similar, m.Files.Missing, rev)
	}
}

// dirRecords writes the directories' names, one record each (--null).
func dirRecords(w io.Writer, matches []dirsim.Match) error {
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = hostPath(m.Host, m.FilePath)
	}
	return writeRecords(w, false, names...)
}

// estimatedNote is what the text answer to a signature says: the answer
// is the index's estimate.
const estimatedNote = "estimated: the bytes were not sent (a signature); no match was checked against them"

// similarSignatures answers `sifctl similar --signature`: each signature
// of the file is asked as --fast asks a FILE, without its bytes.
func similarSignatures(qs *queries, f *similarFlags) error {
	g := qs.g
	fleetDown := 0
	answered, found, errs, err := qs.askSignatures(f.signature, func(s *signature) (bool, error) {
		req := &ipc.SimilarRequest{QuerySketch: *s.q, Fast: true, Threshold: &f.threshold, Limit: f.limit,
			SizeRatio: f.sizeRatio, SameExt: f.sameExt, SameType: f.sameType, PathPrefix: qs.prefix, MaxDF: f.maxDF, Fleet: f.fleet}
		resp, err := qs.c.Similar(qs.ctx, req)
		if err != nil {
			return false, err
		}
		if resp.FleetError != nil {
			fleetDown++
		}
		rep := repetitive(qs.params, s.q.Size, resp.Fingerprints, resp.MinFingerprints)
		if g.json {
			line := similarLine{Size: s.q.Size, Fingerprints: resp.Fingerprints, Skipped: resp.Skipped,
				TooFew: resp.TooFew, Checked: resp.Checked, Matches: resp.Matches, Template: resp.Template,
				Total: resp.Total, Repetitive: rep, Signature: s.ref(), Estimated: true, FleetError: resp.FleetError}
			line.Query, line.QueryRaw = s.fields()
			return len(resp.Matches) > 0, g.printJSON(line)
		}
		return len(resp.Matches) > 0, printSimilar(g, s.name(), s.q.Size, f.threshold, rep, estimatedNote, resp)
	})
	switch {
	case err != nil:
		return err
	case errs > 0 || fleetDown > 0:
		return &statusError{code: exitError}
	case found == 0 || answered == 0:
		return nothing()
	}
	return nil
}
