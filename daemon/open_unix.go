//go:build unix

package daemon

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a symlink (on
// Linux, anywhere in the path; elsewhere, at its end) and without blocking
// on fifos or devices. Errors are *fs.PathError, as os.OpenFile's.
func openNoFollow(path string) (*os.File, error) {
	fd, err := openFile(path, readFlags)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// readFlags are the flags files are opened with to be read.
const readFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC | syscall.O_NOCTTY

// openClassic is open(2), retried on EINTR.
func openClassic(path string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(path, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
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
