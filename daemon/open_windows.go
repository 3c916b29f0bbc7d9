//go:build windows

package daemon

import "os"

// openNoFollow opens path for reading. Symlinks were skipped by the walk.
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }

func isSymlinkErr(err error) bool { return false }

// fileID returns zeros: Windows file ids need a handle query, and size and
// mtime decide whether a file changed.
func fileID(fi os.FileInfo) (dev, ino uint64) { return 0, 0 }
