//go:build unix

package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
)

func TestWalkClassifies(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a/b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a/b/file"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(root, "top"), []byte("y"), 0o644))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(os.Symlink(".", filepath.Join(root, "a/loop")))   // a loop, never followed
	must(os.Symlink("/", filepath.Join(root, "escape")))   // outside the root
	must(os.Symlink("top", filepath.Join(root, "to-top"))) // to a file
	want := map[string]Kind{"a/b/file": Regular, "top": Regular, "fifo": Special, "a/loop": Symlink, "escape": Symlink, "to-top": Symlink}
	for _, noInfo := range []bool{false, true} {
		got := map[string]Kind{}
		err := Walk(context.Background(), root, WalkOptions{NoInfo: noInfo}, func(e Entry) error {
			rel, _ := filepath.Rel(root, e.Path)
			got[rel] = e.Kind
			if e.Kind == Regular && (e.Info == nil) != noInfo {
				t.Errorf("NoInfo %v: %s: regular entry with info %v", noInfo, rel, e.Info)
			}
			return nil
		})
		must(err)
		if len(got) != len(want) {
			t.Errorf("NoInfo %v: got %v, want %v", noInfo, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("NoInfo %v: %s: %v, want %v", noInfo, k, got[k], v)
			}
		}
	}
}

func TestWalkReportsUnlistableDirectoryAndGoesOn(t *testing.T) {
	if os.Geteuid() == 0 {
		// Root lists any directory; make one vanish instead, which takes the
		// same path through Walk.
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "b"), nil, 0o644)
		var seen []string
		err := Walk(context.Background(), filepath.Join(root, "gone"), WalkOptions{}, func(e Entry) error { seen = append(seen, e.Path); return nil })
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("walk of a missing root: %v", err)
		}
		return
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "locked"), 0o755)
	os.WriteFile(filepath.Join(root, "locked/x"), nil, 0o644)
	os.WriteFile(filepath.Join(root, "z"), nil, 0o644)
	os.Chmod(filepath.Join(root, "locked"), 0)
	defer os.Chmod(filepath.Join(root, "locked"), 0o755)
	var kinds []string
	err := Walk(context.Background(), root, WalkOptions{}, func(e Entry) error {
		rel, _ := filepath.Rel(root, e.Path)
		kinds = append(kinds, rel+"="+e.Kind.String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(kinds)
	if len(kinds) != 2 || kinds[0] != "locked=unreadable" || kinds[1] != "z=regular" {
		t.Errorf("got %v", kinds)
	}
}

func TestWalkStopsOnCancel(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(root, n), nil, 0o644)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := Walk(ctx, root, WalkOptions{}, func(Entry) error { n++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("err %v after %d entries; want context.Canceled after 1", err, n)
	}
}

func TestWalkExclude(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{
		".git/objects/x", "src/a.go", "src/a.swp", "src/.git/y", "build/out",
		"src/build/z", "docs/x.pdf", "docs/sub/y.pdf", "node_modules",
	} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := NewExclude([]string{".git/", "*.swp", "/build/", "node_modules/", "docs/*.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	walk := func(dir string, o WalkOptions) ([]string, error) {
		var got []string
		err := Walk(context.Background(), dir, o, func(e Entry) error {
			rel, _ := filepath.Rel(root, e.Path)
			got = append(got, filepath.ToSlash(rel))
			return nil
		})
		return got, err
	}
	for _, tc := range []struct {
		dir  string
		own  bool // the walked directory is its own root (Root "")
		want string
	}{
		// node_modules is a file, and "node_modules/" matches directories
		// only; docs/sub/y.pdf is not directly in docs.
		{"", false, "[docs/sub/y.pdf node_modules src/a.go src/build/z]"},
		// Below the root, patterns stay relative to it.
		{"src", false, "[src/a.go src/build/z]"},
		{"docs", false, "[docs/sub/y.pdf]"},
		{"build", false, "[]"}, // excluded itself
		{".git/objects", false, "[]"},
		// Without Root, the walked directory is the root: "/build/" is
		// src/build.
		{"src", true, "[src/a.go]"},
	} {
		dir := filepath.Join(root, tc.dir)
		o := WalkOptions{Root: root, Exclude: ex}
		if tc.own {
			o.Root = ""
		}
		got, err := walk(dir, o)
		if err != nil {
			t.Errorf("walk %s: %v", tc.dir, err)
			continue
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("walk %q: got %v, want %s", tc.dir, got, tc.want)
		}
	}
	// A directory that is not under the root is refused.
	if _, err := walk(t.TempDir(), WalkOptions{Root: root, Exclude: ex}); err == nil {
		t.Error("walking outside the root: no error")
	}
	// Without exclusions, everything is found.
	if got, _ := walk(root, WalkOptions{}); len(got) != 9 {
		t.Errorf("walk without exclusions found %v", got)
	}
}

// OnDir sees every directory the walk enters, the walked one first and
// none excluded, before the walk lists it: a file it makes there is
// reported. fs.SkipDir from it leaves the directory out.
func TestWalkOnDirBeforeListing(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b", "c", "skip/me", "node_modules/x"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := NewExclude([]string{"node_modules/"})
	if err != nil {
		t.Fatal(err)
	}
	var dirs, files []string
	err = Walk(context.Background(), root, WalkOptions{Exclude: ex, OnDir: func(dir string) error {
		rel, _ := filepath.Rel(root, dir)
		dirs = append(dirs, rel)
		if rel == "skip" {
			return fs.SkipDir
		}
		return os.WriteFile(filepath.Join(dir, "made"), nil, 0o644)
	}}, func(e Entry) error {
		rel, _ := filepath.Rel(root, e.Path)
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".", "a", "a/b", "c", "skip"}; fmt.Sprint(dirs) != fmt.Sprint(want) {
		t.Errorf("OnDir saw %q, want %q", dirs, want)
	}
	if want := []string{"a/b/made", "a/made", "c/made", "made"}; fmt.Sprint(files) != fmt.Sprint(want) {
		t.Errorf("walk reported %q, want %q", files, want)
	}
}
