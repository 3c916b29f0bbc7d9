//go:build unix

package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
)

// A file moved within the roots is recognised by device, inode, size and
// mtime: its record moves to the new path without a read. A hard link (the
// old path still is the file) and a copy (another inode) are read.
func TestRenameDetection(t *testing.T) {
	root := t.TempDir()
	d, err := open(Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(root, "s"), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.ix.Close()
	d.roots = append(d.roots, newRootState(context.Background(), root, sourceConfig))
	r := testReader(t)
	ctx := context.Background()
	sync := func(p string) {
		t.Helper()
		d.syncPath(ctx, r, p, nil, false, ticket{})
	}
	old, moved := filepath.Join(root, "old.txt"), filepath.Join(root, "sub", "moved.txt")
	if err := os.WriteFile(old, []byte(strings.Repeat("a file that is moved, not rewritten; ", 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	sync(old)
	if n := d.count.indexed.Load(); n != 1 {
		t.Fatalf("indexed %d, want 1", n)
	}
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	if err := os.Rename(old, moved); err != nil {
		t.Fatal(err)
	}
	sync(moved)
	if n, m := d.count.indexed.Load(), d.count.renamed.Load(); n != 1 || m != 1 {
		t.Errorf("after the move: indexed %d, renamed %d; want 1, 1 (no read)", n, m)
	}
	if _, err := d.ix.Lookup(old); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("old path still has a record: %v", err)
	}
	if _, err := d.ix.Lookup(moved); err != nil {
		t.Errorf("new path has no record: %v", err)
	}
	sync(old) // the removal event of the old name, settled later
	if _, err := d.ix.Lookup(moved); err != nil {
		t.Errorf("the old name's removal took the moved record: %v", err)
	}

	link := filepath.Join(root, "link.txt")
	if err := os.Link(moved, link); err != nil {
		t.Fatal(err)
	}
	sync(link)
	if n, m := d.count.indexed.Load(), d.count.renamed.Load(); n != 2 || m != 1 {
		t.Errorf("after a hard link: indexed %d, renamed %d; want 2, 1 (read, not moved)", n, m)
	}
	if _, err := d.ix.Lookup(moved); err != nil {
		t.Errorf("a hard link took the record of the other name: %v", err)
	}
	b, _ := os.ReadFile(moved)
	cp := filepath.Join(root, "copy.txt")
	os.WriteFile(cp, b, 0o644)
	sync(cp)
	if n, m := d.count.indexed.Load(), d.count.renamed.Load(); n != 3 || m != 1 {
		t.Errorf("after a copy: indexed %d, renamed %d; want 3, 1", n, m)
	}
}
