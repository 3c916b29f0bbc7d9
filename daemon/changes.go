package daemon

import (
	"context"
	"time"

	"github.com/sif-dev/sif/watcher"
)

// changeRetries is how often a file that changes while it is read is put
// back to settle again before it is left until its next change.
const changeRetries = 5

// goneDeferrals bounds how often the removal of a directory's records is
// put off while scans of new directories run (which may be the same
// directory, moved: its files are then renamed in the index, not read).
const goneDeferrals = 20

// touch records a change to path, applied once it has settled. epoch is
// the tracker epoch of the change, or 0 for the current one; gone says the
// watcher reported the path removed or renamed away (removals settle a
// little later than changes, so a file's new name is seen before its old
// one goes, and the move costs no read).
//
// The settler's burst carries the oldest epoch of its changes: the touch
// registers one unit at its epoch, and releases the one the burst no
// longer carries (the newer of the two, when it joins a burst).
func (d *Daemon) touch(path string, epoch uint64, gone bool) {
	if epoch == 0 {
		epoch = d.track.begin()
	} else {
		d.track.add(epoch)
	}
	kind := watcher.Changed
	if gone {
		kind = watcher.Removed
	}
	d.track.done(d.settle.Touch(path, epoch, kind))
}

// settled queues a path whose changes have settled, or rescans a
// directory whose changes were too many to keep one by one.
func (d *Daemon) settled(ctx context.Context, s watcher.Settled) {
	if s.Dir {
		d.rescanSettled(s.Path, s.Tag)
		return
	}
	d.changing.settled(s.Path, time.Since(s.First))
	if !d.lanes.push(ctx, true, item{path: s.Path, t: ticket{epoch: s.Tag}}) {
		d.track.done(s.Tag)
	}
}

// rescanSettled rescans dir, where more changes settled than the settler
// keeps one by one (Config.MaxSettling): the directory if it lies under a
// root, else every root under it. The scans take over the burst's epoch.
func (d *Daemon) rescanSettled(dir string, epoch uint64) {
	defer d.track.done(epoch)
	if r := d.rootOf(dir); r != nil {
		d.requestScanAt(r, dir, dir != r.path, "too many changes to keep one by one", epoch)
		return
	}
	for _, r := range d.rootList() {
		if under(r.path, dir) {
			d.requestScanAt(r, r.path, false, "too many changes to keep one by one", epoch)
		}
	}
}

// retryLater puts back a file that changed while it was read, to be read
// once it has settled again. It returns false when the file has changed
// during too many reads in a row: it is then left until its next change.
func (d *Daemon) retryLater(path string, t ticket) bool {
	if !d.bump(d.retries, path, changeRetries) {
		return false
	}
	d.touch(path, t.waitEpoch(), false)
	return true
}

func (d *Daemon) clearRetries(path string) {
	d.pmu.Lock()
	delete(d.retries, path)
	d.pmu.Unlock()
}

// deferGone puts off the removal of the records under path; it returns
// false once it has been put off goneDeferrals times.
func (d *Daemon) deferGone(path string, t ticket) bool {
	if !d.bump(d.deferrals, path, goneDeferrals) {
		return false
	}
	d.touch(path, t.waitEpoch(), true)
	return true
}

// bump counts one more attempt for path in m and reports whether it is
// within limit; past it, the count starts over.
func (d *Daemon) bump(m map[string]int, path string, limit int) bool {
	d.pmu.Lock()
	defer d.pmu.Unlock()
	n := m[path] + 1
	if n > limit {
		delete(m, path)
		return false
	}
	m[path] = n
	return true
}
