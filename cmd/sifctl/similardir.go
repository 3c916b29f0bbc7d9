package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// `sifctl similar DIR`: the directories that hold a good part of DIR. The
// client walks DIR, fingerprints each regular file as `similar --fast`
// does, asks the daemon for each file's matches (dirInFlight at once), and
// sums them per directory (dirfold.go); the daemon then counts the
// indexed files and bytes of the directories listed (POST /v1/dirs/totals)
// for reverse containment and resemblance.

// Tunables of a directory query.
const (
	// dirInFlight is how many file queries are sent at once (the daemon
	// serves 16).
	dirInFlight = 8
	// dirFileThreshold is the least containment, percent, of a query file
	// in a match for the match to count (lower when --threshold is).
	dirFileThreshold = 10
	// dirFileLimit caps the matches of one query file: a file with more
	// identical copies counts only these.
	dirFileLimit = 1000
	// dirProgressAfter is how long a query runs before it shows its
	// progress on a terminal.
	dirProgressAfter = time.Second
)

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
	Empty      int        `json:"empty,omitempty"`
	Special    int        `json:"special,omitempty"`
	Unreadable int        `json:"unreadable,omitempty"`
	Matches    []dirMatch `json:"matches"`
	ElapsedNs  int64      `json:"elapsed_ns"`
}

// dirMatch is one directory holding a good part of the query directory.
type dirMatch struct {
	ipc.FilePath
	Size               int64    `json:"size"`                // bytes indexed under it (a lower bound when truncated)
	IndexedFiles       int64    `json:"indexed_files"`       // files indexed under it (idem)
	Truncated          bool     `json:"truncated,omitempty"` // its totals were cut short
	Containment        float64  `json:"containment"`         // percent of the query's bytes found under it
	ReverseContainment *float64 `json:"reverse_containment"` // percent of its bytes found in the query; null when truncated
	Resemblance        *float64 `json:"resemblance"`         // percent, shared over union; null when truncated
	SharedBytes        int64    `json:"shared_bytes"`
	Files              dirFiles `json:"files"`
	Measure            string   `json:"measure"` // always "estimated"
}

// dirFiles counts the query's files by what became of them in a match.
type dirFiles struct {
	Identical int `json:"identical"`
	Similar   int `json:"similar"`
	Missing   int `json:"missing"`
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
// the answer and reports whether anything was found and whether some
// files could not be read. An error is one the whole command fails with.
func similarDir(ctx context.Context, g *globals, c *ipc.Client, p fingerprint.Params, f *similarFlags, prefix, dir string) (found, unreadable bool, err error) {
	start := time.Now()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, false, fmt.Errorf("%s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return false, false, fmt.Errorf("%s: %w", dir, err)
	}
	walk, err := walkDir(ctx, g, dir, real)
	if err != nil {
		return false, false, err
	}
	q := &dirQuery{dir: real, rels: walk.rels, sizes: walk.sizes}
	for _, s := range walk.sizes {
		q.bytes += s
	}
	roots := queryRoots(ctx, c)
	q.top = func(path string) string {
		top := ""
		for _, r := range roots {
			if inTree(path, r) && len(r) > len(top) {
				top = r
			}
		}
		if prefix != "" && inTree(path, prefix) && len(prefix) > len(top) {
			top = prefix
		}
		return top
	}
	matches, err := queryDirFiles(ctx, g, c, p, f, prefix, dir, real, walk)
	if err != nil {
		return false, false, err
	}
	for i, ms := range matches {
		for _, m := range ms {
			path := ipc.FilePath{Path: m.Path, PathRaw: m.PathRaw}.Exact()
			if inTree(path, real) || inTree(path, abs) {
				continue // DIR's own files, indexed: not matches
			}
			pr := dirPair{f: i, path: path, identical: m.Identical,
				shared: m.Containment / 100 * float64(q.sizes[i]), revShared: m.ReverseContainment / 100 * float64(m.Size)}
			if m.Identical {
				pr.shared, pr.revShared = float64(q.sizes[i]), float64(m.Size)
			}
			q.pairs = append(q.pairs, pr)
		}
	}
	listed := q.fold(q.candidates(), f.threshold/100)
	out, err := dirMatches(ctx, c, q, listed)
	if err != nil {
		return false, false, err
	}
	if f.limit > 0 && len(out) > f.limit {
		out = out[:f.limit]
	}
	line := dirLine{Dir: true, Size: q.bytes, Files: len(q.rels), Empty: walk.empty, Special: walk.special,
		Unreadable: walk.unreadable, Matches: out, ElapsedNs: time.Since(start).Nanoseconds()}
	line.Query, line.QueryRaw = ipc.PathFields(abs)
	if g.json {
		if err := g.printJSON(line); err != nil {
			return false, false, err
		}
	} else {
		printSimilarDir(g.stdout, dir, &line, f.threshold)
	}
	return len(out) > 0, walk.unreadable > 0, nil
}

// dirWalk is what a walk of the query directory found.
type dirWalk struct {
	rels    []string // regular files of one byte or more, relative to the directory
	sizes   []int64
	empty   int // empty regular files: no content to compare
	special int // symlinks (not followed), fifos, sockets, devices
	// unreadable counts the files and directories that could not be
	// read, each named on stderr.
	unreadable int
}

// walkDir lists the regular files under real (the directory dir names,
// symlinks resolved), not following symlinks. A directory or file that
// cannot be read is named on stderr and skipped; dir itself unreadable is
// an error. The walk stops with ctx's error once ctx is done.
func walkDir(ctx context.Context, g *globals, dir, real string) (*dirWalk, error) {
	w := &dirWalk{}
	f, err := os.Open(real)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	f.Close()
	err = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(real, path)
		if err := ctx.Err(); err != nil {
			return err
		}
		shown := filepath.Join(dir, rel)
		if err != nil {
			if path == real {
				return fmt.Errorf("%s: %w", dir, err)
			}
			fmt.Fprintf(g.stderr, "sifctl: %s: %v (skipped)\n", shown, unwrapPath(err))
			w.unreadable++
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case !t.IsRegular():
			w.special++
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // vanished: nothing to compare
				fmt.Fprintf(g.stderr, "sifctl: %s: %v (skipped)\n", shown, unwrapPath(err))
				w.unreadable++
			}
			return nil
		}
		if info.Size() == 0 {
			w.empty++
			return nil
		}
		w.rels = append(w.rels, rel)
		w.sizes = append(w.sizes, info.Size())
		return nil
	})
	return w, err
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// queryRoots returns the daemon's roots the caller may see, the tops of
// candidate directories; none (the filesystem's root is the top) when
// the daemon does not list them.
func queryRoots(ctx context.Context, c *ipc.Client) []string {
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

// queryDirFiles fingerprints each file of walk and asks the daemon for its
// matches, dirInFlight at once; identical files are asked about once. It
// returns the matches of each file, nil for one that could not be read
// (named on stderr and counted in walk.unreadable).
func queryDirFiles(ctx context.Context, g *globals, c *ipc.Client, p fingerprint.Params, f *similarFlags, prefix, dir, real string, walk *dirWalk) ([][]ipc.Match, error) {
	thr := min(float64(dirFileThreshold), f.threshold)
	out := make([][]ipc.Match, len(walk.rels))
	type answer struct {
		done    chan struct{}
		matches []ipc.Match
	}
	var (
		mu        sync.Mutex
		byContent = make(map[string]*answer) // by content (and extension, with --same-ext)
		done      int
		failed    []string
	)
	stop := showProgress(g, dir, len(walk.rels), func() int { mu.Lock(); defer mu.Unlock(); return done })
	defer stop()
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(dirInFlight)
	for i, rel := range walk.rels {
		eg.Go(func() error {
			defer func() { mu.Lock(); done++; mu.Unlock() }()
			path := filepath.Join(real, rel)
			sk, err := ipc.SketchFileContext(ctx, path, p)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				mu.Lock()
				failed = append(failed, fmt.Sprintf("sifctl: %s: %v (skipped)", filepath.Join(dir, rel), trimPath(err, path)))
				mu.Unlock()
				return nil
			}
			key := string(sk.Strong[:])
			if f.sameExt {
				key += strings.ToLower(filepath.Ext(rel))
			}
			mu.Lock()
			a, seen := byContent[key]
			if !seen {
				a = &answer{done: make(chan struct{})}
				byContent[key] = a
			}
			mu.Unlock()
			if seen {
				select {
				case <-a.done:
					out[i] = a.matches
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			defer close(a.done)
			// The query is sent without a path: the other files of DIR
			// identical to this one are then listed too, and dropped as
			// DIR's own by the caller, the same for every copy.
			req := ipc.NewSimilarRequest("", sk)
			req.Fast = true
			req.Threshold = &thr
			req.Limit, req.SizeRatio, req.SameExt, req.SameType = dirFileLimit, f.sizeRatio, f.sameExt, f.sameType
			req.PathPrefix, req.MaxDF = prefix, f.maxDF
			if f.sameExt {
				req.Path, req.PathRaw = ipc.PathFields(path) // the extension; the file itself is DIR's, dropped anyway
			}
			resp, err := c.Similar(ctx, req)
			if err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
			}
			a.matches = resp.Matches
			out[i] = resp.Matches
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	stop()
	slices.Sort(failed)
	for _, msg := range failed {
		fmt.Fprintln(g.stderr, msg)
	}
	walk.unreadable += len(failed)
	return out, nil
}

// trimPath drops a leading "path: " from err's message, which the caller
// names itself.
func trimPath(err error, path string) string {
	return strings.TrimPrefix(err.Error(), path+": ")
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
				fmt.Fprintf(f, "\r\033[Ksifctl: %s: %d/%d files", dir, done(), total)
				shown = true
				t.Reset(200 * time.Millisecond)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-finished }) }
}

// dirMatches asks the daemon for the totals of the listed directories
// and returns their answers, best first: by containment, then
// resemblance, then path.
func dirMatches(ctx context.Context, c *ipc.Client, q *dirQuery, listed []*dirCand) ([]dirMatch, error) {
	out := make([]dirMatch, 0, len(listed))
	if len(listed) == 0 {
		return out, nil
	}
	paths := make([]string, len(listed))
	for i, d := range listed {
		paths[i] = d.path
	}
	ts, err := c.DirTotals(ctx, paths, 0)
	if err != nil {
		return nil, fmt.Errorf("directory totals: %w", err)
	}
	for i, d := range listed {
		t := ts.Dirs[i]
		m := dirMatch{FilePath: ipc.NewFilePath(d.path), Size: t.Bytes, IndexedFiles: t.Files, Truncated: t.Truncated,
			Containment: pct(q.containment(d)), SharedBytes: int64(math.Round(d.shared)), Measure: ipc.MeasureEstimated,
			Files: dirFiles{Identical: d.identical, Similar: d.similar, Missing: len(q.rels) - d.identical - d.similar}}
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
	slices.SortStableFunc(out, func(a, b dirMatch) int {
		return cmp.Or(cmp.Compare(b.Containment, a.Containment), cmp.Compare(ptrOr(b.Resemblance), ptrOr(a.Resemblance)),
			strings.Compare(a.Path, b.Path))
	})
	return out, nil
}

func ptrOr(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// printSimilarDir prints a directory's answer as text: its matches, one
// line each, as for a file, with what became of its files there.
func printSimilarDir(w io.Writer, dir string, l *dirLine, threshold float64) {
	fmt.Fprintf(w, "%s (directory, %d files, %d bytes", dir, l.Files, l.Size)
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
		fmt.Fprintf(w, "  %3.0f%%  %s  %d  %d identical, %d similar, %d missing; reverse %s\n",
			m.Containment, m.Exact(), m.Size, m.Files.Identical, m.Files.Similar, m.Files.Missing, rev)
	}
}
