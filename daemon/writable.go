package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sif-dev/sif/index"
)

// An index directory that stops taking writes (its filesystem remounted
// read-only, a read-only bind mount over it, chattr +i, its permissions
// changed) puts index writes on hold as a full disk does, before Pebble
// meets it: Pebble cannot survive a write of its log failing. Before each
// write (at most every 100 ms) and at every fault poll the daemon asks the
// kernel whether it may write the directory (dirWritable: access(2) with
// W_OK, which reports a read-only mount and an immutable directory); a
// write that Pebble found refused is reported by the index
// (index.Options.OnUnwritable). Writes resume once a file can be created,
// written, synced and removed in the directory again (probeWritable).

// errUnwritable marks the hold of writes on an index directory that does
// not take them; its text is the status's reason.
type errUnwritable struct {
	reason string
	err    error
}

func (e *errUnwritable) Error() string { return e.reason + ": " + e.err.Error() }
func (e *errUnwritable) Unwrap() []error {
	return []error{errWritesHeld, e.err}
}

// unwritable returns the hold's error for err, an error of a write to the
// index directory dir that IsUnwritable.
func unwritable(dir string, err error) error {
	reason := "index directory not writable"
	switch {
	case errors.Is(err, syscall.EROFS):
		reason = "index directory on a read-only filesystem"
	case errors.Is(err, syscall.EPERM):
		reason = "index directory not writable (immutable?)"
	case errors.Is(err, syscall.EACCES):
		reason = "index directory not writable (permission denied)"
	}
	return &errUnwritable{reason: reason, err: fmt.Errorf("%s: %w", dir, err)}
}

// holdReason returns the status's reason for a hold of writes after err,
// or "" for the default reasons.
func holdReason(err error) string {
	if e, ok := errors.AsType[*errUnwritable](err); ok {
		return e.reason
	}
	return ""
}

// dirWritableCheck is dirWritable, a variable so that tests can refuse
// writes.
var dirWritableCheck = dirWritable

// checkWritable puts writes on hold when the index directory does not
// take writes. Like checkSpace, it looks at most every 100 ms unless force
// is set.
func (f *faults) checkWritable(force bool) error {
	if !f.due(&f.lastWritable, force) {
		return nil
	}
	err := dirWritableCheck(f.db)
	if err == nil || !index.IsUnwritable(err) {
		return nil
	}
	err = unwritable(f.db, err)
	f.holdWrites(err, false)
	return err
}

// onUnwritable is the index's report of a write that the filesystem
// refused (index.Options.OnUnwritable), on the goroutine of the write.
func (f *faults) onUnwritable(err error) {
	if isNoSpace(err) {
		f.holdWrites(err, false)
		return
	}
	f.holdWrites(unwritable(f.db, err), false)
}

// writableAgain reports whether writes to the index directory can resume:
// a file can be created, written, synced and removed in it.
func (f *faults) writableAgain() bool {
	if err := probeDir(f.db); err != nil {
		f.log.Debug("the index directory still does not take writes", "db", f.db, "err", err)
		return false
	}
	return true
}

// probeDir is probeWritable, a variable so that tests can refuse writes.
var probeDir = probeWritable

// probeName is the file probeWritable writes in the index directory; Pebble
// ignores files it does not know.
const probeName = "sifd-probe.tmp"

// probeWritable creates, writes, syncs and removes a small file in dir.
func probeWritable(dir string) error {
	name := filepath.Join(dir, probeName)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte("sifd\n"))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return err
}
