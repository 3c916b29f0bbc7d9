package index

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The guard sits between Pebble and the filesystem (guardFS). Pebble
// cannot survive some writes failing: when it cannot close its
// write-ahead log, create the next one or write either, or write its
// MANIFEST, it panics, in rotateWAL with its own lock released, which the
// Go runtime turns into a fatal error that no recover catches (upstream
// cockroachdb/pebble#5601). A filesystem that turned read-only, refuses
// new files (chattr +i on the directory) or is full is a fault the
// daemon outlives, so such a write is not failed: it waits, trying again
// with back-off, until the filesystem takes it. It waits with Pebble's
// commit lock held, so writes wait too; reads, flushes and compactions go
// on (these fail and are retried by Pebble as background errors). Every
// write that fails for these reasons, critical or not, is reported to
// Options.OnUnwritable first, which puts the daemon's writes on hold.
//
// Close and Abandon do not wait for a stalled write for longer than
// abandonWait: they return ErrWedged, and only a new process opens the
// index again.

// Retry intervals of a write that waits for the filesystem, and the pause
// before another write that the filesystem refused fails: Pebble tries a
// failed flush again at once, over and over, and each try would log a
// background error.
var (
	guardMinRetry = 50 * time.Millisecond
	guardMaxRetry = 2 * time.Second
	guardPause    = time.Second
)

// IsUnwritable reports whether err says that the filesystem does not
// take writes for now: it is read-only (EROFS), refuses them (EPERM,
// EACCES: an immutable directory, changed permissions) or is full
// (ENOSPC, EDQUOT).
func IsUnwritable(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{syscall.EROFS, syscall.EPERM, syscall.EACCES, syscall.ENOSPC, syscall.EDQUOT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// critical reports whether Pebble cannot survive a failed write of the
// file named name: its write-ahead logs (NNNNNN.log), MANIFESTs and
// marker files (marker.manifest.*, which name the current MANIFEST).
func critical(name string) bool {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return strings.HasSuffix(name, ".log") || strings.HasPrefix(name, "MANIFEST-") || strings.HasPrefix(name, "marker.")
}

// guard is the state shared by a guardFS and its files.
type guard struct {
	onUnwritable func(error)
	log          *slog.Logger

	mu      sync.Mutex
	waiting int       // writes waiting for the filesystem
	since   time.Time // when the oldest of them began to wait
}

func newGuard(onUnwritable func(error), log *slog.Logger) *guard {
	if onUnwritable == nil {
		onUnwritable = func(error) {}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &guard{onUnwritable: onUnwritable, log: log}
}

// failed reports err to the owner if it says the filesystem does not take
// writes.
func (g *guard) failed(err error) {
	if IsUnwritable(err) {
		g.onUnwritable(err)
	}
}

// refused is failed for the creation or a write of a file Pebble can do
// without (a table, a file of options): it pauses before the error is
// returned, so that Pebble's retries of a flush or compaction do not spin.
func (g *guard) refused(err error) {
	if IsUnwritable(err) {
		g.onUnwritable(err)
		time.Sleep(guardPause)
	}
}

// retry runs try, which failed with err, again until it succeeds or fails
// otherwise than IsUnwritable. op and name say what waits, for the log.
func (g *guard) retry(op, name string, err error, try func() error) error {
	g.onUnwritable(err)
	g.mu.Lock()
	if g.waiting == 0 {
		g.since = time.Now()
	}
	g.waiting++
	g.mu.Unlock()
	g.log.Warn("the index's filesystem refuses a write the database cannot do without: waiting until it takes it",
		"op", op, "file", name, "err", err)
	start := time.Now()
	delay := guardMinRetry
	for {
		time.Sleep(delay)
		delay = min(2*delay, guardMaxRetry)
		if err = try(); !IsUnwritable(err) {
			break
		}
	}
	g.mu.Lock()
	g.waiting--
	g.mu.Unlock()
	g.log.Info("the index's filesystem took the write that waited", "op", op, "file", name,
		"waited", time.Since(start).Round(time.Millisecond), "err", err)
	return err
}

// stalledSince returns since when a write waits for the filesystem, or the
// zero time.
func (g *guard) stalledSince() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting == 0 {
		return time.Time{}
	}
	return g.since
}

// guardFS is the filesystem Pebble is given: the caller's, guarded.
type guardFS struct {
	vfs.FS
	g *guard
}

func (fs guardFS) Unwrap() vfs.FS { return fs.FS }

func (fs guardFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if IsUnwritable(err) && critical(name) {
		err = fs.g.retry("create", name, err, func() (err error) {
			f, err = fs.FS.Create(name, category)
			return err
		})
	} else {
		fs.g.refused(err)
	}
	return fs.wrap(f, name), err
}

func (fs guardFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	fs.g.failed(err)
	return fs.wrap(f, newname), err
}

func (fs guardFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	fs.g.failed(err)
	return fs.wrap(f, name), err
}

func (fs guardFS) Link(oldname, newname string) error {
	err := fs.FS.Link(oldname, newname)
	fs.g.failed(err)
	return err
}

func (fs guardFS) Remove(name string) error {
	err := fs.FS.Remove(name)
	fs.g.failed(err)
	return err
}

func (fs guardFS) Rename(oldname, newname string) error {
	err := fs.FS.Rename(oldname, newname)
	fs.g.failed(err)
	return err
}

// wrap guards the writes of f.
func (fs guardFS) wrap(f vfs.File, name string) vfs.File {
	if f == nil {
		return f
	}
	return guardFile{File: f, g: fs.g, name: name, critical: critical(name)}
}

// guardFile is a file of Pebble's whose writes the filesystem may refuse:
// a write-ahead log or MANIFEST (critical) waits for the filesystem
// instead of failing; another file's write fails after a pause. Sync is
// not retried: after a failed fsync the kernel may have dropped the pages
// it could not write, and a second fsync would succeed without them.
type guardFile struct {
	vfs.File
	g        *guard
	name     string
	critical bool
}

func (f guardFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if !f.critical {
		f.g.refused(err)
		return n, err
	}
	if IsUnwritable(err) {
		err = f.g.retry("write", f.name, err, func() error {
			m, err := f.File.Write(p[n:])
			n += m
			return err
		})
	}
	return n, err
}

func (f guardFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	if !f.critical {
		f.g.refused(err)
		return n, err
	}
	if IsUnwritable(err) {
		err = f.g.retry("write", f.name, err, func() error {
			m, err := f.File.WriteAt(p[n:], off+int64(n))
			n += m
			return err
		})
	}
	return n, err
}

// Preallocate reserves nothing. Pebble preallocates each write-ahead log
// in steps of 1.1 times the largest memtable (17.6 MiB) with fallocate's
// KEEP_SIZE, so that a synced append need not change the file's size; the
// index's writes do not sync, and a first scan, whose memtables grow from
// 256 KiB, keeps up to six logs at once, each holding its blocks until it
// is deleted: 110 MB allocated at the peak of the first scan of Go's
// sources (128 MB), whose index takes 4.4 MB. Pebble ignores the error of
// a preallocation, so not making one changes nothing else.
func (f guardFile) Preallocate(off, n int64) error { return nil }

func (f guardFile) Sync() error {
	err := f.File.Sync()
	f.g.failed(err)
	return err
}
