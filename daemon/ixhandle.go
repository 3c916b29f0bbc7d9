package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// ixHandle is the daemon's index: the one open now. When the index is
// rebuilt (it was damaged or its directory deleted) or reopened (a write
// failed for want of space), the handle is swapped to a new one. A call
// that meets the old index closed meanwhile is tried once more on the new
// one, so queries never see the swap; a reader that holds the old index
// gets index.ErrClosed from it, never a crash (Close waits for the
// operations in flight).
//
// Every error goes through the daemon's fault handling: a corruption
// asks for a rebuild, running out of space puts index writes on hold.
// Writes are refused at once while they are on hold (errWritesHeld), and
// the paths they were for are kept to be tried again.
type ixHandle struct {
	p      atomic.Pointer[index.Index]
	faults *faults // the daemon's fault handling, told every error
}

// errWritesHeld is returned by writes while the index is degraded.
var errWritesHeld = fmt.Errorf("daemon: index writes on hold: %w", syscall.ENOSPC)

func (h *ixHandle) cur() *index.Index          { return h.p.Load() }
func (h *ixHandle) swap(ix *index.Index)       { h.p.Store(ix) }
func (h *ixHandle) Params() fingerprint.Params { return h.cur().Params() }
func (h *ixHandle) MovedAside() string         { return h.cur().MovedAside() }
func (h *ixHandle) SimiHash() bool             { return h.cur().SimiHash() }

// call runs f on the current index, once more if the index was swapped
// under it, and reports its error to the fault handling.
func call[T any](h *ixHandle, op string, f func(*index.Index) (T, error)) (T, error) {
	ix := h.cur()
	v, err := f(ix)
	if err != nil && errors.Is(err, index.ErrClosed) {
		if now := h.cur(); now != ix {
			v, err = f(now)
		}
	}
	if err != nil {
		h.faults.indexError(op, err)
	}
	return v, err
}

// write runs a write on the current index unless writes are on hold,
// turning a panic inside Pebble (which it raises when a write to its log
// fails) into an error. paths are what the write was for, kept to be
// tried again if it fails for want of space.
func (h *ixHandle) write(op string, f func(*index.Index) error, paths ...string) (err error) {
	if h.faults.held(paths...) {
		return errWritesHeld
	}
	if err := h.faults.checkSpace(false); err != nil {
		h.faults.hold(paths...)
		return err
	}
	if err := h.faults.checkWritable(false); err != nil {
		h.faults.hold(paths...)
		return err
	}
	_, err = call(h, op, func(ix *index.Index) (_ struct{}, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%s: pebble failed: %v: %w", op, p, errPebblePanic)
			}
		}()
		return struct{}{}, f(ix)
	})
	if err != nil && isNoSpace(err) {
		h.faults.hold(paths...)
	}
	if err == nil {
		h.faults.wrote.Store(true)
	}
	return err
}

// errPebblePanic marks an error made of a panic inside Pebble: its
// database must be reopened before it is written again.
var errPebblePanic = errors.New("pebble panicked")

// isNoSpace reports whether err says the filesystem is full (or the
// user's quota used up).
func isNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	// A panic inside Pebble carries only the message.
	msg := err.Error()
	return strings.Contains(msg, "no space left on device") || strings.Contains(msg, "disk quota exceeded")
}

func (h *ixHandle) Lookup(path string) (index.FileRecord, error) {
	return call(h, "lookup", func(ix *index.Index) (index.FileRecord, error) { return ix.Lookup(path) })
}

func (h *ixHandle) LookupInode(dev, ino uint64) ([]index.FileRecord, error) {
	return call(h, "lookup", func(ix *index.Index) ([]index.FileRecord, error) { return ix.LookupInode(dev, ino) })
}

func (h *ixHandle) Files(prefix string, fn func(index.FileRecord) error) error {
	_, err := call(h, "listing", func(ix *index.Index) (struct{}, error) { return struct{}{}, ix.Files(prefix, fn) })
	return err
}

// hasFilesUnder reports whether the index holds files below dir.
func (h *ixHandle) hasFilesUnder(dir string) bool {
	errFound := errors.New("found")
	err := h.Files(dirPrefix(dir), func(index.FileRecord) error { return errFound })
	return errors.Is(err, errFound)
}

// PutFile brings a file into the current index (index.Index.PutFile).
// Only its error matters to the daemon.
func (h *ixHandle) PutFile(w index.FileWrite) error {
	return h.write("put", func(ix *index.Index) error { _, err := ix.PutFile(w); return err }, w.Meta.Path)
}

// NewBulk is index.Index.NewBulk on the current index; it returns nil when
// that fails.
func (h *ixHandle) NewBulk() *index.Bulk {
	b, _ := call(h, "bulk", func(ix *index.Index) (*index.Bulk, error) { return ix.NewBulk() })
	return b
}

// Flush writes the postings a first scan's PutFile left pending. After a
// swap to a reopened index there are none: Open wrote them.
func (h *ixHandle) Flush() error {
	if h.cur().PendingPostings() == 0 {
		return nil
	}
	return h.write("flush", func(ix *index.Index) error { return ix.Flush() })
}

func (h *ixHandle) Remove(path string) error {
	return h.write("remove", func(ix *index.Index) error { return ix.Remove(path) }, path)
}

// RemovePaths removes the records at paths in one batch
// (index.Index.RemovePaths), and returns how many it removed and their
// bytes.
func (h *ixHandle) RemovePaths(paths []string) (files int, bytes uint64, err error) {
	if len(paths) == 0 {
		return 0, 0, nil
	}
	err = h.write("remove", func(ix *index.Index) (err error) {
		files, bytes, err = ix.RemovePaths(paths)
		return err
	}, paths...)
	return files, bytes, err
}

func (h *ixHandle) RenameIf(was, meta index.FileMeta) error {
	return h.write("rename", func(ix *index.Index) error { return ix.RenameIf(was, meta) }, was.Path, meta.Path)
}

func (h *ixHandle) Similar(ctx context.Context, q index.Query, o index.QueryOptions) (*index.Result, error) {
	return call(h, "query", func(ix *index.Index) (*index.Result, error) { return ix.Similar(ctx, q, o) })
}

// EachGroup lists the groups of the current index, as call runs a
// query, but tries the new index after a swap only when no group was
// yielded yet. An error of fn is returned as is, and is not the index's.
func (h *ixHandle) EachGroup(ctx context.Context, o index.GroupOptions, fn func(index.Group) error) error {
	yielded := false
	var fnErr error
	each := func(g index.Group) error {
		yielded = true
		fnErr = fn(g)
		return fnErr
	}
	ix := h.cur()
	err := ix.EachGroup(ctx, o, each)
	if err != nil && fnErr == nil && !yielded && errors.Is(err, index.ErrClosed) {
		if now := h.cur(); now != ix {
			err = now.EachGroup(ctx, o, each)
		}
	}
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		h.faults.indexError("query", err)
	}
	return err
}

func (h *ixHandle) Dupes(ctx context.Context, prefix string) ([]index.DupeSet, error) {
	return call(h, "query", func(ix *index.Index) ([]index.DupeSet, error) { return ix.Dupes(ctx, prefix) })
}

func (h *ixHandle) Stats() (index.Stats, error) {
	return call(h, "stats", func(ix *index.Index) (index.Stats, error) { return ix.Stats() })
}

// Sync makes the index durable; while writes are on hold there is
// nothing it could add, and the full disk would fail it.
func (h *ixHandle) Sync() error {
	if h.faults.onHold() {
		return nil
	}
	_, err := call(h, "sync", func(ix *index.Index) (_ struct{}, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("sync: pebble failed: %v: %w", p, errPebblePanic)
			}
		}()
		return struct{}{}, ix.Sync()
	})
	return err
}

// probe makes a synced write of nothing to the current index, whatever
// the hold on writes, and returns what failed: an error, or a panic of
// Pebble's as an error wrapping errPebblePanic. It does not go through the
// fault handling: the caller decides.
func (h *ixHandle) probe() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sync: pebble failed: %v: %w", p, errPebblePanic)
		}
	}()
	return h.cur().Sync()
}

func (h *ixHandle) Compact(ctx context.Context) error {
	if h.faults.onHold() {
		return nil // a compaction needs room; the next one will do
	}
	// A compaction rotates Pebble's log first, and Pebble panics when it
	// cannot create the new one (the index directory deleted, say).
	_, err := call(h, "compaction", func(ix *index.Index) (_ struct{}, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("compaction: pebble failed: %v: %w", p, errPebblePanic)
			}
		}()
		return struct{}{}, ix.Compact(ctx)
	})
	if err != nil && (isNoSpace(err) || index.IsCorrupt(err) || errors.Is(err, errPebblePanic)) {
		return nil // handled as a fault, not worth stopping the daemon
	}
	return err
}

// Close closes the current index. An index poisoned by a failed write, or
// on a full disk (where flushing would fail), is abandoned instead (see
// index.Index.Abandon): its log holds what was committed.
func (h *ixHandle) Close() error {
	if h.faults.isPoisoned() || h.faults.onHold() {
		return h.cur().Abandon()
	}
	return h.cur().Close()
}

func (h *ixHandle) MetasAfter(prefix, after string, n int, dst []index.FileMeta) ([]index.FileMeta, error) {
	return call(h, "listing", func(ix *index.Index) ([]index.FileMeta, error) { return ix.MetasAfter(prefix, after, n, dst) })
}

func (h *ixHandle) Paths(lo, hi string, fn func(path string) error) error {
	_, err := call(h, "listing", func(ix *index.Index) (struct{}, error) { return struct{}{}, ix.Paths(lo, hi, fn) })
	return err
}
