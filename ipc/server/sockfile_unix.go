//go:build unix

package server

import (
	"os"
	"syscall"
)

// sameFile reports whether a and b, from Lstat, describe the same file:
// the same device and inode.
func sameFile(a, b os.FileInfo) bool { return os.SameFile(a, b) }

// fileOwner returns the uid and gid of the file st describes.
func fileOwner(st os.FileInfo) (uid, gid int) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), int(s.Gid)
	}
	return -1, -1
}
