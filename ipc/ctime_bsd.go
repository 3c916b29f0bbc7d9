//go:build darwin || freebsd || netbsd

package ipc

import (
	"io/fs"
	"syscall"
)

// fileCtime returns a file's status change time in Unix nanoseconds, or 0
// where the system does not say.
func fileCtime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctimespec.Nano()
	}
	return 0
}
