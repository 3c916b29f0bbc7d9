package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
)

// faultFS fails, while its error is set, the creation of write-ahead logs
// and every write to them, as a filesystem turned read-only or full does.
type faultFS struct {
	vfs.FS
	err atomic.Pointer[error]
}

func (fs *faultFS) set(err error) {
	if err == nil {
		fs.err.Store(nil)
		return
	}
	fs.err.Store(&err)
}

func (fs *faultFS) failing() error {
	if p := fs.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (fs *faultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".log") {
		if err := fs.failing(); err != nil {
			return nil, &pathError{"open", name, err}
		}
	}
	f, err := fs.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return faultFile{File: f, fs: fs, name: name}, nil
}

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f faultFile) Write(p []byte) (int, error) {
	if err := f.fs.failing(); err != nil {
		return 0, &pathError{"write", f.name, err}
	}
	return f.File.Write(p)
}

type pathError struct {
	op, path string
	err      error
}

func (e *pathError) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// unwritableLog records what OnUnwritable was called with.
type unwritableLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *unwritableLog) add(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *unwritableLog) has(target error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, err := range l.errs {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func openFault(t *testing.T) (*index.Index, *faultFS, *unwritableLog) {
	t.Helper()
	fs := &faultFS{FS: vfs.NewMem()}
	var calls unwritableLog
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: manber, OnUnwritable: calls.add})
	if err != nil {
		t.Fatal(err)
	}
	return ix, fs, &calls
}

func putSome(t *testing.T, ix *index.Index, rng *rand.Rand, prefix string, n int) {
	t.Helper()
	for i := range n {
		sk := randSketch(rng, manber, 50, 100000)
		if _, err := ix.Put(metaFor(fmt.Sprintf("/%s/%d", prefix, i), sk, rng), sk); err != nil {
			t.Fatal(err)
		}
	}
}

// within waits up to d for cond.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A write-ahead log that cannot be created (the directory turned
// read-only, or immutable) when Pebble rotates it: Pebble would panic with
// its lock released, a fatal error of the Go runtime that kills the
// process (cockroachdb/pebble#5601). The guard reports it and waits
// instead; reads go on meanwhile, and once the filesystem takes writes
// again the rotation finishes and nothing is lost.
func TestGuardWALCreateWaits(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EROFS, syscall.EPERM, syscall.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			ix, fs, calls := openFault(t)
			rng := rand.New(rand.NewPCG(1, 2))
			putSome(t, ix, rng, "a", 50)

			fs.set(errno)
			done := make(chan error, 1)
			// A compaction flushes the memtable, which rotates the log.
			go func() { done <- ix.Compact(context.Background()) }()
			if !within(5*time.Second, func() bool { return calls.has(errno) }) {
				t.Fatalf("OnUnwritable was not called with %v", errno)
			}
			select {
			case err := <-done:
				t.Fatalf("the compaction returned %v while the log could not be created", err)
			case <-time.After(200 * time.Millisecond):
			}
			// Reads are answered while the rotation waits.
			if _, err := ix.Lookup("/a/7"); err != nil {
				t.Fatalf("lookup while the log rotation waits: %v", err)
			}

			fs.set(nil)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("compaction after the filesystem came back: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the compaction did not finish once the filesystem took writes again")
			}
			putSome(t, ix, rng, "b", 10)
			mustClean(t, ix)
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A write of the log that fails for want of room, in Pebble's background
// flusher: without the guard the error sticks in the log writer, and the
// next rotation or synced write panics. The write waits instead, and a
// synced write waits for it.
func TestGuardWALWriteWaits(t *testing.T) {
	ix, fs, calls := openFault(t)
	rng := rand.New(rand.NewPCG(3, 4))
	putSome(t, ix, rng, "a", 20)
	if err := ix.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.set(syscall.ENOSPC)
	putSome(t, ix, rng, "b", 5) // not synced: committed to the log's buffer
	done := make(chan error, 1)
	go func() { done <- ix.Sync() }()
	if !within(5*time.Second, func() bool { return calls.has(syscall.ENOSPC) }) {
		t.Fatal("OnUnwritable was not called with ENOSPC")
	}
	select {
	case err := <-done:
		t.Fatalf("a synced write returned %v while the log could not be written", err)
	case <-time.After(200 * time.Millisecond):
	}
	fs.set(nil)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("synced write after room came back: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the synced write did not finish once there was room")
	}
	if err := ix.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustClean(t, ix)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
}

// Close while a write waits for the filesystem gives up after the abandon
// wait with ErrWedged, rather than hanging the daemon's shutdown.
func TestGuardCloseWedged(t *testing.T) {
	defer index.SetAbandonWait(300 * time.Millisecond)()
	ix, fs, calls := openFault(t)
	rng := rand.New(rand.NewPCG(5, 6))
	putSome(t, ix, rng, "a", 20)
	fs.set(syscall.EROFS)
	go func() { _ = ix.Compact(context.Background()) }()
	if !within(5*time.Second, func() bool { return calls.has(syscall.EROFS) }) {
		t.Fatal("OnUnwritable was not called")
	}
	start := time.Now()
	err := ix.Close()
	if !errors.Is(err, index.ErrWedged) {
		t.Fatalf("Close while a log rotation waits: %v, want ErrWedged", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	// Let the goroutines left behind finish.
	fs.set(nil)
}

func TestIsUnwritable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&pathError{"open", "/x", syscall.EROFS}, true},
		{fmt.Errorf("wrapped: %w", syscall.EDQUOT), true},
		{syscall.EACCES, true},
		{syscall.EIO, false},
		{errors.New("no space left on device"), false},
	} {
		if got := index.IsUnwritable(c.err); got != c.want {
			t.Errorf("IsUnwritable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// sstFS fails the creation of tables while fail is set, counting the
// tries.
type sstFS struct {
	vfs.FS
	fail  atomic.Bool
	tries atomic.Int64
}

func (fs *sstFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") && fs.fail.Load() {
		fs.tries.Add(1)
		return nil, &pathError{"open", name, syscall.EROFS}
	}
	return fs.FS.Create(name, c)
}

// A flush whose table the filesystem refuses is a background error that
// Pebble retries at once, over and over (33,000 times in 2 s without the
// guard, each logged): the guard pauses each refusal, and the flush
// succeeds once the filesystem takes writes again.
func TestGuardRefusedFlushDoesNotSpin(t *testing.T) {
	fs := &sstFS{FS: vfs.NewMem()}
	var calls unwritableLog
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: manber, OnUnwritable: calls.add})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	putSome(t, ix, rng, "a", 50)
	fs.fail.Store(true)
	done := make(chan error, 1)
	go func() { done <- ix.Compact(context.Background()) }()
	time.Sleep(2 * time.Second)
	if n := fs.tries.Load(); n > 5 {
		t.Errorf("%d tries to create a table in 2 s", n)
	}
	if !calls.has(syscall.EROFS) {
		t.Error("OnUnwritable was not called")
	}
	fs.fail.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the compaction did not finish once tables could be created")
	}
	mustClean(t, ix)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
}
