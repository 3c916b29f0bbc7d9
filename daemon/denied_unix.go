//go:build unix

package daemon

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// canList returns nil if the daemon may list directory dir and reach
// what is in it (read and search permission, ACLs included), else why not.
func canList(dir string) error {
	if err := unix.Access(dir, unix.R_OK|unix.X_OK); err != nil {
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}

// canRead returns nil if the daemon may read the file at path.
func canRead(path string) error {
	if err := unix.Access(path, unix.R_OK); err != nil {
		return &fs.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}
