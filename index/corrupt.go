package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// IsCorrupt reports whether err says the database is damaged: a Pebble
// corruption (a bad block checksum, a torn MANIFEST or log), or something
// sif cannot decode (ErrCorrupt). The cure is to move the index aside and
// rebuild it; ErrOldFormat is also such an error.
func IsCorrupt(err error) bool {
	return err != nil && (errors.Is(err, ErrCorrupt) || pebble.IsCorruptionError(err))
}

// damagedFileError is a Pebble corruption error that names the damaged
// file: its message says plainly which file and what was wrong, where
// Pebble's own joins its detail to a placeholder ("<corruption detail
// carrier>") whose message says nothing.
type damagedFileError struct {
	kind   string // "table", "log", "manifest" or "file"
	path   string
	detail string // what was wrong, as Pebble says it
	err    error  // Pebble's error
}

func (e *damagedFileError) Error() string {
	return fmt.Sprintf("damaged %s %s: %s", e.kind, e.path, e.detail)
}

// Unwrap returns Pebble's error, so that IsCorrupt still tells it.
func (e *damagedFileError) Unwrap() error { return e.err }

// plainCorruption returns err with a plain message when it is a Pebble
// corruption error that names a damaged file (see damagedFileError), and
// err itself otherwise.
func plainCorruption(err error) error {
	var done *damagedFileError
	if err == nil || errors.As(err, &done) {
		return err
	}
	info := pebble.ExtractDataCorruptionInfo(err)
	if info == nil || info.Path == "" {
		return err
	}
	detail := "corrupted"
	if info.Details != nil {
		detail = info.Details.Error()
	}
	// Pebble's detail starts with "pebble: file 000006: ", which the path
	// says better.
	base := filepath.Base(info.Path)
	detail = strings.TrimPrefix(detail, "pebble: ")
	detail = strings.TrimPrefix(detail, "file "+strings.TrimSuffix(base, filepath.Ext(base))+": ")
	kind := "file"
	switch {
	case strings.HasSuffix(base, ".sst"):
		kind = "table"
	case strings.HasSuffix(base, ".log"):
		kind = "log"
	case strings.HasPrefix(base, "MANIFEST"):
		kind = "manifest"
	}
	return &damagedFileError{kind: kind, path: info.Path, detail: detail, err: err}
}

// IsDamaged reports whether err, from Open, says the index's files are
// damaged (a table, log or MANIFEST that is corrupt, cut short or missing),
// as opposed to locked, not readable, or written in another format: what
// Options.MoveAsideCorrupt moves aside.
func IsDamaged(err error) bool { return isUnopenable(err) && !errors.Is(err, ErrOldFormat) }

// isUnopenable reports whether err, from opening a database that exists,
// means its files are damaged beyond Pebble's reach: corruption, or a
// MANIFEST, OPTIONS or table file that is missing or cannot be parsed.
// Lock conflicts and permission errors are not: moving the index aside
// would not cure them.
func isUnopenable(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrLocked), errors.Is(err, ErrParamsMismatch), errors.Is(err, ErrNewFormat),
		errors.Is(err, fs.ErrPermission), errors.Is(err, pebble.ErrDBDoesNotExist):
		return false
	case IsCorrupt(err):
		return true
	}
	// Pebble reports a missing or unparsable MANIFEST (or a table the
	// MANIFEST names) as a plain error naming the file.
	msg := err.Error()
	for _, s := range []string{"MANIFEST", "manifest", "OPTIONS", "CURRENT", "sstable", ".sst", "invalid chunk", "checksum"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// MoveAside renames the index directory dir to dir.KIND-TIME (TIME in UTC,
// 20061123T101500; a suffix is added if that exists) and returns the new
// name. kind says why, as "corrupt" or "old-format". The caller must have
// closed any index open in dir. fsys nil means the OS's filesystem.
func MoveAside(fsys vfs.FS, dir, kind string) (string, error) {
	if fsys == nil {
		fsys = vfs.Default
	}
	base := dir + "." + kind + "-" + time.Now().UTC().Format("20060102T150405")
	aside := base
	for i := 2; ; i++ {
		if _, err := fsys.Stat(aside); err != nil {
			break
		}
		aside = fmt.Sprintf("%s-%d", base, i)
	}
	if err := fsys.Rename(dir, aside); err != nil {
		return "", fmt.Errorf("index.MoveAside %s: %w", dir, err)
	}
	return aside, nil
}

// MoveReason says why Open moved the index aside (see MovedAside): the
// error that made the old one unusable, or "".
func (ix *Index) MoveReason() string { return ix.moveReason }

// Verify reads every key and value of the index, so that Pebble checks the
// checksum of every data block, and returns the first error (IsCorrupt
// tells a damaged database), or ctx's error. It is safe to call
// concurrently with reads and writes, and reads one consistent view.
func (ix *Index) Verify(ctx context.Context) error {
	if err := ix.acquire(); err != nil {
		return fmt.Errorf("index.Verify: %w", err)
	}
	defer ix.release()
	it, err := ix.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("index.Verify %s: %w", ix.dir, err)
	}
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		if _, err := it.ValueAndErr(); err != nil {
			it.Close()
			return fmt.Errorf("index.Verify %s: %w", ix.dir, plainCorruption(err))
		}
		if n++; n%4096 == 0 && ctx.Err() != nil {
			it.Close()
			return ctx.Err()
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("index.Verify %s: %w", ix.dir, plainCorruption(err))
	}
	return nil
}

// abandonWait bounds how long Abandon waits for the operations in
// progress and Pebble's Close.
var abandonWait = 10 * time.Second

// Abandon closes the index without flushing its memtables, for an index
// whose database can no longer be written (its directory deleted, its
// disk full): what was not yet flushed is lost, which an index that is
// about to be rebuilt or reopened and reconciled can afford. Like Close, it
// waits for the operations in progress, and later calls of any method
// return ErrClosed. A panic inside Pebble is returned as an error.
//
// A write whose log write failed inside Pebble leaves Pebble's commit
// pipeline locked for good: the writes after it and Pebble's Close wait
// forever. When the operations in progress and Close have not ended
// within abandonWait, Abandon returns an error wrapping ErrWedged and
// leaves them, and the directory's lock, to the process's end.
func (ix *Index) Abandon() error {
	if !ix.markClosed() {
		return fmt.Errorf("index.Abandon: %w", ErrClosed)
	}
	done := make(chan error, 1)
	go func() { done <- ix.abandon() }()
	select {
	case err := <-done:
		return err
	case <-time.After(abandonWait):
		return fmt.Errorf("index.Abandon %s: %w", ix.dir, ErrWedged)
	}
}

// awaitClose returns what done yields, the result of closing the index;
// but once a write has waited for the filesystem (see guard) for
// abandonWait during the wait, it returns an error wrapping ErrWedged.
func (ix *Index) awaitClose(op string, done <-chan error) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var stalled time.Time
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
		}
		if ix.guard.stalledSince().IsZero() {
			stalled = time.Time{}
			continue
		}
		if stalled.IsZero() {
			stalled = time.Now()
		}
		if time.Since(stalled) >= abandonWait {
			return fmt.Errorf("%s %s: a write waits for the filesystem: %w", op, ix.dir, ErrWedged)
		}
	}
}

func (ix *Index) abandon() (err error) {
	ix.mu.Lock()
	for ix.inflight > 0 {
		ix.idle.Wait()
	}
	ix.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("index.Abandon %s: pebble panicked: %v", ix.dir, p)
		}
	}()
	errs := []error{ix.db.Close(), ix.lock.Close()}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("index.Abandon %s: %w", ix.dir, err)
	}
	return nil
}
