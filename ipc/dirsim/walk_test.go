//go:build unix

package dirsim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestWalkDir: regular files of a byte or more are listed, relative to
// the directory; symlinks (to files and directories) are not followed,
// fifos are skipped without being opened, empty files counted; an
// unreadable subdirectory is named (to Options.Skipped) and skipped, and
// an unreadable directory asked about is an error.
func TestWalkDir(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "hello")
	write("sub/b.txt", "world!")
	write("sub/deep/c.txt", "x")
	write("empty", "")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "o.txt"), []byte("outside"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "linkdir"))
	os.Symlink(filepath.Join(dir, "a.txt"), filepath.Join(dir, "linkfile"))
	if err := syscall.Mkfifo(filepath.Join(dir, "sub", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// stderr is what sifctl prints of the files skipped.
	var stderr bytes.Buffer
	skipped := func(path string, err error) { fmt.Fprintf(&stderr, "sifctl: %s: %v (skipped)\n", path, err) }
	w, err := walkDir(context.Background(), "shown", dir, skipped)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.txt", filepath.Join("sub", "b.txt"), filepath.Join("sub", "deep", "c.txt")}
	if !slices.Equal(w.rels, want) || !slices.Equal(w.sizes, []int64{5, 6, 1}) {
		t.Errorf("files %v %v, want %v with sizes 5, 6, 1", w.rels, w.sizes, want)
	}
	if w.empty != 1 || w.special != 3 || w.unreadable != 0 || stderr.Len() != 0 {
		t.Errorf("%d empty, %d special, %d unreadable, stderr %q; want 1, 3, 0, none", w.empty, w.special, w.unreadable, stderr.String())
	}

	if _, err := walkDir(context.Background(), "nope", filepath.Join(dir, "nope"), skipped); err == nil || err.Error() != "nope: no such file or directory" {
		t.Errorf("missing directory: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root, which reads every directory: the unreadable cases are not tried")
		return
	}
	locked := filepath.Join(dir, "sub", "locked")
	os.Mkdir(locked, 0)
	defer os.Chmod(locked, 0o755)
	stderr.Reset()
	w, err = walkDir(context.Background(), "shown", dir, skipped)
	if err != nil || w.unreadable != 1 || !strings.Contains(stderr.String(), filepath.Join("shown", "sub", "locked")+": permission denied (skipped)") {
		t.Errorf("unreadable subdirectory: %v, %d unreadable, stderr %q", err, w.unreadable, stderr.String())
	}
	if _, err := walkDir(context.Background(), "locked", locked, skipped); err == nil || err.Error() != "locked: permission denied" {
		t.Errorf("unreadable directory asked about: %v", err)
	}
}
