package daemon

import (
	"context"
	"sync"
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

// attempts counts, per path, the attempts in a row at something that
// may fail again (a read that found the file changing, a removal put
// off), up to a limit.
type attempts struct {
	limit int

	mu sync.Mutex
	n  map[string]int
}

func newAttempts(limit int) *attempts {
	return &attempts{limit: limit, n: make(map[string]int)}
}

// more counts one more attempt for path and reports whether it is within
// the limit; past it, the count starts over.
func (a *attempts) more(path string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.n[path] + 1
	if n > a.limit {
		delete(a.n, path)
		return false
	}
	a.n[path] = n
	return true
}

// clear forgets the attempts for path.
func (a *attempts) clear(path string) {
	a.mu.Lock()
	delete(a.n, path)
	a.mu.Unlock()
}
