package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sif-dev/sif/watcher"
)

// Cookies. Wait writes a file and waits for the watcher to report it:
// events come in order, so every change made before has then been seen.
//
// Where one watcher's events are ordered across all its watches, as
// inotify's are (one queue per instance), one cookie in a directory of the
// daemon's own, StateDir(DB)/cookies, watched like a root, answers for
// every watched root: Wait writes nothing in the users' trees, needs no
// right to write there, and no exclusion pattern can hide the cookie.
// Elsewhere a cookie is written in each root, named with cookiePrefix; a
// root where it cannot be written, or whose exclusions would hide it, is
// rescanned instead.
//
// Neither kind of cookie is ever indexed.
const (
	cookiePrefix = ".sifd-cookie-"
	// privateCookiePrefix starts the names of the cookies in the daemon's
	// own directory: no leading dot, so that excluding hidden files does
	// not hide them.
	privateCookiePrefix = "sifd-cookie-"
	cookieDirName       = "cookies"
)

func isCookie(path string) bool {
	base := filepath.Base(path)
	return strings.HasPrefix(base, cookiePrefix) || strings.HasPrefix(base, privateCookiePrefix)
}

// cookieJar tracks the cookie files written for waits.
type cookieJar struct {
	// dir is the daemon's own watched cookie directory, "" when cookies
	// are written in the roots.
	dir string

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
	prefix := cookiePrefix
	if dir == j.dir {
		prefix = privateCookiePrefix
	}
	j.mu.Lock()
	j.seq++
	c := &cookie{
		path: filepath.Join(dir, fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), j.seq)),
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

// setUpDir makes dir the jar's own cookie directory: it makes it, empties
// it of the cookies a previous run left, and watches it with w, reporting
// to h. Failing that, it returns the error, and Wait writes its cookies in
// the roots, as where the watcher's events are not ordered across its
// watches.
func (j *cookieJar) setUpDir(ctx context.Context, dir string, w *watcher.Watcher, h watcher.Handler) error {
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		var ents []os.DirEntry
		ents, err = os.ReadDir(dir)
		for _, e := range ents {
			if isCookie(e.Name()) {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	if err == nil {
		err = w.AddRoot(ctx, dir, h)
	}
	if err != nil {
		return err
	}
	j.dir = dir
	return nil
}

// hidesCookie reports whether f's exclusions would keep the watcher from
// reporting a cookie written in root.
func (f *filter) hidesCookie(root string) bool {
	return f.excluded(root, filepath.Join(root, cookiePrefix+"0-0"), false)
}
