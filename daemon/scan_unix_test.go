//go:build unix

package daemon

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A fresh scan's walk does not lstat the files it lists; each worker
// stats its file once it has it open. The scan still skips files below
// the minimum size and what is not a regular file by the time it is
// opened (replaced after the listing), and its progress counts the bytes
// the workers found.
func TestFreshScanWithoutLstat(t *testing.T) {
	root := t.TempDir()
	var want int64 // bytes of every regular file
	write := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want += int64(len(data))
	}
	for i := range 8 {
		data := bytes.Repeat([]byte(fmt.Sprintf("file %d of a fresh scan ", i%5)), 100+i%5)
		write(fmt.Sprintf("d%d/f%d", i%3, i), data)
	}
	write("tiny", []byte("small"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("d0/f0", filepath.Join(root, "link"))

	st := runToReady(t, Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Workers: 2, MinFileSize: 100}, nil)
	if len(st.Roots) != 1 {
		t.Fatalf("roots %+v", st.Roots)
	}
	r := st.Roots[0]
	if r.FilesSeen != 9 || r.FilesDone != 9 || r.BytesSeen != uint64(want) || r.BytesDone != uint64(want) {
		t.Errorf("progress: files %d/%d, bytes %d/%d; want 9/9 files, %d/%d bytes", r.FilesDone, r.FilesSeen, r.BytesDone, r.BytesSeen, want, want)
	}
	c := st.Counters
	if c.Indexed != 8 || c.TooSmall != 1 || c.Special != 1 || c.Symlinks != 1 {
		t.Errorf("counters %+v: want 8 indexed, 1 too small, 1 special, 1 symlink", c)
	}
}

// What a fresh scan's walk listed as a regular file may be something else
// by the time a worker opens it: a fifo (not waited on), a directory, a
// symlink (not followed), or nothing. None is indexed, each is counted as
// what it is, and no size is reported for it.
func TestFreshScanFileReplacedAfterListing(t *testing.T) {
	root := t.TempDir()
	d, err := open(Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(root, "s"), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.ix.Close()
	rs := newRootState(context.Background(), root, sourceConfig)
	d.roots = append(d.roots, rs)
	r := testReader(t)
	scan := &scanRun{root: rs, dir: root, fresh: true}
	scan.contents = d.ix.NewBulk()
	target := filepath.Join(root, "target")
	if err := os.WriteFile(target, bytes.Repeat([]byte("target "), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(os.Mkdir(filepath.Join(root, "dir"), 0o755))
	must(os.Symlink("target", filepath.Join(root, "link")))
	for _, name := range []string{"fifo", "dir", "link", "gone"} {
		done := make(chan int64, 1)
		go func() {
			done <- d.syncPath(context.Background(), r, filepath.Join(root, name), nil, true, ticket{scan: scan})
		}()
		select {
		case n := <-done:
			if n != 0 {
				t.Errorf("%s: size %d reported, want 0", name, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the worker hangs on it", name)
		}
	}
	if n := d.syncPath(context.Background(), r, target, nil, true, ticket{scan: scan}); n != 700 {
		t.Errorf("target: size %d, want 700", n)
	}
	c := d.count.snapshot()
	if c.Indexed != 1 || c.Special != 2 || c.Symlinks != 1 || c.Vanished != 1 || c.Unreadable != 0 {
		t.Errorf("counters %+v: want 1 indexed, 2 special (fifo, directory), 1 symlink, 1 vanished", c)
	}
	if st, err := d.ix.Stats(); err != nil || st.Files != 1 {
		t.Errorf("index holds %d files (%v), want 1", st.Files, err)
	}
}
