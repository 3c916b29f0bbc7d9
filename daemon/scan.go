package daemon

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/watcher"
)

// A scan walks a directory, queues its regular files for the workers, and
// then removes the records of files under it that are gone. Full scans
// cover a whole root: the first scan, reconciles after lost events, the
// periodic scans of roots without events, and rescans asked for. Live
// scans cover a directory that just appeared, and queue its files on the
// live lane.

// scanRun is one requested scan.
type scanRun struct {
	root *rootState
	dir  string
	live bool
	why  string
	// fresh says the index held nothing under the root when this full
	// scan began: no record its files could have can be older than it.
	// Set before the walk queues the first item.
	fresh bool
	// contents, set when the index held no content at all as this full
	// scan began, holds the strong hashes of the files the scan has read,
	// with their contents' ids: one not among them is of a content the
	// index cannot hold yet, unless another writer made it (index.Bulk
	// tells).
	contents *index.Bulk
	// epoch is the tracker epoch the request was registered at; merged
	// holds the requests merged into this one. All are released when the
	// scan ends, and their done channels closed.
	epoch  uint64
	merged []*scanRun
	done   chan struct{}

	mu      sync.Mutex
	pending int           // items queued and not yet done
	idle    chan struct{} // closed when pending drops to 0 after the walk
	walked  bool
}

func (s *scanRun) full() bool { return s.dir == s.root.path }

func (s *scanRun) itemAdded() {
	s.mu.Lock()
	s.pending++
	s.mu.Unlock()
}

func (s *scanRun) itemDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
	if s.pending == 0 && s.walked && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// drained returns a channel closed once every item queued so far is done;
// the walk must have ended.
func (s *scanRun) drained() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.walked = true
	ch := make(chan struct{})
	if s.pending == 0 {
		close(ch)
	} else {
		s.idle = ch
	}
	return ch
}

// queue puts paths on l as items of s, for the workers to bring up to
// date, until ctx is done.
func (s *scanRun) queue(ctx context.Context, l *lanes, paths []string) {
	for _, p := range paths {
		s.itemAdded()
		if !l.push(ctx, s.live, item{path: p, t: ticket{scan: s}}) {
			s.itemDone()
			return
		}
	}
}

// scanner runs scans one at a time, in request order. Requests for a
// directory already queued, or below one, are merged into it.
type scanner struct {
	live    bool
	mu      sync.Mutex
	queue   []*scanRun
	running *scanRun
	wake    chan struct{}
}

func newScanner(live bool) *scanner {
	return &scanner{live: live, wake: make(chan struct{}, 1)}
}

// add queues s unless a queued scan covers it.
func (q *scanner) add(s *scanRun, track *tracker) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, x := range q.queue {
		if under(s.dir, x.dir) {
			x.merged = append(x.merged, s)
			return
		}
	}
	keep := q.queue[:0]
	for _, x := range q.queue {
		if under(x.dir, s.dir) {
			s.merged = append(s.merged, x)
			continue
		}
		keep = append(keep, x)
	}
	q.queue = append(keep, s)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// dropRoot removes the queued scans of root, releasing their epochs.
func (q *scanner) dropRoot(root *rootState, track *tracker) {
	q.mu.Lock()
	defer q.mu.Unlock()
	keep := q.queue[:0]
	for _, x := range q.queue {
		if x.root == root {
			x.finish(track)
			continue
		}
		keep = append(keep, x)
	}
	q.queue = keep
}

// active reports whether a scan is queued or running.
func (q *scanner) active() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running != nil || len(q.queue) > 0
}

// size returns the number of scans queued or running.
func (q *scanner) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.queue)
	if q.running != nil {
		n++
	}
	return n
}

// run runs queued scans until ctx is done.
func (q *scanner) run(ctx context.Context, d *Daemon) {
	for {
		q.mu.Lock()
		var s *scanRun
		if len(q.queue) > 0 {
			s = q.queue[0]
			q.queue = q.queue[1:]
			q.running = s
		}
		q.mu.Unlock()
		if s == nil {
			select {
			case <-ctx.Done():
				return
			case <-q.wake:
				continue
			}
		}
		d.runScan(ctx, s)
		q.mu.Lock()
		q.running = nil
		q.mu.Unlock()
		s.finish(d.track)
		if ctx.Err() != nil {
			return
		}
	}
}

// finish releases s and the requests merged into it.
func (s *scanRun) finish(track *tracker) {
	for _, x := range s.merged {
		x.finish(track)
	}
	if s.full() {
		s.root.mu.Lock()
		s.root.fullQueued--
		s.root.mu.Unlock()
	}
	track.done(s.epoch)
	close(s.done)
}

// requestScan queues a scan of dir, which lies under root. The returned
// scan's done channel is closed when a scan covering dir has ended. The
// request is registered with the tracker at once, so a Wait that begins
// after requestScan has returned waits for the scan; a full scan makes the
// root show as scanning until it has ended.
func (d *Daemon) requestScan(root *rootState, dir string, live bool, why string) *scanRun {
	return d.requestScanAt(root, dir, live, why, 0)
}

// requestScanAt is requestScan registered at epoch, or at the current one
// if 0: a scan that takes over older work keeps that work's waiters
// waiting.
func (d *Daemon) requestScanAt(root *rootState, dir string, live bool, why string, epoch uint64) *scanRun {
	if epoch == 0 {
		epoch = d.track.begin()
	} else {
		d.track.add(epoch)
	}
	s := &scanRun{root: root, dir: dir, live: live, why: why, epoch: epoch, done: make(chan struct{})}
	if s.full() {
		root.mu.Lock()
		root.fullQueued++
		root.mu.Unlock()
	}
	if live {
		d.live.add(s, d.track)
	} else {
		d.bulk.add(s, d.track)
	}
	return s
}

// runScan walks s.dir, queues its files, waits for them, then queues the
// records of vanished files for removal, and waits for those.
func (d *Daemon) runScan(ctx context.Context, s *scanRun) {
	root := s.root
	ctx, cancel := root.context(ctx)
	defer cancel()
	if ctx.Err() != nil {
		return
	}
	if s.full() {
		root.beginScan()
		root.denied.rescanning()
		d.log.Info("scan started", "root", root.path, "why", s.why)
		stop := d.progress(ctx, root)
		defer stop()
	} else {
		d.log.Debug("scan started", "dir", s.dir, "why", s.why)
	}
	// A full scan of a watched root into an index that holds nothing
	// under it needs no removal pass: every record it leaves was written
	// after the watches were in place, and they report any removal since.
	s.fresh = s.full() && !d.ix.hasFilesUnder(s.dir)
	if s.fresh {
		s.contents = d.ix.NewBulk() // nil unless the index holds nothing
		defer s.contents.End()
	}
	fresh := s.fresh && !root.polled && d.watch != nil
	f := d.filter()
	var merge *recordMerge
	if s.full() && !s.fresh {
		merge = newRecordMerge(d, s.dir) // reconcile.go
	}
	// A fresh scan has no records to compare the files with: the walk
	// leaves their lstat out, and the worker that opens each file stats it.
	wo := watcher.WalkOptions{Root: root.path, Exclude: f.exclude, NoInfo: s.fresh}
	if s.full() && d.watch != nil && root.watchBelow.Swap(false) {
		wo.OnDir = d.watchOnWalk(root)
	}
	err := watcher.Walk(ctx, s.dir, wo, func(e watcher.Entry) error {
		switch e.Kind {
		case watcher.Symlink:
			d.count.symlinks.Add(1)
			return nil
		case watcher.Special:
			d.count.special.Add(1)
			return nil
		case watcher.Vanished:
			return nil // the removal pass below deals with its record
		case watcher.Unreadable:
			d.skip(root, e.Path, fmt.Errorf("%s: %w: %w", e.Path, errUnreadable, e.Err))
			return nil
		}
		if isCookie(e.Path) {
			return nil
		}
		if s.full() {
			root.filesSeen.Add(1)
			if e.Info != nil { // else counted by the worker
				root.bytesSeen.Add(uint64(e.Info.Size()))
			}
		}
		if merge != nil {
			if rec, ok := merge.record(e.Path); ok && d.unchanged(rec, e.Info, f) {
				d.count.unchanged.Add(1)
				root.filesDone.Add(1)
				root.bytesDone.Add(uint64(e.Info.Size()))
				return nil
			}
		}
		s.itemAdded()
		if !d.lanes.push(ctx, s.live, item{path: e.Path, info: e.Info, walked: true, t: ticket{scan: s}}) {
			s.itemDone()
			return ctx.Err()
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		// The directory itself is gone or unreadable.
		if isPermission(err) && root.denied.add(s.dir, err) {
			d.errs.add(err.Error())
			d.log.Warn("directory cannot be listed: its files are left out until its permissions change", "dir", s.dir, "err", err)
		}
		if s.full() {
			root.fail(err)
			d.errs.add(err.Error())
			d.log.Error("scan failed", "root", root.path, "err", err)
		} else {
			d.log.Debug("scan of a directory failed", "dir", s.dir, "err", err)
		}
	}
	if s.full() {
		root.walkDone.Store(true)
	}
	if !waitChan(ctx, s.drained()) {
		return
	}
	if s.fresh {
		// Before the scan ends (and Wait and readiness with it), every
		// file it read is found by queries. A failure leaves the postings
		// pending, to be written by the fault loop or the next Wait.
		_ = d.ix.Flush()
	}
	// Records of files no longer there: route them through the workers, so
	// a removal is ordered with any read of the same path.
	s2 := &scanRun{root: root, dir: s.dir, live: s.live}
	switch {
	case fresh && err == nil && root.watchedWhole():
		d.log.Debug("removal pass skipped: first scan of a watched root", "root", root.path)
	case merge != nil && err == nil:
		d.queueUnmet(ctx, s2, merge) // reconcile.go
	case err == nil || !s.full():
		d.queueVanished(ctx, s2)
	}
	if !waitChan(ctx, s2.drained()) {
		return
	}
	if s.full() {
		root.endScan(err)
		st := root.status()
		d.log.Info("scan finished", "root", root.path, "files", st.FilesSeen, "read", st.FilesRead,
			"bytes_read", st.BytesRead, "elapsed", time.Duration(st.ScanSecs*float64(time.Second)).Round(time.Millisecond))
	}
}

// watchOnWalk returns the OnDir of a walk of root that watches the
// directories below it (startRoot watched root alone), each before the
// walk lists it. Below a directory the kernel refused to watch, none is
// watched, as watcher.AddRoot leaves them.
func (d *Daemon) watchOnWalk(root *rootState) func(dir string) error {
	refused := root.unwatchedDirs()
	h := d.handler()
	return func(dir string) error {
		if dir == root.path {
			return nil
		}
		for _, u := range refused {
			if under(dir, u) {
				return nil
			}
		}
		if testHookWatchDir != nil {
			testHookWatchDir(dir)
		}
		if err := d.watch.WatchDir(dir, h); err != nil {
			refused = append(refused, dir)
		}
		return nil
	}
}

// testHookWatchDir, when set, is called by a first scan's walk just
// before it watches a directory: tests change the tree there.
var testHookWatchDir func(dir string)

// queueVanished queues the records under s.dir whose files are no longer
// regular files (or are now excluded) as items of s.
func (d *Daemon) queueVanished(ctx context.Context, s *scanRun) {
	var gone []string
	f := d.filter()
	err := d.ix.Files(dirPrefix(s.dir), func(rec index.FileRecord) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if isCookie(rec.Path) || f.excluded(s.root.path, rec.Path, false) {
			gone = append(gone, rec.Path)
			return nil
		}
		if st, err := os.Lstat(rec.Path); err != nil || !st.Mode().IsRegular() {
			gone = append(gone, rec.Path)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("listing records failed", "dir", s.dir, "err", err)
		}
		return
	}
	s.queue(ctx, d.lanes, gone)
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func waitChan(ctx context.Context, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// dropOutsideRoots removes records of files outside every root, left from a
// run with other roots, or from a removal a stop interrupted (forget.go).
// It reads only the paths between the roots, and removes them as a removal
// does, forgetBatch at a time once Pebble has no backlog.
func (d *Daemon) dropOutsideRoots(ctx context.Context) error {
	var drop []string
	collect := func(p string) error {
		if d.rootOf(p) == nil {
			drop = append(drop, p)
		}
		return nil
	}
	// Roots do not nest; their prefixes sort otherwise than their paths
	// ("/a-b/" before "/a/").
	var prefixes []string
	for _, r := range d.rootList() {
		prefixes = append(prefixes, dirPrefix(r.path))
	}
	slices.Sort(prefixes)
	lo := ""
	for _, prefix := range prefixes {
		if err := d.ix.Paths(lo, prefix, collect); err != nil {
			return err
		}
		lo = prefixEnd(prefix)
	}
	if err := d.ix.Paths(lo, "", collect); err != nil {
		return err
	}
	var removed int
	for len(drop) > 0 {
		if err := d.ix.cur().WaitBacklog(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopping: the next start goes on
			}
			return err
		}
		n := min(forgetBatch, len(drop))
		k, _, err := d.ix.RemovePaths(drop[:n])
		if err != nil {
			d.count.errors.Add(1)
			d.log.Error("removing files outside the roots failed", "from", drop[0], "count", n, "err", err)
		}
		d.count.removed.Add(uint64(k))
		removed += k
		drop = drop[n:]
	}
	if removed > 0 {
		d.log.Info("removed files outside the roots", "count", removed)
	}
	return nil
}

// prefixEnd returns the least string greater than every string that
// starts with p, which ends with a separator.
func prefixEnd(p string) string {
	return p[:len(p)-1] + string(p[len(p)-1]+1)
}

// progress logs root's scan progress periodically until the returned func
// is called.
func (d *Daemon) progress(ctx context.Context, root *rootState) (stop func()) {
	return every(ctx, d.cfg.ProgressEvery, func() {
		st := root.status()
		args := []any{"root", root.path, "files_seen", st.FilesSeen, "files_done", st.FilesDone,
			"files_read", st.FilesRead, "mb_read", st.BytesRead >> 20,
			"mb_per_s", fmt.Sprintf("%.1f", st.BytesPerSec/1e6)}
		if st.ETASecs != nil {
			args = append(args, "eta", (time.Duration(*st.ETASecs) * time.Second).String())
		}
		d.log.Info("scan progress", args...)
	})
}
