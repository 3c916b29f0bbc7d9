package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sif-dev/sif/ipc/server"
)

// Wait implements server.Controller: it returns once every change made before
// it was called has been applied to the index.
//
// Work already registered counts: a root's first scan, and any reconcile
// or rescan queued or running. A Wait that arrives while sifd is starting
// first waits until every root's watches are in place and its first scan
// is queued (rootState.begun), so the first scans are always part of
// what it waits for.
//
// Changes may still be on their way: in the kernel's event queue, in the
// watcher, settling. Like watchman, Wait writes a cookie file in each root
// and waits for the watcher to report it: events come in order, so every
// earlier change has then been seen. It then closes the tracker's current
// epoch and waits until all the work registered in it is done. Changes
// kept while index writes are on hold count as not done: Wait returns once
// writes have resumed and the kept changes are applied, or times out. Roots
// without events, directories that could not be watched, and roots the
// daemon cannot write to are rescanned instead, which is slower but as
// sure.
func (d *Daemon) Wait(ctx context.Context, timeout time.Duration) (server.WaitResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var resp server.WaitResult
	var pending []*cookie
	defer func() {
		for _, c := range pending {
			d.cookies.drop(c)
		}
	}()
	for _, r := range d.rootList() {
		select {
		case <-r.begun:
		case <-r.ctx.Done(): // removed meanwhile
		case <-ctx.Done():
			return resp, ctx.Err()
		}
	}
	for _, r := range d.rootList() {
		if r.polled || d.watch == nil {
			d.requestScan(r, r.path, false, "wait")
			resp.Rescanned = append(resp.Rescanned, r.path)
			continue
		}
		for _, dir := range r.unwatchedDirs() {
			d.requestScan(r, dir, false, "wait")
		}
		c, err := d.cookies.create(r.path)
		if err != nil {
			d.log.Warn("cannot write a cookie file for wait: rescanning the root instead", "root", r.path, "err", err)
			d.requestScan(r, r.path, false, "wait")
			resp.Rescanned = append(resp.Rescanned, r.path)
			continue
		}
		pending = append(pending, c)
	}
	for _, c := range pending {
		select {
		case <-c.seen:
		case <-ctx.Done():
			return resp, ctx.Err()
		}
	}
	resp.Cookies = len(pending)
	// Directories created before the cookie may still be getting their
	// watches; their scans are registered once they are reported.
	if d.watch != nil {
		select {
		case <-d.watch.Idle():
		case <-ctx.Done():
			return resp, ctx.Err()
		}
	}
	// Events were lost before the cookies: the reconcile scheduled for it
	// may be backing off. A waiter needs it now.
	for _, r := range d.rootList() {
		r.mu.Lock()
		due := r.overflowDue
		r.mu.Unlock()
		if due {
			d.requestScan(r, r.path, false, "wait after lost events")
			resp.Rescanned = append(resp.Rescanned, r.path)
		}
	}
	// Changes kept while index writes are on hold (the disk is full) are
	// not applied: wait for writes to resume, then for the replay of what
	// waited, which is queued before a waiter can see the hold lifted.
	for {
		d.faults.resume.RLock()
		epoch := d.track.advance()
		d.faults.resume.RUnlock()
		if err := d.track.wait(ctx, epoch); err != nil {
			return resp, err
		}
		if !d.faults.keeping() {
			break
		}
		for d.faults.keeping() {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return resp, ctx.Err()
			}
		}
	}
	return resp, nil
}

// cookieJar tracks the cookie files written for waits.
type cookieJar struct {
	mu   sync.Mutex
	seq  uint64
	open map[string]*cookie
}

type cookie struct {
	path string
	seen chan struct{}
}

// create writes a new cookie file in dir.
func (j *cookieJar) create(dir string) (*cookie, error) {
	j.mu.Lock()
	j.seq++
	c := &cookie{
		path: filepath.Join(dir, fmt.Sprintf("%s%d-%d", cookiePrefix, os.Getpid(), j.seq)),
		seen: make(chan struct{}),
	}
	if j.open == nil {
		j.open = make(map[string]*cookie)
	}
	j.open[c.path] = c
	j.mu.Unlock()
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		j.forget(c)
		return nil, err
	}
	f.Close()
	return c, nil
}

// seen is called when the watcher reports path.
func (j *cookieJar) seen(path string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if c := j.open[path]; c != nil {
		close(c.seen)
		delete(j.open, path)
	}
}

func (j *cookieJar) forget(c *cookie) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.open, c.path)
}

// drop forgets c and removes its file.
func (j *cookieJar) drop(c *cookie) {
	j.forget(c)
	os.Remove(c.path)
}
