package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sif-dev/sif/index"
	"golang.org/x/sys/unix"
)

// A symlink before the last component of a path is refused as a final
// one is: the reader and OpenIndexed never leave the tree through a
// directory replaced by a symlink.
func TestReadRefusesSymlinkedDirectory(t *testing.T) {
	if !haveOpenat2() {
		t.Fatal("openat2 is refused on this machine: sif's reads would follow a symlinked directory (kernel 5.6 or later is needed)")
	}
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x"), []byte("outside the tree"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sub", "x")
	r := testReader(t)
	if _, _, err := r.read(context.Background(), p); !errors.Is(err, errSymlink) {
		t.Errorf("read through a symlinked directory: %v, want errSymlink", err)
	}
	if _, _, err := (&Daemon{}).OpenIndexed(p); !errors.Is(err, errSymlink) {
		t.Errorf("OpenIndexed through a symlinked directory: %v, want errSymlink", err)
	}
	// The same file by its real path reads.
	if _, _, err := r.read(context.Background(), filepath.Join(outside, "x")); err != nil {
		t.Errorf("read by the real path: %v", err)
	}
}

// A directory replaced by a symlink to another directory after the walk
// listed it, just before a worker reads a file in it, leaves no record of
// the other directory's file: without the check the worker found the file
// not as the walk saw it, looked again through the symlink and indexed the
// outside file under the path in the tree.
func TestScanDoesNotReadThroughSwappedDirectory(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	d := filepath.Join(root, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	inside := bytes.Repeat([]byte("the file in the tree; "), 200)
	secret := bytes.Repeat([]byte("a file outside every root; "), 200)
	if err := os.WriteFile(filepath.Join(d, "f"), inside, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "f"), secret, 0o644); err != nil {
		t.Fatal(err)
	}
	swapped := false
	testHookIndexFile = func(path string) {
		if path != filepath.Join(d, "f") || swapped {
			return
		}
		swapped = true
		if err := os.Rename(d, d+".moved"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, d); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookIndexFile = nil }()
	cfg := Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s"), Workers: 1}
	runToReady(t, cfg, func(dm *Daemon) {
		if !swapped {
			t.Fatal("the worker never reached d/f")
		}
		indexMatchesDisk(t, dm, root)
		err := dm.ix.Files(dirPrefix(root), func(rec index.FileRecord) error {
			if rec.Strong == sha256.Sum256(secret) {
				t.Errorf("%s: the record holds the content of %s, outside the root", rec.Path, filepath.Join(outside, "f"))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkOpenFile times the reader's open of a file four directories
// deep: openat2 refusing symlinks, against plain open, in the same run.
func BenchmarkOpenFile(b *testing.B) {
	p := filepath.Join(b.TempDir(), "a", "b", "c", "d", "f")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		open func(string, int) (int, error)
	}{{"openat2", openFile}, {"open", openClassic}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				fd, err := c.open(p, readFlags)
				if err != nil {
					b.Fatal(err)
				}
				unix.Close(fd)
			}
		})
	}
}
