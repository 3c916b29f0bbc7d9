//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// freeBytes returns the bytes available to this user on the filesystem
// holding dir.
func freeBytes(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// allocatedBytes returns the disk space allocated to the file fi
// describes, which counts blocks reserved beyond its end.
func allocatedBytes(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
