package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// similar --by simihash: SimiFind's answer, with its distances and
// tolerances.

// simiHashHelp is what similar --help says of --by simihash.
const simiHashHelp = `--by simihash answers as SimiHash's SimiFind (Sadowski and Levin) does,
for near-identical files: copies edited in a few bytes, a few percent at
most. Each file's sum table counts, at every bit offset, the matches of 16
chosen bytes; its key is a weighted sum of four of those counts. A match
has its key within --key-tolerance percent of FILE's size of FILE's key
(one ordered range of keys in the index), its size within a factor
--size-ratio of FILE's (default 1.0526: within 5 %), and its sum table
within --sum-tolerance percent of FILE's size of FILE's (the sum of the
differences of the 16 counts); the nearest first:

  draft.c (10763 bytes, key 5123; tolerances: key 215, sum 215, size ratio 0.95):
    sum-dist  key-dist  path  size
           0         0  /srv/src/draft.c  10763  identical
          31        12  /srv/old/draft.c  10771

sum-dist is the sum-table distance, key-dist the key distance, each within
its tolerance; "identical" is a match with FILE's bytes (equal sum tables,
sizes and SHA-256). It needs an index created with SimiHash ([scheme]
simihash = true in sifd's configuration). Prefer it to the default when
what you want is the near-copies of a file: it reads no fingerprint and
answers from a sorted list of keys. Do not use it to find files that share
a part (one inside another, versions far apart): the default finds those.
Files mostly made of one large header, and large files of random-looking
bytes, look alike to it. With --json, one line per FILE: {"query", "size",
"key", "tolerances": {"key", "size_ratio", "sum"}, "key_tolerance",
"sum_tolerance", "key_hits", "sum_hits", "total", "matches": [{"path",
"size", "key_distance", "key_tolerance", "sum_distance", "sum_tolerance",
"identical", "type", "mtime_ns"}, ...]}. --limit, --prefix and --same-ext
(the paper's extension-aware keys: only files of FILE's extension) apply;
--signature asks with the sum tables of 'sifctl sketch' lines. --fleet asks
the fleet's tables too: other hosts' matches as HOST:PATH ("host" and,
when the fleet does not answer, "fleet_error" with --json), found among the
contents published by hosts whose index keeps SimiHash keys.`

// simiLine is one line of `sifctl similar --by simihash --json`.
type simiLine struct {
	Query        string                 `json:"query"`
	QueryRaw     string                 `json:"query_raw,omitempty"`
	Size         int64                  `json:"size"`
	Key          uint32                 `json:"key"`
	Tolerances   fingerprint.Tolerances `json:"tolerances"`
	KeyTolerance uint64                 `json:"key_tolerance"`
	SumTolerance uint64                 `json:"sum_tolerance"`
	KeyHits      int                    `json:"key_hits"`
	SumHits      int                    `json:"sum_hits"`
	Total        int                    `json:"total"`
	Matches      []simiMatch            `json:"matches"`
	Signature    *signatureRef          `json:"signature,omitempty"`
	// FleetError: as in similarLine (--fleet).
	FleetError *ipc.Error `json:"fleet_error,omitempty"`
}

// simiMatch is one match of a simiLine.
type simiMatch struct {
	Host    string `json:"host,omitempty"` // with --fleet
	Path    string `json:"path"`
	PathRaw string `json:"path_raw,omitempty"`
	Size    int64  `json:"size"`
	ipc.SimiMatch
	Identical bool   `json:"identical"`
	Type      string `json:"type"`
	MtimeNs   int64  `json:"mtime_ns"`
}

// simiFlagsOnly are the flags of similar that apply to --by simihash.
var simiFlagsOnly = map[string]bool{
	"by": true, "limit": true, "prefix": true, "signature": true, "size-ratio": true, "same-ext": true,
	"key-tolerance": true, "sum-tolerance": true, "fleet": true, "null": true,
}

// checkSimiFlags refuses the flags similar --by simihash does not take,
// and those it alone takes without it.
func checkSimiFlags(cmd *cobra.Command, f *similarFlags) error {
	var err error
	own := cmd.LocalNonPersistentFlags()
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch {
		case err != nil, own.Lookup(fl.Name) == nil: // global flags apply
		case f.by == ipc.BySimiHash && !simiFlagsOnly[fl.Name]:
			err = failedf("--%s does not apply to --by simihash", fl.Name)
		case f.by != ipc.BySimiHash && (fl.Name == "key-tolerance" || fl.Name == "sum-tolerance"):
			err = failedf("--%s applies only to --by simihash", fl.Name)
		}
	})
	if err != nil {
		return err
	}
	switch f.by {
	case ipc.ByManber, ipc.BySimiHash:
	default:
		return failedf("--by %q: want %q (the default) or %q", f.by, ipc.ByManber, ipc.BySimiHash)
	}
	return nil
}

// simiTolerances returns the tolerances of similar --by simihash's flags.
func simiTolerances(f *similarFlags) (*fingerprint.Tolerances, error) {
	t := fingerprint.Tolerances{Key: f.keyTol / 100, Sum: f.sumTol / 100}
	if f.sizeRatio != 0 {
		t.SizeRatio = 1 / f.sizeRatio
	}
	if _, err := t.Normalize(); err != nil {
		return nil, failedf("--key-tolerance, --sum-tolerance: %v", err)
	}
	return &t, nil
}

// similarBySimiHash answers similar --by simihash for FILEs or --signature.
func similarBySimiHash(qs *queries, f *similarFlags, files []string) error {
	tol, err := simiTolerances(f)
	if err != nil {
		return err
	}
	g := qs.g
	ask := func(q ipc.QuerySketch) (*ipc.SimilarResponse, error) {
		req := &ipc.SimilarRequest{QuerySketch: q, By: ipc.BySimiHash, Tolerances: tol, Limit: f.limit, PathPrefix: qs.prefix, SameExt: f.sameExt,
			Fleet: f.fleet}
		return qs.c.Similar(qs.ctx, req)
	}
	if f.signature != "" {
		fleetDown := 0
		answered, found, errs, err := qs.askSignatures(f.signature, func(s *signature) (bool, error) {
			if s.q.SimiHash == nil {
				return false, &ipc.Error{Code: ipc.CodeBadRequest, Message: "the signature carries no SimiHash sum table: sketch the file again with this sifctl"}
			}
			resp, err := ask(*s.q)
			if err != nil {
				return false, err
			}
			if resp.FleetError != nil {
				fleetDown++
			}
			query, raw := s.fields()
			return len(resp.Matches) > 0, printSimi(g, s.name(), query, raw, s.ref(), s.q, resp)
		})
		return simiStatus(err, errs+fleetDown, found, answered)
	}
	found, errs := 0, 0
	for _, file := range files {
		if isDir(file) {
			abs, _ := filepath.Abs(file)
			errs++
			if err := g.queryError(file, abs, codeNotRegular, file+": is a directory; --by simihash compares files"); err != nil {
				return err
			}
			continue
		}
		abs, sk, _, ok, err := qs.read(file, ipc.ReadOptions{SimiHash: true}, false)
		if err != nil {
			return err
		}
		if !ok {
			errs++
			continue
		}
		q := ipc.NewQuerySketch(abs, sk)
		q.SimiHash = ipc.SimiHashOf(sk)
		resp, err := ask(q)
		if err != nil {
			if err := g.askFailed(file, abs, err); err != nil {
				return err
			}
			errs++
			continue
		}
		if len(resp.Matches) > 0 {
			found++
		}
		if resp.FleetError != nil {
			errs++
		}
		query, raw := queryFields(file, abs)
		if err := printSimi(g, queryName(file), query, raw, nil, &q, resp); err != nil {
			return err
		}
	}
	return simiStatus(nil, errs, found, 1)
}

func simiStatus(err error, errs, found, answered int) error {
	switch {
	case err != nil:
		return err
	case errs > 0:
		return &statusError{code: exitError}
	case found == 0 || answered == 0:
		return nothing()
	}
	return nil
}

// printSimi prints the answer r by SimiHash to the query q, named name,
// as text or as a JSON line.
func printSimi(g *globals, name, query, raw string, sig *signatureRef, q *ipc.QuerySketch, r *ipc.SimilarResponse) error {
	info := r.SimiFind
	if info == nil {
		return failedf("%s: the daemon answered without SimiHash (an older sifd?)", name)
	}
	if g.json {
		line := simiLine{Query: query, QueryRaw: raw, Size: q.Size, Key: q.SimiHash.Key, Tolerances: info.Tolerances,
			KeyTolerance: info.KeyTolerance, SumTolerance: info.SumTolerance, KeyHits: info.KeyHits, SumHits: info.SumHits,
			Total: r.Total, Matches: make([]simiMatch, 0, len(r.Matches)), Signature: sig, FleetError: r.FleetError}
		for _, m := range r.Matches {
			sm := simiMatch{Host: m.Host, Path: m.Path, PathRaw: m.PathRaw, Size: m.Size, Identical: m.Identical, Type: m.Type, MtimeNs: m.MtimeNs}
			if m.SimiHash != nil {
				sm.SimiMatch = *m.SimiHash
			}
			line.Matches = append(line.Matches, sm)
		}
		return g.printJSON(line)
	}
	w := g.stdout
	if e := r.FleetError; e != nil {
		defer fmt.Fprintf(g.stderr, "sifctl: %s: %s; the matches listed are this host's only\n", name, e.Message)
	}
	if g.null {
		return matchRecords(w, r.Matches)
	}
	fmt.Fprintf(w, "%s (%d bytes, key %d; tolerances: key %d, sum %d, size ratio %g):\n",
		name, q.Size, q.SimiHash.Key, info.KeyTolerance, info.SumTolerance, info.Tolerances.SizeRatio)
	if len(r.Matches) == 0 {
		fmt.Fprintf(w, "  nothing within the tolerances (%d %s within the key tolerance)\n", info.KeyHits, plural(info.KeyHits, "content", "contents"))
		return nil
	}
	fmt.Fprintln(w, "  sum-dist  key-dist  path  size")
	for _, m := range r.Matches {
		p := textPath(m.Host, ipc.FilePath{Path: m.Path, PathRaw: m.PathRaw})
		var d ipc.SimiMatch
		if m.SimiHash != nil {
			d = *m.SimiHash
		}
		note := ""
		if m.Identical {
			note = "  identical"
		}
		fmt.Fprintf(w, "  %8d  %8d  %s  %d%s\n", d.SumDistance, d.KeyDistance, p, m.Size, note)
	}
	if n := r.Total - len(r.Matches); n > 0 {
		fmt.Fprintf(w, "  and %d more %s (--limit)\n", n, plural(n, "file", "files"))
	}
	return nil
}
