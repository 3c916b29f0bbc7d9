package dirsim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// Tunables of a directory query.
const (
	// DefaultThreshold is Options.Threshold's default: the least
	// containment, percent, of the query directory in a listed one.
	DefaultThreshold = 25
	// FileThreshold is the least containment, percent, of a file in
	// another for the pair to count (lower when the directories'
	// threshold is), for Similar and Groups alike.
	FileThreshold = 10
	// InFlight is how many file queries Similar sends at once (the daemon
	// serves 16).
	InFlight = 8
	// fileLimit caps the matches of one query file: a file with more
	// identical copies counts only these.
	fileLimit = 1000
)

// Options shape Similar; nil means the defaults.
type Options struct {
	// Threshold is the least containment, percent (0 to 100), of the
	// query directory in a directory for it to be listed; nil means
	// DefaultThreshold. Each file's matches are asked for at
	// FileThreshold, or Threshold if lower.
	Threshold *float64
	// Limit lists at most this many directories, the best (0: all).
	Limit int
	// SizeRatio, SameExt, SameType and MaxDF shape each file's matches,
	// as in ipc.SimilarRequest.
	SizeRatio float64
	SameExt   bool
	SameType  bool
	MaxDF     int
	// Prefix, an absolute directory, keeps only the matches in its tree
	// (whole path components), and is a top; on this host.
	Prefix string
	// Fleet asks the fleet index too (ipc.SimilarRequest.Fleet): the
	// directories on every host of the fleet, each Match with its Host.
	// A daemon without a fleet, or a caller who may not ask it, is an
	// error; a fleet that does not answer leaves this host's directories
	// and Result.FleetError.
	Fleet bool
	// Params are the daemon's fingerprint parameters (ipc.Info.Params);
	// nil asks the daemon for them.
	Params *fingerprint.Params
	// Progress, if set, is called with (0, total) once the walk has found
	// the total files to query, then with the files done after each one
	// is; the last call, once every file is done, has done == total.
	// Calls come from the query goroutines, one at a time: Progress must
	// return quickly.
	Progress func(done, total int)
	// Skipped, if set, is called for each file or directory not compared
	// because it could not be read: path is the directory as given to
	// Similar joined with the file's path below it, and err's message
	// does not repeat the path. Those met by the walk come as they are
	// met; the files that failed as they were fingerprinted come once
	// every query is answered (after the last Progress), by path. Calls
	// come from Similar's goroutine.
	Skipped func(path string, err error)
}

// Result is the answer of Similar.
type Result struct {
	Dir   string // the directory asked about, absolute (symlinks not resolved)
	Size  int64  // bytes of the files compared
	Files int    // the files compared
	// The files not compared: empty ones, special ones (symlinks, fifos,
	// sockets and devices), and those that could not be read (each given
	// to Options.Skipped).
	Empty, Special, Unreadable int
	// Matches are the directories that hold Threshold percent or more of
	// it, best first: by containment, then resemblance, then path (and
	// host). It is never nil.
	Matches []Match
	// FleetError is set when Options.Fleet asked the fleet and it did not
	// answer (ipc.CodeFleetDown), at any step: the matches are then this
	// host's only.
	FleetError *ipc.Error
}

// Match is one directory holding a good part of the query directory. Its
// JSON is a match of `sifctl similar --json DIR`.
type Match struct {
	// Host is the directory's host, when the fleet was asked
	// (Options.Fleet); absent otherwise.
	Host string `json:"host,omitempty"`
	ipc.FilePath
	Size               int64    `json:"size"`                // bytes indexed under it (a lower bound when truncated)
	IndexedFiles       int64    `json:"indexed_files"`       // files indexed under it (idem)
	Truncated          bool     `json:"truncated,omitempty"` // its totals were cut short
	Containment        float64  `json:"containment"`         // percent of the query's bytes found under it
	ReverseContainment *float64 `json:"reverse_containment"` // percent of its bytes found in the query; null when truncated
	Resemblance        *float64 `json:"resemblance"`         // percent, shared over union; null when truncated
	SharedBytes        int64    `json:"shared_bytes"`
	Files              Files    `json:"files"`
	Measure            string   `json:"measure"` // always "estimated" (ipc.MeasureEstimated)
}

// Files counts the files of one directory by what became of them in
// another: an identical file there, only similar ones, or none.
type Files struct {
	Identical int `json:"identical"`
	Similar   int `json:"similar"`
	Missing   int `json:"missing"`
}

// Similar returns the indexed directories that hold a good part of dir
// (a directory that need not be indexed, nor under a root), one per copy,
// at its top (see the package doc). It walks dir, fingerprints its files
// and asks the daemon c for their matches, the roots and the totals of the
// directories listed. o may be nil. The files it cannot read are skipped
// and counted (Options.Skipped names them); dir itself unreadable, a
// query that fails, or ctx done is an error.
func Similar(ctx context.Context, c *ipc.Client, dir string, o *Options) (*Result, error) {
	if o == nil {
		o = &Options{}
	}
	thr := float64(DefaultThreshold)
	if o.Threshold != nil {
		thr = *o.Threshold
	}
	if !(thr >= 0 && thr <= 100) {
		return nil, fmt.Errorf("dirsim: threshold %v: want a percentage from 0 to 100", thr)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	params := o.Params
	if params == nil {
		info, err := c.Info(ctx)
		if err != nil {
			return nil, err
		}
		params = &info.Params
	}
	skipped := o.Skipped
	if skipped == nil {
		skipped = func(string, error) {}
	}
	walk, err := walkDir(ctx, dir, real, skipped)
	if err != nil {
		return nil, err
	}
	q := &dirQuery{dir: real, rels: walk.rels, sizes: walk.sizes}
	for _, s := range walk.sizes {
		q.bytes += s
	}
	// The tops: this host's roots, and with the fleet each other host's
	// published roots.
	tops := map[string][]string{"": roots(ctx, c)}
	fl := &fleetAsk{}
	if o.Fleet {
		hs, err := c.FleetHosts(ctx)
		if err != nil {
			return nil, err
		}
		fl.self, fl.on = hs.Host, hs.FleetError == nil
		fl.err = hs.FleetError
		for _, h := range hs.Hosts {
			if h.Host == hs.Host {
				continue // this host's tops are all its roots, not only those it publishes
			}
			for _, r := range h.Roots {
				tops[h.Host] = append(tops[h.Host], r.Exact())
			}
		}
	}
	prefix := o.Prefix
	q.top = func(host, path string) string {
		top := ""
		for _, r := range tops[host] {
			if inTree(path, r) && len(r) > len(top) {
				top = r
			}
		}
		if host == "" && prefix != "" && inTree(path, prefix) && len(prefix) > len(top) {
			top = prefix
		}
		return top
	}
	matches, err := queryFiles(ctx, c, *params, o, thr, dir, real, walk, skipped, fl)
	if err != nil {
		return nil, err
	}
	for i, ms := range matches {
		for _, m := range ms {
			host := m.Host
			if host == fl.self {
				host = ""
			}
			if host != "" && fl.err != nil {
				continue // the fleet failed on some file: this host's matches only
			}
			path := ipc.FilePath{Path: m.Path, PathRaw: m.PathRaw}.Exact()
			if host == "" && (inTree(path, real) || inTree(path, abs)) {
				continue // dir's own files, indexed: not matches
			}
			pr := dirPair{f: i, host: host, path: path, identical: m.Identical,
				shared: m.Containment / 100 * float64(q.sizes[i]), revShared: m.ReverseContainment / 100 * float64(m.Size)}
			if m.Identical {
				pr.shared, pr.revShared = float64(q.sizes[i]), float64(m.Size)
			}
			q.pairs = append(q.pairs, pr)
		}
	}
	listed := q.fold(q.candidates(), thr/100)
	out, err := dirMatches(ctx, c, q, listed)
	var fe *ipc.Error
	if errors.As(err, &fe) && fe.Code == ipc.CodeFleetDown && fl.err == nil {
		// The fleet failed on the other hosts' totals: this host's
		// directories only.
		fl.err = fe
		listed = slices.DeleteFunc(listed, func(d *dirCand) bool { return d.host != "" })
		out, err = dirMatches(ctx, c, q, listed)
	}
	if err != nil {
		return nil, err
	}
	if o.Fleet {
		for i := range out {
			if out[i].Host == "" {
				out[i].Host = fl.self
			}
		}
	}
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	return &Result{Dir: abs, Size: q.bytes, Files: len(q.rels), Empty: walk.empty, Special: walk.special,
		Unreadable: walk.unreadable, Matches: out, FleetError: fl.err}, nil
}

// fleetAsk is the state of a directory query's asking the fleet: this
// host's name in it, whether the file queries ask it, and the error that
// stopped them. A file's answer that says the fleet did not answer stops
// the others asking it, and drops the other hosts' matches (the answer is
// then this host's only, not a part of the fleet's).
type fleetAsk struct {
	self string
	mu   sync.Mutex
	on   bool
	err  *ipc.Error
}

// asking reports whether the next file query asks the fleet.
func (f *fleetAsk) asking() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.on
}

// failed notes that the fleet did not answer a file query.
func (f *fleetAsk) failed(e *ipc.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = false
	if f.err == nil {
		f.err = e
	}
}

// roots returns the daemon's roots the caller may see, the tops of
// candidate directories; none (the filesystem's root is the top) when
// the daemon does not list them.
func roots(ctx context.Context, c *ipc.Client) []string {
	rs, err := c.Roots(ctx)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(rs.Roots))
	for _, r := range rs.Roots {
		out = append(out, r.Path)
	}
	return out
}

// FleetTotaler counts what the hosts of a fleet hold in directory trees,
// as ipc.Client.FleetDirTotals does (*ipc.Client is one): one DirTotal
// per directory, in order.
type FleetTotaler interface {
	FleetDirTotals(ctx context.Context, dirs []ipc.HostDir, maxFiles int) (*ipc.DirTotalsResponse, error)
}

// dirMatches asks the daemon for the totals of the listed directories
// (those of other hosts from the fleet) and returns their answers, best
// first: by containment, then resemblance, then path and host.
func dirMatches(ctx context.Context, c FleetTotaler, q *dirQuery, listed []*dirCand) ([]Match, error) {
	out := make([]Match, 0, len(listed))
	if len(listed) == 0 {
		return out, nil
	}
	dirs := make([]ipc.HostDir, len(listed))
	for i, d := range listed {
		dirs[i] = ipc.HostDir{Host: d.host, FilePath: ipc.NewFilePath(d.path)}
	}
	ts, err := c.FleetDirTotals(ctx, dirs, 0)
	if err != nil {
		return nil, fmt.Errorf("directory totals: %w", err)
	}
	if len(ts.Dirs) != len(listed) {
		return nil, fmt.Errorf("directory totals: %d answered for %d directories", len(ts.Dirs), len(listed))
	}
	for i, d := range listed {
		t := ts.Dirs[i]
		m := Match{Host: d.host, FilePath: ipc.NewFilePath(d.path), Size: t.Bytes, IndexedFiles: t.Files, Truncated: t.Truncated,
			Containment: pct(q.containment(d)), SharedBytes: int64(math.Round(d.shared)), Measure: ipc.MeasureEstimated,
			Files: Files{Identical: d.identical, Similar: d.similar, Missing: len(q.rels) - d.identical - d.similar}}
		if !t.Truncated {
			rev := 0.0
			if t.Bytes > 0 {
				rev = min(1, d.revShared/float64(t.Bytes))
			}
			inter := min(d.shared, d.revShared)
			res := 0.0
			if union := float64(q.bytes+t.Bytes) - inter; union > 0 {
				res = min(1, inter/union)
			}
			r, s := pct(rev), pct(res)
			m.ReverseContainment, m.Resemblance = &r, &s
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b Match) int {
		return cmp.Or(cmp.Compare(b.Containment, a.Containment), cmp.Compare(ptrOr(b.Resemblance), ptrOr(a.Resemblance)),
			strings.Compare(a.Path, b.Path), strings.Compare(a.Host, b.Host))
	})
	return out, nil
}

func ptrOr(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// pct renders a share (0..1) as a percentage rounded to two decimals.
func pct(x float64) float64 { return float64(int64(x*10000+0.5)) / 100 }
