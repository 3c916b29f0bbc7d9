//go:build unix

package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

func testReader(t *testing.T) *reader {
	t.Helper()
	r, err := newReader(fingerprint.DefaultParams(), -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return r
}

// A file that grows while it is read is reported as changed, never indexed
// with a sketch of half its content.
func TestReadDetectsChangeDuringRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(p, make([]byte, 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	r := testReader(t)
	r.afterRead = func(path string) {
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte("more"))
		f.Close()
	}
	if _, _, err := r.read(context.Background(), p); !errors.Is(err, errChanged) {
		t.Fatalf("read of a changing file: %v, want errChanged", err)
	}
	r.afterRead = nil
	meta, sk, err := r.read(context.Background(), p)
	if err != nil || meta.Size != 100004 || sk.Size != 100004 {
		t.Fatalf("read of a quiet file: %v, size %d/%d", err, meta.Size, sk.Size)
	}
}

// Special files swapped in for a regular file are refused without blocking:
// a fifo with no writer would hang a plain open.
func TestReadRefusesSpecialAndSymlinks(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	r := testReader(t)
	if _, _, err := r.read(context.Background(), fifo); !errors.Is(err, errSpecial) {
		t.Errorf("fifo: %v, want errSpecial", err)
	}
	os.WriteFile(filepath.Join(dir, "target"), []byte("x"), 0o644)
	os.Symlink("target", filepath.Join(dir, "link"))
	if _, _, err := r.read(context.Background(), filepath.Join(dir, "link")); !errors.Is(err, errSymlink) {
		t.Errorf("symlink: %v, want errSymlink", err)
	}
	if _, _, err := r.read(context.Background(), filepath.Join(dir, "gone")); !errors.Is(err, errVanished) {
		t.Errorf("missing file: %v, want errVanished", err)
	}
	r.maxSize = 10
	os.WriteFile(filepath.Join(dir, "big"), make([]byte, 11), 0o644)
	if _, _, err := r.read(context.Background(), filepath.Join(dir, "big")); !errors.Is(err, errTooLarge) {
		t.Errorf("big file: %v, want errTooLarge", err)
	}
}

// A file that keeps changing while it is read is put back to settle again,
// then, after changeRetries attempts, counted and left out of the index
// until its next change.
func TestChangingFileIsRetriedThenSkipped(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "busy.log")
	os.WriteFile(p, make([]byte, 5000), 0o644)
	d, err := open(Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(root, "s")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.ix.Close()
	d.roots = append(d.roots, newRootState(context.Background(), root, "config"))
	r := testReader(t)
	reads := 0
	r.afterRead = func(path string) {
		reads++
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte("tick\n"))
		f.Close()
	}
	for i := range changeRetries + 1 {
		d.syncPath(context.Background(), r, p, nil, ticket{})
		want := 1 // put back to settle
		if i == changeRetries {
			want = 0 // given up
		}
		d.pmu.Lock()
		got := len(d.pend)
		d.pmu.Unlock()
		if got != want {
			t.Fatalf("after read %d: %d paths settling, want %d", i+1, got, want)
		}
		if i < changeRetries {
			d.settled(context.Background(), p) // as the settler would
			<-d.lanes.live
		}
	}
	if reads != changeRetries+1 {
		t.Errorf("read %d times, want %d", reads, changeRetries+1)
	}
	if got := d.count.changed.Load(); got != changeRetries+1 {
		t.Errorf("changed_during_read = %d, want %d (one per read that found it changing)", got, changeRetries+1)
	}
	if _, err := d.ix.Lookup(p); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("a half-read file was indexed: %v", err)
	}
	r.afterRead = nil
	d.syncPath(context.Background(), r, p, nil, ticket{})
	if _, err := d.ix.Lookup(p); err != nil {
		t.Errorf("once quiet, the file was not indexed: %v", err)
	}
}

// A reader made after another was closed gets a usable buffer from the pool.
func TestReaderAfterClose(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("some content"), 0o644)
	for range 3 {
		r, err := newReader(fingerprint.DefaultParams(), -1)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.buf) == 0 {
			t.Fatal("reader got an empty buffer from the pool")
		}
		if _, sk, err := r.read(context.Background(), p); err != nil || sk.Size != 12 {
			t.Fatalf("read: %v", err)
		}
		r.close()
	}
}
