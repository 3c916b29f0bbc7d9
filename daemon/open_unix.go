//go:build unix

package daemon

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a final symlink
// and without blocking on fifos or devices.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}

// isSymlinkErr reports whether err says the opened path was a symlink.
func isSymlinkErr(err error) bool { return errors.Is(err, syscall.ELOOP) }

// fileID returns the device and inode of a file.
func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
