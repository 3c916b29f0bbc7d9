package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// A removed root's records are forgotten in the background: a batch of
// forgetBatch paths at a time (index.Index.RemovePaths, one commit and one
// merge operand per posting bucket for the whole batch), each batch once
// Pebble has no backlog of flushes or level-0 compactions
// (index.Index.WaitBacklog). The files of a removed root used to go to the
// workers one by one, a batch each, with nothing to slow them when Pebble
// fell behind: removals of roots of tens of thousands of files met write
// stalls, which hold every write, a changed file's among them; and the
// status counted the root's files until the last was gone. Removing 50,000
// small files now takes 0.6-0.7 times as long (BenchmarkRemoveRoot).
//
// From the moment the removal is accepted, the status counts none of the
// root's files (Status, answers.Stats: the index's totals less those still
// to forget, listed under Status.Forgetting) and queries answer none
// (hidden). Queries never wait for it: they read their own views, and the
// batches take the index's write lock for a few milliseconds each, so live
// changes go on between them. A removal interrupted by a stop is finished
// at the next start, where dropOutsideRoots removes whatever lies outside
// the roots; a root added again stops its removal first.

// forgetBatch is how many paths one batch of a removal removes. Removing
// a root of 50,000 small files (BenchmarkRemoveRoot), batches of 64 took
// 2.6-2.7 s and the slowest query asked meanwhile 11-12 ms; batches of 256,
// 2.0-2.4 s and 14-25 ms (a query alone: 0.4 ms). The smaller batch keeps
// the write lock, and a processor, for about a millisecond at a time.
const forgetBatch = 64

// forgetRounds bounds the listings of a removed root: a worker that was
// reading a file under it when it was removed may write its record after
// the first listing, which the next finds.
const forgetRounds = 3

// forgetting is a removed root whose records are being removed.
type forgetting struct {
	dir    string
	cancel context.CancelFunc
	done   chan struct{}
	// files and bytes are still indexed under dir, as listed; d.countMu
	// guards them.
	files, bytes uint64
}

// forgetRoot removes the records under dir, a root just dropped, in the
// background; the status and queries leave them out at once.
func (d *Daemon) forgetRoot(dir string) {
	recs, files, bytes := d.listUnder(dir)
	if files == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &forgetting{dir: dir, cancel: cancel, done: make(chan struct{}), files: files, bytes: bytes}
	d.forgetMu.Lock()
	d.forgets = append(d.forgets, f)
	d.forgetMu.Unlock()
	started := d.spawn(func(run context.Context) {
		stop := context.AfterFunc(run, cancel)
		defer stop()
		d.runForget(ctx, f, recs)
	})
	if !started { // stopping: the next start removes them
		d.endForget(f)
	}
}

// listed is a record to forget: its path and size.
type listed struct {
	path string
	size uint64
}

// listUnder returns the records under dir, with their number and bytes.
func (d *Daemon) listUnder(dir string) (recs []listed, files, bytes uint64) {
	err := d.ix.Files(dirPrefix(dir), func(rec index.FileRecord) error {
		size := uint64(max(rec.FileMeta.Size, 0))
		recs = append(recs, listed{rec.Path, size})
		files++
		bytes += size
		return nil
	})
	if err != nil {
		d.log.Error("listing records failed", "dir", dir, "err", err)
	}
	return recs, files, bytes
}

// runForget removes f's records, recs first, then those a new listing
// finds, until ctx is done.
func (d *Daemon) runForget(ctx context.Context, f *forgetting, recs []listed) {
	defer d.endForget(f)
	t0 := time.Now()
	var removed int
	for round := 0; round < forgetRounds && len(recs) > 0; round++ {
		if round > 0 {
			var files, bytes uint64
			recs, files, bytes = d.listUnder(f.dir)
			d.countMu.Lock()
			f.files, f.bytes = files, bytes
			d.countMu.Unlock()
		}
		for len(recs) > 0 {
			if testHookForgetBatch != nil {
				testHookForgetBatch(ctx)
			}
			n := min(forgetBatch, len(recs))
			k, err := d.forgetBatch(ctx, f, recs[:n])
			removed += k
			if err != nil {
				if ctx.Err() == nil {
					d.errs.add(fmt.Sprintf("forgetting removed root %s: %v", f.dir, err))
					d.log.Error("forgetting a removed root stopped: its records stay, and are answered, until the next start removes them",
						"root", f.dir, "left", len(recs), "err", err)
				}
				return
			}
			recs = recs[n:]
		}
	}
	d.log.Info("removed root forgotten", "root", f.dir, "files", removed, "elapsed", time.Since(t0).Round(time.Millisecond))
}

// testHookForgetBatch, when set, is called before each batch of a removal
// with the removal's context: tests hold a removal midway.
var testHookForgetBatch func(ctx context.Context)

// forgetBatch removes the records recs, once Pebble has no backlog,
// under their paths' claims: a worker bringing one of them up to date holds
// its claim, and forgets it when it looks again (its root is gone). It
// returns how many records it removed. A batch refused because index
// writes are on hold is tried again once they resume.
func (d *Daemon) forgetBatch(ctx context.Context, f *forgetting, recs []listed) (int, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := d.ix.cur().WaitBacklog(ctx); err != nil && !errors.Is(err, index.ErrClosed) {
			return 0, err
		}
		n, err := d.removeClaimed(f, recs)
		if !errors.Is(err, errWritesHeld) && !isNoSpace(err) {
			return n, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// removeClaimed removes the records recs whose paths no worker holds, and
// takes all of recs off f's counts: a worker that holds a path forgets it
// itself, at once.
func (d *Daemon) removeClaimed(f *forgetting, recs []listed) (int, error) {
	claimed := make([]string, 0, len(recs))
	var files, bytes uint64
	for _, r := range recs {
		if d.claims.take(r.path, ticket{}) {
			claimed = append(claimed, r.path)
		}
		files++
		bytes += r.size
	}
	defer func() {
		for _, p := range claimed {
			d.releaseClaim(p)
		}
	}()
	d.countMu.Lock()
	defer d.countMu.Unlock()
	n, _, err := d.ix.RemovePaths(claimed)
	if err != nil {
		return 0, err
	}
	d.count.removed.Add(uint64(n))
	f.files -= min(f.files, files)
	f.bytes -= min(f.bytes, bytes)
	return n, nil
}

// releaseClaim ends a claim on path, a record just removed under a removed
// root, releasing the tickets workers handed over meanwhile: their look
// would find the root gone and forget the path, which is done.
func (d *Daemon) releaseClaim(path string) {
	for {
		again, handed := d.claims.finish(path)
		if !again {
			for _, t := range handed {
				t.release(d.track)
			}
			return
		}
	}
}

// endForget takes f off the removals in progress.
func (d *Daemon) endForget(f *forgetting) {
	d.forgetMu.Lock()
	defer d.forgetMu.Unlock()
	for i, x := range d.forgets {
		if x == f {
			d.forgets = append(d.forgets[:i], d.forgets[i+1:]...)
			break
		}
	}
	f.cancel()
	close(f.done)
}

// stopForgetting stops the removals of the roots at, under or above dir,
// a root about to be added, and waits until they have: their files are
// its scan's to find.
func (d *Daemon) stopForgetting(dir string) {
	d.forgetMu.Lock()
	var stop []*forgetting
	for _, f := range d.forgets {
		if under(f.dir, dir) || under(dir, f.dir) {
			stop = append(stop, f)
		}
	}
	d.forgetMu.Unlock()
	for _, f := range stop {
		f.cancel()
		<-f.done
	}
}

// forgettingPrefixes returns the directory prefixes of the removed roots
// being forgotten.
func (d *Daemon) forgettingPrefixes() []string {
	d.forgetMu.Lock()
	defer d.forgetMu.Unlock()
	var out []string
	for _, f := range d.forgets {
		out = append(out, dirPrefix(f.dir))
	}
	return out
}

// stats returns the index's totals less the files still to forget under
// removed roots, and those removals.
func (d *Daemon) stats() (index.Stats, []ipc.ForgetStatus, error) {
	d.forgetMu.Lock()
	forgets := slices.Clone(d.forgets)
	d.forgetMu.Unlock()
	d.countMu.Lock()
	defer d.countMu.Unlock()
	st, err := d.ix.Stats()
	if err != nil {
		return st, nil, err
	}
	var out []ipc.ForgetStatus
	for _, f := range forgets {
		st.Files -= min(st.Files, f.files)
		st.Bytes -= min(st.Bytes, f.bytes)
		out = append(out, ipc.ForgetStatus{Dir: ipc.NewFilePath(f.dir), Files: f.files, Bytes: f.bytes})
	}
	return st, out, nil
}

// isUnder reports whether path lies under one of prefixes.
func isUnder(path string, prefixes []string) bool {
	for _, pre := range prefixes {
		if strings.HasPrefix(path, pre) {
			return true
		}
	}
	return false
}
