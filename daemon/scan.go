package daemon

import (
	"context"
	"fmt"
	"os"
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
	s := &scanRun{root: root, dir: dir, live: live, why: why, epoch: d.track.begin(), done: make(chan struct{})}
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
		d.log.Info("scan started", "root", root.path, "why", s.why)
		stop := d.progress(ctx, root)
		defer stop()
	} else {
		d.log.Debug("scan started", "dir", s.dir, "why", s.why)
	}
	f := d.filter()
	err := watcher.Walk(ctx, s.dir, watcher.WalkOptions{Root: root.path, Exclude: f.exclude}, func(e watcher.Entry) error {
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
			d.skip(root, e.Path, fmt.Errorf("%s: %w: %v", e.Path, errUnreadable, e.Err))
			return nil
		}
		if isCookie(e.Path) {
			return nil
		}
		if s.full() {
			root.filesSeen.Add(1)
			root.bytesSeen.Add(uint64(e.Info.Size()))
		}
		s.itemAdded()
		if !d.lanes.push(ctx, s.live, item{path: e.Path, info: e.Info, t: ticket{scan: s}}) {
			s.itemDone()
			return ctx.Err()
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		// The directory itself is gone or unreadable.
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
	// Records of files no longer there: route them through the workers, so
	// a removal is ordered with any read of the same path.
	s2 := &scanRun{root: root, dir: s.dir, live: s.live}
	if err == nil || !s.full() {
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
	for _, p := range gone {
		s.itemAdded()
		if !d.lanes.push(ctx, s.live, item{path: p, t: ticket{scan: s}}) {
			s.itemDone()
			return
		}
	}
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
// run with other roots.
func (d *Daemon) dropOutsideRoots() error {
	var drop []string
	err := d.ix.Files("", func(rec index.FileRecord) error {
		if d.rootOf(rec.Path) == nil {
			drop = append(drop, rec.Path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range drop {
		d.forget(p)
	}
	if len(drop) > 0 {
		d.log.Info("removed files outside the roots", "count", len(drop))
	}
	return nil
}

// progress logs root's scan progress periodically until the returned func
// is called.
func (d *Daemon) progress(ctx context.Context, root *rootState) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d.cfg.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				st := root.status()
				args := []any{"root", root.path, "files_seen", st.FilesSeen, "files_done", st.FilesDone,
					"files_read", st.FilesRead, "mb_read", st.BytesRead >> 20,
					"mb_per_s", fmt.Sprintf("%.1f", st.BytesPerSec/1e6)}
				if st.ETASecs != nil {
					args = append(args, "eta", (time.Duration(*st.ETASecs) * time.Second).String())
				}
				d.log.Info("scan progress", args...)
			}
		}
	}()
	return func() { cancel(); <-done }
}
