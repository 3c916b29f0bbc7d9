package server

import (
	"fmt"
	"path/filepath"
)

// absPath is the one check of every path and directory-tree prefix a
// request names (the prefix of groups and dupes, the path_prefix of
// similar and basis, the directories of dirs/totals, the path of roots
// and rescan): field names it in the error. "" is returned as "" (no
// prefix, or no path: the caller decides whether it is allowed). Any other
// must be absolute, since indexed paths are and the daemon's working
// directory is not the caller's, and is returned cleaned (filepath.Clean),
// so that /a/../a/b, /a/b/ and /a//b name the same tree /a/b.
func absPath(field, p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s %q: must be absolute", field, p)
	}
	return filepath.Clean(p), nil
}
