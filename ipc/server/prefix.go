package server

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
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

// RootPather is what a Controller may also implement so that the prefix
// check (checkPrefix) reads the roots' paths alone, without the status of
// each that Roots gathers.
type RootPather interface {
	// RootPaths returns the path of every root.
	RootPaths() []string
}

// rootPaths returns the daemon's roots, or ok false when the server has no
// Controller and so does not know them.
func (s *Server) rootPaths() (paths []string, ok bool) {
	switch ctl := s.ctl.(type) {
	case nil:
		return nil, false
	case RootPather:
		return ctl.RootPaths(), true
	}
	for _, r := range s.ctl.Roots() {
		paths = append(paths, r.Path)
	}
	return paths, true
}

// checkPrefix answers 400 bad_prefix and returns false when prefix (clean
// and absolute, as absPath returns it) can hold no indexed file: it is
// neither under a root nor above one. Without that check such a prefix
// answers nothing, as if nothing matched, when the caller most likely
// mistyped it or asked the wrong daemon. The message names the roots the
// caller may list. "" (no prefix) and a server that does not know its
// roots pass. similar and basis asking the fleet too do not check: their
// prefix may name a tree on another host.
func (s *Server) checkPrefix(w http.ResponseWriter, c *caller, prefix string) bool {
	if prefix == "" {
		return true
	}
	roots, ok := s.rootPaths()
	if !ok {
		return true
	}
	for _, r := range roots {
		if index.InTree(prefix, r) || index.InTree(r, prefix) {
			return true
		}
	}
	var v lister // nil: every root may be named
	if pv := c.view(); pv != nil {
		v = pv
	}
	writeError(w, http.StatusBadRequest, ipc.CodeBadPrefix, prefixMessage(prefix, roots, v))
	return false
}

// prefixMessage says that prefix is under no root, naming the roots v
// may list (every root when v is nil).
func prefixMessage(prefix string, roots []string, v lister) string {
	var shown []string
	for _, r := range roots {
		if v == nil || v.CanList(r) {
			shown = append(shown, r)
		}
	}
	switch {
	case len(roots) == 0:
		return fmt.Sprintf("%s is under no root of this daemon: it has none (add one with 'sifctl roots add DIR')", prefix)
	case len(shown) == 0:
		return fmt.Sprintf("%s is under no root of this daemon (none of its roots is one you may list)", prefix)
	}
	return fmt.Sprintf("%s is under no root of this daemon (roots: %s)", prefix, strings.Join(shown, ", "))
}
