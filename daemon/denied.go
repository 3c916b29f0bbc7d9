package daemon

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sif-dev/sif/ipc"
)

// Files and directories the daemon may not read (EACCES, EPERM: it runs
// as a user others can lock out) are left out of the index, and their
// records dropped, as a fresh scan would; each root keeps them as denied,
// and the status lists them. They come back by themselves:
//
//   - A change of permissions raises an attribute event (IN_ATTRIB) on the
//     path, reported by its parent's watch: for a file, its settled change
//     reads it again as any change does; for a directory, the worker that
//     finds it a directory looks whether it holds denied paths (or is one)
//     and can be listed now, and if so watches it and scans it again as a
//     new directory (retryDenied). A watched directory that can no longer
//     be listed is rescanned, so that its files leave the index and it is
//     listed as denied.
//   - Changes that raise no event (an ACL inherited, a group membership,
//     a parent's permissions) are caught by a look every faultPoll at a
//     few of the denied paths in turn (retryDeniedPaths).

const (
	// maxDenied bounds the paths a root keeps as denied. Past it, further
	// ones are only counted as unreadable, and a change of permissions
	// of any directory rescans it.
	maxDenied = 10000
	// maxDeniedShown is how many of them the status names.
	maxDeniedShown = 10
	// deniedPerPoll is how many denied paths a poll looks at, in turn.
	deniedPerPoll = 64
)

// deniedSet is a root's paths that could not be read for lack of
// permission, with why. Its methods are safe to call concurrently.
type deniedSet struct {
	n    atomic.Int64 // len(paths), read without the lock
	mu   sync.Mutex
	m    map[string]string
	more bool   // some were not kept: maxDenied reached
	next string // where the next poll starts
}

// rescanning is called as a full scan of the root begins: it finds again
// what is denied, so the paths not kept for want of room may be kept now.
func (s *deniedSet) rescanning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.more = false
}

// isPermission reports whether err says the daemon lacks the right.
func isPermission(err error) bool {
	return errors.Is(err, fs.ErrPermission)
}

// add records path as denied for err, and reports whether it is new.
func (s *deniedSet) add(path string, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[path]; ok {
		return false
	}
	if len(s.m) >= maxDenied {
		s.more = true
		return true
	}
	if s.m == nil {
		s.m = make(map[string]string)
	}
	s.m[path] = err.Error()
	s.n.Store(int64(len(s.m)))
	return true
}

// remove forgets path.
func (s *deniedSet) remove(path string) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, path)
	s.n.Store(int64(len(s.m)))
}

// clearUnder forgets dir and every path below it, and reports whether
// there were any.
func (s *deniedSet) clearUnder(dir string) bool {
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for p := range s.m {
		if under(p, dir) {
			delete(s.m, p)
			found = true
		}
	}
	s.n.Store(int64(len(s.m)))
	return found
}

// holds reports whether dir, or a path below it, is denied; or whether
// paths were left out for want of room, which any might be.
func (s *deniedSet) holds(dir string) bool {
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.more {
		return true
	}
	for p := range s.m {
		if under(p, dir) {
			return true
		}
	}
	return false
}

// above reports whether a directory above path (not path itself) is
// denied: path cannot be reached for that reason.
func (s *deniedSet) above(path string) bool {
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.m {
		if p != path && under(path, p) {
			return true
		}
	}
	return false
}

// batch returns up to n denied paths, in path order from where the last
// batch ended, wrapping around.
func (s *deniedSet) batch(n int) []string {
	if s.n.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	all := slices.Sorted(maps.Keys(s.m))
	i, _ := slices.BinarySearch(all, s.next)
	out := all[i:min(len(all), i+n)]
	if len(out) < n {
		out = append(out, all[:min(i, n-len(out))]...)
	}
	if len(out) > 0 {
		s.next = out[len(out)-1] + "\x00"
	}
	return slices.Clone(out)
}

// status returns what the status shows of the set, or nil if it is empty.
func (s *deniedSet) status() *ipc.DeniedStatus {
	if s.n.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) == 0 {
		return nil
	}
	st := &ipc.DeniedStatus{Count: len(s.m), More: s.more}
	for p := range s.m {
		st.Paths = append(st.Paths, p)
	}
	slices.Sort(st.Paths)
	st.Paths = st.Paths[:min(len(st.Paths), maxDeniedShown)]
	return st
}

// dirChanged is called by a worker that found the changed path dir to
// be a directory (its permissions, owner or times changed). If dir is
// denied, or holds denied paths, and can be listed now, it is watched and
// scanned again; if it cannot be listed now, and could before, it is
// rescanned, so that its files leave the index and it is listed as
// denied.
func (d *Daemon) dirChanged(r *rootState, dir string) {
	err := canList(dir)
	if r.denied.holds(dir) {
		if err == nil {
			d.retryDenied(r, dir, "permissions changed")
		}
		return
	}
	if isPermission(err) {
		d.log.Debug("directory can no longer be listed: rescanning it", "dir", dir, "err", err)
		d.requestScan(r, dir, dir != r.path, "permissions changed")
	}
}

// retryDenied scans dir again, which holds denied paths or is one and can
// be listed now: it forgets the denied paths below it (the scan finds
// those still denied again), watches it and what is below it (as a new
// directory) and scans it.
func (d *Daemon) retryDenied(r *rootState, dir, why string) {
	r.denied.clearUnder(dir)
	r.clearUnwatchedUnder(dir)
	d.log.Info("directory readable again: scanning it", "dir", dir, "why", why)
	if d.watch != nil && !r.polled {
		if dir == r.path {
			if err := d.watch.AddRootShallow(r.path, d.handler()); err == nil {
				r.watchBelow.Store(true)
			}
		} else if d.watch.WatchAgain(dir) {
			return // reported by DirAdded, which scans it
		}
	}
	d.requestScan(r, dir, dir != r.path, why)
}

// retryDeniedPaths looks at a few denied paths of each root, in turn: one
// that can be read now is read again (a file) or scanned again (a
// directory), one that is gone is forgotten. It is the backstop for
// changes of rights that raise no event.
func (d *Daemon) retryDeniedPaths() {
	for _, r := range d.rootList() {
		for _, p := range r.denied.batch(deniedPerPoll) {
			st, err := os.Lstat(p)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				r.denied.remove(p)
			case err != nil:
			case st.IsDir():
				if canList(p) == nil {
					d.retryDenied(r, p, "readable again")
				}
			case canRead(p) == nil:
				r.denied.remove(p)
				d.touch(p, 0, false)
			}
		}
	}
}
