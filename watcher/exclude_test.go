package watcher

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestExcludeMatch(t *testing.T) {
	ex, err := NewExclude([]string{".git/", "node_modules/", "*.swp", "/build/", "docs/*.pdf", "/TODO", "cache?/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rel   string
		isDir bool
		want  bool
	}{
		// Directory-only patterns, at any depth.
		{".git", true, true},
		{".git", false, false}, // a .git file (a worktree's) is no directory
		{".git/config", false, true},
		{"a/b/.git", true, true},
		{"a/b/.git/objects/ab/cdef", false, true},
		{".github", true, false},
		{"x/node_modules/y/z.js", false, true},
		{"node_modules", false, false},
		// A base-name pattern matches files and directories.
		{"a.swp", false, true},
		{"deep/er/.a.swp", false, true},
		{"dir.swp", true, true},
		{"dir.swp/file", false, true},
		{"a.swpx", false, false},
		// Anchored patterns match the whole relative path.
		{"build", true, true},
		{"build/out/x.o", false, true},
		{"build", false, false},
		{"src/build", true, false},
		{"src/build/x", false, false},
		{"docs/a.pdf", false, true},
		{"docs/sub/a.pdf", false, false}, // a wildcard matches no "/"
		{"a.pdf", false, false},
		{"x/docs/a.pdf", false, false},
		{"TODO", false, true},
		{"TODO", true, true},
		{"TODO/x", false, true},
		{"src/TODO", false, false},
		{"cache1", true, true},
		{"a/cacheX/b", false, true},
		{"cache", true, false},
		// The root itself is never excluded.
		{"", true, false},
		{".", true, false},
		{"src/main.go", false, false},
	} {
		if got := ex.Match(tc.rel, tc.isDir); got != tc.want {
			t.Errorf("Match(%q, dir=%v) = %v, want %v", tc.rel, tc.isDir, got, tc.want)
		}
	}
	var none *Exclude
	if none.Match(".git", true) {
		t.Error("a nil Exclude matched")
	}
	empty, err := NewExclude(nil)
	if err != nil || empty.Match("a", false) {
		t.Errorf("an empty Exclude: %v, or it matched", err)
	}
}

func TestExcludeBadPatterns(t *testing.T) {
	for _, p := range []string{"[", "a/[b", "x\\", "/", "//", ""} {
		_, err := NewExclude([]string{"ok/", p})
		if err == nil {
			t.Errorf("%q: no error", p)
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", p)) {
			t.Errorf("%q: the error does not name it: %v", p, err)
		}
		if strings.Trim(p, "/") != "" && !errors.Is(err, path.ErrBadPattern) {
			t.Errorf("%q: %v, want path.ErrBadPattern", p, err)
		}
	}
}

func TestRelPath(t *testing.T) {
	if filepath.Separator != '/' {
		t.Skip("the cases use '/' separators")
	}
	for _, tc := range []struct {
		root, p, rel string
		ok           bool
	}{
		{"/a", "/a", "", true},
		{"/a", "/a/b/c", "b/c", true},
		{"/a", "/ab", "", false},
		{"/a", "/", "", false},
		{"/", "/x/y", "x/y", true},
		{"a", "a/b", "b", true},
	} {
		if rel, ok := relPath(tc.root, tc.p); rel != tc.rel || ok != tc.ok {
			t.Errorf("relPath(%q, %q) = %q, %v; want %q, %v", tc.root, tc.p, rel, ok, tc.rel, tc.ok)
		}
	}
}
