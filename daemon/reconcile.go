package daemon

import (
	"context"
	"io/fs"
	"slices"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc/filestat"
)

// overflow schedules a reconcile of root after the kernel dropped events.
// Repeated overflows back off: a reconcile waits twice as long after the
// previous one each time, up to maxOverflowBackoff.
func (d *Daemon) overflow(rootPath string) {
	r := d.rootOf(rootPath)
	if r == nil {
		return
	}
	r.mu.Lock()
	now := time.Now()
	if r.overflowDue {
		r.mu.Unlock()
		return
	}
	var wait time.Duration
	if !r.lastOverflow.IsZero() && now.Sub(r.lastOverflow) < 2*max(r.backoff, minOverflowBackoff) {
		r.backoff = min(max(2*r.backoff, minOverflowBackoff), maxOverflowBackoff)
		wait = r.backoff
	} else {
		r.backoff = 0
	}
	r.lastOverflow = now
	r.overflowDue = true
	r.mu.Unlock()
	d.log.Warn("events were lost: reconciling the root", "root", r.path, "after", wait)
	time.AfterFunc(wait, func() {
		// The reconcile is queued before overflowDue is cleared, so a
		// Wait sees either the flag (and asks for a reconcile itself) or
		// the queued reconcile in its epoch.
		if r.ctx.Err() == nil {
			d.requestScan(r, r.path, false, "events lost")
		}
		r.mu.Lock()
		r.overflowDue = false
		r.mu.Unlock()
	})
}

const (
	minOverflowBackoff = time.Second
	maxOverflowBackoff = 5 * time.Minute
)

// periodic rescans, every rescan interval, the roots without events and
// the directories that could not be watched; and every faultPoll it looks
// whether paths denied for lack of permission can be read now.
func (d *Daemon) periodic(ctx context.Context) {
	t := time.NewTicker(d.cfg.RescanInterval)
	defer t.Stop()
	poll := time.NewTicker(faultPoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			d.retryDeniedPaths()
			continue
		case <-t.C:
		}
		for _, r := range d.rootList() {
			if r.polled {
				d.requestScan(r, r.path, false, "periodic rescan")
				continue
			}
			for _, dir := range r.unwatchedDirs() {
				d.requestScan(r, dir, false, "not watched")
			}
		}
	}
}

// A full scan of a root the index already holds (a restart, a reconcile)
// merges the walk with the index's records under the root, read in path
// order in batches (index.MetasAfter) rather than looked up one by one. A
// walked file whose record matches its metadata is counted unchanged at
// once, without going through a lane, a claim and a lookup; the others go
// to the workers as in any scan. The records the walk did not meet are
// the vanished files' (or excluded ones'): they are queued for removal
// once the walk's items are done, so a file moved while sifd was down
// finds its old record and keeps it (Daemon.renamed). No record is
// looked up twice and no file is stat'ed twice.
//
// The walk lists names in lexical order, which is path order except
// around names that sort before the separator ("a.txt" and "a-b" sort
// before "a/x" as paths, after "a" as names): records the merge passes
// over are kept aside until the walk ends, and a walked file finds its
// record there.

// mergeBatch is the number of records read from the index at a time.
const mergeBatch = 1024

// recordMerge is the index side of a merge: the records under a
// directory in path order.
type recordMerge struct {
	d      *Daemon
	prefix string
	buf    []index.FileMeta
	next   int    // buf[next:] not yet passed
	after  string // the last path read
	end    bool   // the index holds no more records under prefix
	failed bool   // reading the index failed: the merge has given up
	// passed holds the records the merge went past without meeting their
	// files in the walk.
	passed map[string]index.FileMeta
}

func newRecordMerge(d *Daemon, dir string) *recordMerge {
	return &recordMerge{d: d, prefix: dirPrefix(dir), passed: make(map[string]index.FileMeta)}
}

// fill reads the next batch once the last one is used up; it reports
// whether a record is at m.buf[m.next].
func (m *recordMerge) fill() bool {
	if m.next < len(m.buf) {
		return true
	}
	if m.end || m.failed {
		return false
	}
	buf, err := m.d.ix.MetasAfter(m.prefix, m.after, mergeBatch, m.buf[:0])
	if err != nil {
		m.failed = true
		m.d.log.Error("reading records failed: checking the files one by one", "dir", m.prefix, "err", err)
		return false
	}
	m.buf, m.next = buf, 0
	if len(buf) < mergeBatch {
		m.end = true
	}
	if len(buf) == 0 {
		return false
	}
	m.after = buf[len(buf)-1].Path
	return true
}

// record returns the record of path, if the merge holds it, passing over
// the records before it.
func (m *recordMerge) record(path string) (index.FileMeta, bool) {
	for m.fill() {
		rec := m.buf[m.next]
		if rec.Path >= path {
			if rec.Path != path {
				break
			}
			m.next++
			return rec, true
		}
		m.passed[rec.Path] = rec
		m.next++
	}
	rec, ok := m.passed[path]
	if ok {
		delete(m.passed, path)
	}
	return rec, ok
}

// unmet returns the paths of the records the walk did not meet, in path
// order, reading the rest of the index under the directory. ok is false
// if the merge gave up: the caller must check the records another way.
func (m *recordMerge) unmet() (paths []string, ok bool) {
	for m.fill() {
		m.passed[m.buf[m.next].Path] = m.buf[m.next]
		m.next++
	}
	if m.failed {
		return nil, false
	}
	paths = make([]string, 0, len(m.passed))
	for p := range m.passed {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths, true
}

// unchanged reports whether the file walked at path, with info, is
// indexed as it is (sameMeta), and nothing else makes a worker look at it
// (a size limit it is now outside of, an unclean previous shutdown).
func (d *Daemon) unchanged(rec index.FileMeta, info fs.FileInfo, f *filter) bool {
	return sameMeta(rec, info) && !d.racy.covers(rec.MtimeNs) && (f.minSize <= 0 || info.Size() >= f.minSize) && !f.tooLarge(info.Size())
}

// sameMeta reports whether info describes the file as it was when rec was
// written: same size, modification time, device, inode and status change
// time. The ctime catches a rewrite whose mtime was set back (by touch -d,
// rsync -t, tar x): nothing can set it. A record without one (CtimeNs 0)
// is compared without.
func sameMeta(rec index.FileMeta, info fs.FileInfo) bool {
	dev, ino := fileID(info)
	return rec.Size == info.Size() && rec.MtimeNs == info.ModTime().UnixNano() && rec.Dev == dev && rec.Ino == ino &&
		(rec.CtimeNs == 0 || rec.CtimeNs == filestat.Ctime(info))
}

// queueUnmet queues, as items of s, the records under s.dir that the
// merge did not meet in the walk: the workers remove those of files that
// are gone. If the merge gave up, every record is checked (queueVanished).
func (d *Daemon) queueUnmet(ctx context.Context, s *scanRun, m *recordMerge) {
	paths, ok := m.unmet()
	if !ok {
		d.queueVanished(ctx, s)
		return
	}
	s.queue(ctx, d.lanes, paths)
}
