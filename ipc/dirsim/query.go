package dirsim

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// queryFiles fingerprints each file of walk and asks the daemon for its
// matches, InFlight at once; identical files are asked about once. thr is
// the directories' threshold, percent. It returns the matches of each
// file, nil for one that could not be read (given to skipped, by path,
// once every query is answered, and counted in walk.unreadable). Each
// query asks the fleet while fl says to, and tells fl when the fleet did
// not answer.
func queryFiles(ctx context.Context, c *ipc.Client, p fingerprint.Params, o *Options, thr float64, dir, real string, walk *dirWalk, skipped func(string, error), fl *fleetAsk) ([][]ipc.Match, error) {
	fileThr := min(float64(FileThreshold), thr)
	out := make([][]ipc.Match, len(walk.rels))
	type answer struct {
		done    chan struct{}
		matches []ipc.Match
	}
	type failure struct {
		path string
		err  error
	}
	var (
		mu        sync.Mutex
		byContent = make(map[string]*answer) // by content (and extension, with SameExt)
		done      int
		failed    []failure
	)
	total := len(walk.rels)
	if o.Progress != nil {
		o.Progress(0, total)
	}
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(InFlight)
	for i, rel := range walk.rels {
		eg.Go(func() error {
			defer func() {
				mu.Lock()
				done++
				if o.Progress != nil {
					o.Progress(done, total)
				}
				mu.Unlock()
			}()
			path := filepath.Join(real, rel)
			sk, err := ipc.SketchFileContext(ctx, path, p)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				mu.Lock()
				failed = append(failed, failure{filepath.Join(dir, rel), trimPath(err, path)})
				mu.Unlock()
				return nil
			}
			key := string(sk.Strong[:])
			if o.SameExt {
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
			// The query is sent without a path: the other files of dir
			// identical to this one are then listed too, and dropped as
			// dir's own by the caller, the same for every copy.
			req := ipc.NewSimilarRequest("", sk)
			req.Fast = true
			req.Threshold = &fileThr
			req.Limit, req.SizeRatio, req.SameExt, req.SameType = fileLimit, o.SizeRatio, o.SameExt, o.SameType
			req.PathPrefix, req.MaxDF = o.Prefix, o.MaxDF
			req.Fleet = fl.asking()
			if o.SameExt {
				req.Path, req.PathRaw = ipc.PathFields(path) // the extension; the file itself is dir's, dropped anyway
			}
			resp, err := c.Similar(ctx, req)
			if err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
			}
			if resp.FleetError != nil {
				fl.failed(resp.FleetError)
			}
			a.matches = resp.Matches
			out[i] = resp.Matches
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(failed, func(a, b failure) int {
		return strings.Compare(a.path+": "+a.err.Error(), b.path+": "+b.err.Error())
	})
	for _, f := range failed {
		skipped(f.path, f.err)
	}
	walk.unreadable += len(failed)
	return out, nil
}

// trimPath returns err with a leading "path: " dropped from its message,
// which the caller names itself.
func trimPath(err error, path string) error {
	return &pathless{msg: strings.TrimPrefix(err.Error(), path+": "), err: err}
}

// pathless is an error whose message leaves out the path it names.
type pathless struct {
	msg string
	err error
}

func (e *pathless) Error() string { return e.msg }
func (e *pathless) Unwrap() error { return e.err }
