package ipc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
)

// withReadHook sets readHook for the test's duration.
func withReadHook(t *testing.T, h func(path string, n int64)) {
	t.Helper()
	readHook = h
	t.Cleanup(func() { readHook = nil })
}

// readers are the ways a client reads a query file.
var readers = map[string]func(ctx context.Context, path string) error{
	"QueryFile": func(ctx context.Context, path string) error {
		_, _, err := QueryFileContext(ctx, path, fingerprint.DefaultParams(), ReadOptions{})
		return err
	},
	"SketchFile": func(ctx context.Context, path string) error {
		_, err := SketchFileContext(ctx, path, fingerprint.DefaultParams())
		return err
	},
}

// TestQueryFileChanged: a query file truncated, grown or rewritten in
// place while it is read is an error wrapping ErrChanged that names it; a
// file left alone is not.
func TestQueryFileChanged(t *testing.T) {
	data := text(3, 3<<20)
	for _, c := range []struct {
		name   string
		change func(path string) error
	}{
		{"truncated", func(path string) error { return os.Truncate(path, 0) }},
		{"grown", func(path string) error {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte("more"))
			return err
		}},
		{"rewritten in place", func(path string) error {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt(text(4, 100), 1<<20)
			return err
		}},
		{"rewritten with its mtime put back", func(path string) error {
			st, err := os.Stat(path)
			if err != nil {
				return err
			}
			if err := os.WriteFile(path, text(5, len(data)), 0o644); err != nil {
				return err
			}
			return os.Chtimes(path, st.ModTime(), st.ModTime())
		}},
	} {
		for name, read := range readers {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "q")
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				done := false
				withReadHook(t, func(p string, n int64) {
					if !done && p == path && n > 0 {
						done = true
						time.Sleep(2 * time.Millisecond) // a later mtime, however coarse the clock
						if err := c.change(p); err != nil {
							t.Error(err)
						}
					}
				})
				err := read(context.Background(), path)
				if !errors.Is(err, ErrChanged) {
					t.Fatalf("got %v, want ErrChanged", err)
				}
				if !done {
					t.Fatal("the hook never ran")
				}
				t.Log(err)
			})
		}
	}
	for name, read := range readers {
		path := filepath.Join(t.TempDir(), "q")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := read(context.Background(), path); err != nil {
			t.Errorf("%s of a stable file: %v", name, err)
		}
	}
}

// TestQueryFileCancel: a read of a query file stops at the next read once
// its context is done, with an error wrapping the context's.
func TestQueryFileCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q")
	if err := os.WriteFile(path, text(8, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, read := range readers {
		ctx, cancel := context.WithCancel(context.Background())
		var reads, atCancel int64
		withReadHook(t, func(_ string, n int64) {
			reads++
			if n > 0 && atCancel == 0 {
				atCancel = reads
				cancel()
			}
		})
		err := read(ctx, path)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: got %v, want context.Canceled", name, err)
		}
		if reads != atCancel {
			t.Errorf("%s: %d reads after the cancel", name, reads-atCancel)
		}
		cancel()
	}
}

// TestChanged: how a file changed is said, from its states before and
// after the read and the bytes read.
func TestChanged(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	s := fileStamp{size: 100, mtime: t0, ctime: 5}
	for _, c := range []struct {
		after fileStamp
		n     int64
		want  bool
	}{
		{s, 100, false},
		{s, 99, true},  // a short read
		{s, 101, true}, // grew, and shrank back
		{fileStamp{size: 0, mtime: t0, ctime: 5}, 100, true},
		{fileStamp{size: 100, mtime: t0.Add(time.Nanosecond), ctime: 5}, 100, true},
		{fileStamp{size: 100, mtime: t0, ctime: 6}, 100, true},
	} {
		err := changed(s, c.after, c.n)
		if got := errors.Is(err, ErrChanged); got != c.want || (err != nil) != c.want {
			t.Errorf("changed(%+v, %+v, %d) = %v", s, c.after, c.n, err)
		}
	}
}
