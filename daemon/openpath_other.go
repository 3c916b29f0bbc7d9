//go:build unix && !linux

package daemon

// openFile opens path with flags (O_NOFOLLOW among them). Unlike Linux's,
// it follows a symlink before the last component (see openpath_linux.go).
func openFile(path string, flags int) (int, error) { return openClassic(path, flags) }
