//go:build unix

package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/watcher"
)

func testReader(t *testing.T) *reader {
	t.Helper()
	r, err := newReader(fingerprint.DefaultParams(), -1, false)
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
	clock := watcher.NewFakeClock(time.Now())
	d.settle = watcher.NewSettler(watcher.SettleOptions{Clock: clock})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.settle.Run(ctx, func(s watcher.Settled) { d.settled(ctx, s) })
	for i := range changeRetries + 1 {
		d.syncPath(ctx, r, p, nil, false, ticket{})
		want := 1 // put back to settle
		if i == changeRetries {
			want = 0 // given up
		}
		// The settler's last emission may still be returning.
		for deadline := time.Now().Add(5 * time.Second); d.settle.Pending() != want && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if got := d.settle.Pending(); got != want {
			t.Fatalf("after read %d: %d paths settling, want %d", i+1, got, want)
		}
		if i < changeRetries {
			clock.Advance(time.Second)
			if it := <-d.lanes.live; it.path != p {
				t.Fatalf("settled %q, want %q", it.path, p)
			}
		}
	}
	// Each attempt reads the file with the lstat syncPath took, finds it
	// changed since, and reads it once more (load's second look).
	if reads != 2*(changeRetries+1) {
		t.Errorf("read %d times, want %d", reads, 2*(changeRetries+1))
	}
	if got := d.count.changed.Load(); got != changeRetries+1 {
		t.Errorf("changed_during_read = %d, want %d (one per read that found it changing)", got, changeRetries+1)
	}
	if _, err := d.ix.Lookup(p); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("a half-read file was indexed: %v", err)
	}
	r.afterRead = nil
	d.syncPath(context.Background(), r, p, nil, false, ticket{})
	if _, err := d.ix.Lookup(p); err != nil {
		t.Errorf("once quiet, the file was not indexed: %v", err)
	}
}

// A reader made after another was closed gets a usable buffer from the pool.
func TestReaderAfterClose(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("some content"), 0o644)
	for range 3 {
		r, err := newReader(fingerprint.DefaultParams(), -1, false)
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

// Files read whole (up to wholeMax) and files sketched as they are read
// get the sketch fingerprint.SketchReader makes of them; load hashes a
// file read whole without sketching it, and both kinds report their
// SHA-256. A file that grows past its size while read whole is changed.
func TestReadWholeAndStreamed(t *testing.T) {
	dir := t.TempDir()
	r := testReader(t)
	for _, size := range []int{0, 1, 4096, wholeMax, wholeMax + 1, 3*wholeMax + 17} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*7 + i/251)
		}
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want, err := fingerprint.SketchReader(bytes.NewReader(data), fingerprint.DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		meta, strong, sk, err := r.load(context.Background(), p, nil)
		if err != nil || meta.Size != int64(size) || strong != sha256.Sum256(data) {
			t.Fatalf("load of %d bytes: %v, size %d, strong %x", size, err, meta.Size, strong)
		}
		if whole := size <= wholeMax; whole != (sk == nil) {
			t.Fatalf("load of %d bytes: sketched as read %v, want %v", size, sk != nil, !whole)
		}
		if sk == nil {
			sk = r.sketch()
		}
		want.Sum, want.Key = fingerprint.SumTable{}, 0 // SimiHash is skipped
		if !reflect.DeepEqual(sk, want) {
			t.Fatalf("sketch of %d bytes differs from SketchReader's: %+v, want %+v", size, sk.Summary, want.Summary)
		}
	}
	p := filepath.Join(dir, "g")
	os.WriteFile(p, make([]byte, 5000), 0o644)
	r.afterRead = func(path string) {
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte("more"))
		f.Close()
	}
	if _, _, _, err := r.load(context.Background(), p, nil); !errors.Is(err, errChanged) {
		t.Fatalf("load of a file that grew: %v, want errChanged", err)
	}
}

// A file loaded with the walk's lstat is read without a stat before the
// read; when the file changed or was replaced since that lstat, load
// looks again and returns what is there now, never the sizes or inode the
// walk saw.
func TestLoadWithStaleLstat(t *testing.T) {
	dir := t.TempDir()
	r := testReader(t)
	p := filepath.Join(dir, "f")
	old := bytes.Repeat([]byte("old content "), 100)
	if err := os.WriteFile(p, old, 0o644); err != nil {
		t.Fatal(err)
	}
	seen, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	meta, strong, _, err := r.load(context.Background(), p, seen)
	if err != nil || meta.Size != int64(len(old)) || strong != sha256.Sum256(old) || meta.MtimeNs != seen.ModTime().UnixNano() {
		t.Fatalf("load with a fresh lstat: %v, %+v", err, meta)
	}
	for _, tc := range []struct {
		name  string
		write func(data []byte)
	}{
		{"rewritten in place", func(data []byte) { os.WriteFile(p, data, 0o644) }},
		{"replaced by rename", func(data []byte) {
			tmp := filepath.Join(dir, "tmp")
			os.WriteFile(tmp, data, 0o644)
			os.Rename(tmp, p)
		}},
	} {
		for _, size := range []int{len(old), 3 * wholeMax / 2} { // same size, and streamed
			seen, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Repeat([]byte(tc.name), size/len(tc.name)+1)[:size]
			tc.write(data)
			// Same size and a coarse clock could leave the mtime equal:
			// move it so the change is visible to stat, as it is to sif.
			mt := seen.ModTime().Add(time.Second)
			os.Chtimes(p, mt, mt)
			now, _ := os.Lstat(p)
			meta, strong, sk, err := r.load(context.Background(), p, seen)
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", tc.name, size, err)
			}
			if strong != sha256.Sum256(data) || meta.Size != int64(size) || meta.MtimeNs != now.ModTime().UnixNano() {
				t.Fatalf("%s, %d bytes: got size %d mtime %d, want the file as it is now (%d, %d)",
					tc.name, size, meta.Size, meta.MtimeNs, now.Size(), now.ModTime().UnixNano())
			}
			if dev, ino := fileID(now); meta.Dev != dev || meta.Ino != ino {
				t.Fatalf("%s: inode %d, want %d", tc.name, meta.Ino, ino)
			}
			if size > wholeMax && (sk == nil || sk.Size != int64(size)) {
				t.Fatalf("%s: streamed sketch of %v", tc.name, sk)
			}
		}
	}
	// A file replaced by a fifo since the walk is refused, not read.
	seen, _ = os.Lstat(p)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.load(context.Background(), p, seen); !errors.Is(err, errSpecial) {
		t.Fatalf("load of a file replaced by a fifo: %v, want errSpecial", err)
	}
}
