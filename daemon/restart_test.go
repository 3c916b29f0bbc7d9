package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// runToReady runs a daemon on cfg to ready, then calls between (if not
// nil) and waits for what it caused, and returns the daemon's status
// before stopping it cleanly.
func runToReady(t *testing.T, cfg Config, between func(d *Daemon)) ipc.Status {
	t.Helper()
	logs := &lockedBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, logs)
		}
	}()
	select {
	case <-d.ready:
	case err := <-done:
		done <- err
		t.Fatalf("run ended before ready: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("not ready after 30s\n%s", logs)
	}
	if _, err := d.Wait(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between(d)
		if _, err := d.Wait(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return d.Status()
}

// indexMatchesDisk checks that d's index holds a record for exactly the
// regular files under root, each with the file's current metadata.
func indexMatchesDisk(t *testing.T, d *Daemon, root string) {
	t.Helper()
	onDisk := map[string]fs.FileInfo{}
	filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			fi, _ := de.Info()
			onDisk[p] = fi
		}
		return nil
	})
	seen := 0
	err := d.ix.Files(dirPrefix(root), func(rec index.FileRecord) error {
		fi, ok := onDisk[rec.Path]
		switch {
		case !ok:
			t.Errorf("%s: a record, but no file", rec.Path)
		case !sameMeta(rec.FileMeta, fi):
			t.Errorf("%s: record %+v does not describe the file (size %d, mtime %d)", rec.Path, rec.FileMeta, fi.Size(), fi.ModTime().UnixNano())
		default:
			seen++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(onDisk) {
		t.Errorf("%d of the %d files on disk have records", seen, len(onDisk))
	}
}

// A restart finds every change made while the daemon was down, among
// names that sort otherwise as paths than as names ("a.txt" and "a-b/"
// before "a/" as paths): a rewrite of the same size whose mtime moved;
// one whose mtime was set back, which only the ctime tells; a file
// replaced by another renamed over it, with the same size and mtime; a
// file deleted; one replaced by a symlink; a new file; a directory
// renamed, whose files keep their records without being read. Every
// other file is unchanged and not read, and a second restart reads
// nothing.
func TestRestartFindsChangesMadeWhileDown(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	content := func(name string, v int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("%s, version %d; ", name, v)), 60)
	}
	names := []string{
		"a b", "a.txt", "a-b/x", "a-b/y", "a/1", "a/2", "a/b.c/d", "a/b/d", "a0",
		"same-size", "set-back", "replaced", "deleted", "symlinked", "z/unchanged",
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, n := range names {
		p := filepath.Join(root, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, content(n, 1), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	cfg := Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s")}
	if st := runToReady(t, cfg, nil); st.Counters.Indexed != uint64(len(names)) {
		t.Fatalf("first scan indexed %d files, want %d", st.Counters.Indexed, len(names))
	}

	// While the daemon is down:
	p := func(n string) string { return filepath.Join(root, n) }
	os.WriteFile(p("same-size"), content("same-size", 2), 0o644) // same length
	later := old.Add(time.Minute)
	os.Chtimes(p("same-size"), later, later)
	time.Sleep(10 * time.Millisecond) // the ctime moves on
	os.WriteFile(p("set-back"), content("set-back", 2), 0o644)
	os.Chtimes(p("set-back"), old, old)
	repl := filepath.Join(outside, "replacement")
	os.WriteFile(repl, content("replaced", 2), 0o644)
	os.Chtimes(repl, old, old)
	if err := os.Rename(repl, p("replaced")); err != nil {
		t.Fatal(err)
	}
	os.Remove(p("deleted"))
	os.Remove(p("symlinked"))
	os.Symlink(p("a0"), p("symlinked"))
	os.WriteFile(p("a.new"), content("a.new", 1), 0o644)
	os.WriteFile(p("a.txt"), content("a.txt", 22), 0o644) // longer
	if err := os.Rename(p("a-b"), p("moved")); err != nil {
		t.Fatal(err)
	}

	st := runToReady(t, cfg, func(d *Daemon) { indexMatchesDisk(t, d, root) })
	c := st.Counters
	// Read: same-size, set-back, replaced, a.new, a.txt. Removed:
	// deleted, symlinked. Renamed: a-b/x and a-b/y.
	wantUnchanged := uint64(len(names) - 4 - 2 - 2)
	if c.Indexed != 5 || c.Removed != 2 || c.Renamed != 2 || c.Unchanged != wantUnchanged || st.Index.Files != uint64(len(names)-1) {
		t.Errorf("restart: indexed %d removed %d renamed %d unchanged %d files %d; want 5, 2, 2, %d, %d",
			c.Indexed, c.Removed, c.Renamed, c.Unchanged, st.Index.Files, wantUnchanged, len(names)-1)
	}
	st = runToReady(t, cfg, func(d *Daemon) { indexMatchesDisk(t, d, root) })
	if c := st.Counters; c.Indexed != 0 || c.Removed != 0 || c.Renamed != 0 || c.Unchanged != st.Index.Files {
		t.Errorf("second restart: indexed %d removed %d renamed %d unchanged %d of %d files; want nothing read or removed",
			c.Indexed, c.Removed, c.Renamed, c.Unchanged, st.Index.Files)
	}
}

// After an unclean shutdown (the run marker left behind), the files
// modified since the previous run started are read again although their
// metadata match; the older ones are not.
func TestUncleanRestartRereadsRecentFiles(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	for i := range 6 {
		p := filepath.Join(root, fmt.Sprintf("d%d/f%d", i%2, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, bytes.Repeat([]byte(fmt.Sprintf("file %d ", i)), 200), 0o644)
		if i < 4 {
			os.Chtimes(p, old, old)
		}
	}
	cfg := Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s")}
	runToReady(t, cfg, nil)
	// A marker left by a run that started ten minutes ago.
	marker := fmt.Sprintf("123 %d\n", time.Now().Add(-10*time.Minute).UnixNano())
	if err := os.WriteFile(filepath.Join(StateDir(cfg.DB), markerName), []byte(marker), 0o600); err != nil {
		t.Fatal(err)
	}
	st := runToReady(t, cfg, nil)
	if c := st.Counters; !st.UncleanStart || c.Indexed != 2 || c.Unchanged != 4 {
		t.Errorf("unclean restart: unclean %v, indexed %d, unchanged %d; want true, 2 (the recent files), 4",
			st.UncleanStart, c.Indexed, c.Unchanged)
	}
	if st := runToReady(t, cfg, nil); st.UncleanStart || st.Counters.Indexed != 0 {
		t.Errorf("clean restart after it: unclean %v, indexed %d; want false, 0", st.UncleanStart, st.Counters.Indexed)
	}
}

// Records outside every root are dropped at start, and only those: roots
// whose prefixes sort otherwise than their paths ("/a-b/" before "/a/")
// keep theirs.
func TestDropOutsideRoots(t *testing.T) {
	parent := t.TempDir()
	var roots []string
	for _, n := range []string{"a", "a-b", "c"} {
		r := filepath.Join(parent, n)
		os.MkdirAll(filepath.Join(r, "sub"), 0o755)
		os.WriteFile(filepath.Join(r, "sub", "f"), bytes.Repeat([]byte("root "+n+" "), 100), 0o644)
		os.WriteFile(filepath.Join(r, "g"), bytes.Repeat([]byte("another of "+n+" "), 100), 0o644)
		roots = append(roots, r)
	}
	cfg := Config{Roots: roots, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s")}
	if st := runToReady(t, cfg, nil); st.Index.Files != 6 {
		t.Fatalf("%d files indexed, want 6", st.Index.Files)
	}
	cfg.Roots = roots[:2]
	st := runToReady(t, cfg, func(d *Daemon) {
		var paths []string
		d.ix.Files("", func(rec index.FileRecord) error { paths = append(paths, rec.Path); return nil })
		for _, p := range paths {
			if strings.HasPrefix(p, roots[2]+"/") {
				t.Errorf("%s: record kept outside the roots", p)
			}
		}
		if len(paths) != 4 {
			t.Errorf("records %q, want the 4 files of %s and %s", paths, roots[0], roots[1])
		}
	})
	if st.Counters.Unchanged != 4 || st.Counters.Indexed != 0 {
		t.Errorf("unchanged %d, indexed %d; want 4, 0", st.Counters.Unchanged, st.Counters.Indexed)
	}
}

// A file moved while sifd was down, and a new file written at its old
// path: the restart moves the first one's record to its new path and
// indexes the new file, each with its own content, whichever worker
// writes first. The workers are put in the order that went wrong: the
// one renaming has found the record at the old path (by the moved
// file's inode) when the other indexes the new file there, which reuses
// that record; a rename that did not check the record was still the
// moved file's then carried the new file's content to the moved file's
// path, under the moved file's metadata, where no later scan would look
// again.
func TestRestartRenameAfterNewFileAtOldPath(t *testing.T) {
	root := t.TempDir()
	// a sorts first: the walk hands it to a worker before the old path.
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	if err := os.WriteFile(b, bytes.Repeat([]byte("the file that moves; "), 300), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: filepath.Join(t.TempDir(), "s"), Workers: 2}
	runToReady(t, cfg, nil)
	if err := os.Rename(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, bytes.Repeat([]byte("a new file at the old path; "), 300), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(b)
	if err != nil {
		t.Fatal(err)
	}
	_, newIno := fileID(st)
	renaming := make(chan struct{}) // closed once the rename of b to a is about to be written
	var once sync.Once
	testHookIndexFile = func(path string) {
		if path != b {
			return
		}
		select {
		case <-renaming:
		case <-time.After(10 * time.Second):
			t.Error("the restart did not try to move the record from b to a")
		}
	}
	testHookRename = func(d *Daemon, from, to string) {
		if from != b || to != a {
			return
		}
		once.Do(func() { close(renaming) })
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if rec, err := d.ix.Lookup(b); err == nil && rec.Ino == newIno {
				return
			}
		}
		t.Error("the new file at the old path was not indexed while the rename waited")
	}
	defer func() { testHookIndexFile, testHookRename = nil, nil }()
	runToReady(t, cfg, func(d *Daemon) {
		indexMatchesDisk(t, d, root)
		for _, p := range []string{a, b} {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := d.ix.Lookup(p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if rec.Strong != sha256.Sum256(data) {
				t.Errorf("%s: the record holds another file's content (%d bytes), not its own (%d bytes)", p, rec.Summary.Size, len(data))
			}
		}
	})
}
