package watcher

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Exclude is a compiled list of exclusion patterns: the paths under a root
// that are neither walked, watched nor reported. The patterns are a subset
// of gitignore's, in path.Match syntax (*, ?, [a-z], and \ to quote):
//
//   - A pattern ending in "/" matches directories only: "build/".
//   - A pattern with no other "/" is matched against the name of every
//     component of a path, at any depth: ".git/" excludes every .git
//     directory, "*.swp" every swap file.
//   - A pattern with a "/" elsewhere is anchored at the root and matched
//     against the whole path relative to it: "docs/*.pdf" excludes the PDF
//     files directly in the root's docs directory. A leading "/" only
//     anchors: "/build/" is the build directory at the top of the root,
//     and no other.
//   - Matching a directory excludes everything below it.
//
// Unlike gitignore there is no negation ("!"), and "**" is no different
// from "*": a wildcard never matches a "/".
type Exclude struct {
	patterns []pattern
}

// pattern is one compiled exclusion pattern.
type pattern struct {
	glob     string // for path.Match, without the leading or trailing "/"
	dirOnly  bool   // it ended in "/"
	anchored bool   // it is matched against the whole relative path
}

// NewExclude compiles patterns. An invalid pattern (path.ErrBadPattern),
// or one that is empty once its slashes are trimmed, is an error naming it.
func NewExclude(patterns []string) (*Exclude, error) {
	e := &Exclude{patterns: make([]pattern, 0, len(patterns))}
	for _, s := range patterns {
		p := pattern{glob: s}
		p.glob, p.dirOnly = strings.CutSuffix(p.glob, "/")
		p.anchored = strings.Contains(p.glob, "/")
		p.glob = strings.TrimPrefix(p.glob, "/")
		if p.glob == "" {
			return nil, fmt.Errorf("watcher: exclude pattern %q: empty pattern", s)
		}
		// path.Match checks the whole pattern even when it does not match.
		if _, err := path.Match(p.glob, ""); err != nil {
			return nil, fmt.Errorf("watcher: exclude pattern %q: %w", s, err)
		}
		e.patterns = append(e.patterns, p)
	}
	return e, nil
}

// Match reports whether the path rel is excluded: rel is relative to the
// root, with '/' separators, and isDir tells whether it is a directory
// (its parents are). A path is excluded if it or any directory above it
// (below the root) matches a pattern; the root itself ("" or ".") never is.
// A nil *Exclude matches nothing.
func (e *Exclude) Match(rel string, isDir bool) bool {
	if e == nil || len(e.patterns) == 0 || rel == "" || rel == "." {
		return false
	}
	// Try rel's parents, shallowest first, then rel itself.
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && e.matchEntry(rel[:i], true) {
			return true
		}
	}
	return e.matchEntry(rel, isDir)
}

// matchEntry reports whether rel itself matches a pattern, regardless of
// its parents. Walks and watches need no more for an entry whose parent
// they reached: an excluded directory is never entered.
func (e *Exclude) matchEntry(rel string, isDir bool) bool {
	if e == nil {
		return false
	}
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	for _, p := range e.patterns {
		if p.dirOnly && !isDir {
			continue
		}
		s := name
		if p.anchored {
			s = rel
		}
		if ok, _ := path.Match(p.glob, s); ok {
			return true
		}
	}
	return false
}

// same reports whether e and o hold the same patterns; nil holds none.
func (e *Exclude) same(o *Exclude) bool {
	var a, b []pattern
	if e != nil {
		a = e.patterns
	}
	if o != nil {
		b = o.patterns
	}
	return slices.Equal(a, b)
}

// relPath returns p relative to root with '/' separators ("" for root
// itself), and whether p is root or below it. Both must be clean.
func relPath(root, p string) (string, bool) {
	if p == root {
		return "", true
	}
	rest, ok := strings.CutPrefix(p, root)
	switch {
	case !ok:
		return "", false
	case strings.HasSuffix(root, string(filepath.Separator)):
		// root is "/" (or `C:\`): rest starts with a name.
	case rest != "" && os.IsPathSeparator(rest[0]):
		rest = rest[1:]
	default: // root "/a", p "/ab"
		return "", false
	}
	return filepath.ToSlash(rest), true
}
