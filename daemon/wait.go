package daemon

import (
	"context"
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
// watcher, settling. Like watchman, Wait writes a cookie file and waits
// for the watcher to report it: events come in order, so every earlier
// change has then been seen. On Linux one cookie in the daemon's own
// directory answers for every watched root; elsewhere each root gets one
// (see cookieJar). It then closes the tracker's current
// epoch and waits until all the work registered in it is done. Changes
// kept while index writes are on hold count as not done: Wait returns once
// writes have resumed and the kept changes are applied, or times out. Roots
// without events, directories that could not be watched, and roots that
// cannot take a cookie (not writable, or their exclusions would hide it)
// are rescanned instead, which is slower but as sure.
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
	var watched []*rootState
	for _, r := range d.rootList() {
		if r.polled || d.watch == nil {
			d.requestScan(r, r.path, false, "wait")
			resp.Rescanned = append(resp.Rescanned, r.path)
			continue
		}
		for _, dir := range r.unwatchedDirs() {
			d.requestScan(r, dir, false, "wait")
		}
		watched = append(watched, r)
	}
	synced := 0
	if d.cookies.dir != "" && len(watched) > 0 {
		// One cookie of the daemon's own answers for every watched root.
		c, err := d.cookies.create(d.cookies.dir)
		if err == nil {
			pending = append(pending, c)
			synced, watched = len(watched), nil
		} else {
			d.log.Warn("cannot write a cookie file for wait in the daemon's own directory: writing them in the roots", "err", err)
		}
	}
	for _, r := range watched {
		if d.filter().hidesCookie(r.path) {
			d.log.Debug("the exclusions hide wait's cookie file: rescanning the root instead", "root", r.path)
			d.requestScan(r, r.path, false, "wait")
			resp.Rescanned = append(resp.Rescanned, r.path)
			continue
		}
		c, err := d.cookies.create(r.path)
		if err != nil {
			d.log.Warn("cannot write a cookie file for wait: rescanning the root instead", "root", r.path, "err", err)
			d.requestScan(r, r.path, false, "wait")
			resp.Rescanned = append(resp.Rescanned, r.path)
			continue
		}
		pending = append(pending, c)
		synced++
	}
	for _, c := range pending {
		select {
		case <-c.seen:
		case <-ctx.Done():
			return resp, ctx.Err()
		}
	}
	resp.Cookies = synced
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
		for {
			lifted := d.faults.lifted()
			if !d.faults.keeping() {
				break
			}
			select {
			case <-lifted:
			case <-ctx.Done():
				return resp, ctx.Err()
			}
		}
	}
	// A first scan writes the postings of its new contents many at a
	// time: those still pending (a scan that failed to write them) are
	// written now, once writes are not on hold.
	for {
		lifted := d.faults.lifted()
		err := d.ix.Flush()
		if err == nil {
			break
		}
		if !d.faults.onHold() {
			return resp, err
		}
		select {
		case <-lifted:
		case <-ctx.Done():
			return resp, ctx.Err()
		}
	}
	return resp, nil
}
