//go:build darwin || freebsd || netbsd

package filestat

import (
	"io/fs"
	"syscall"
)

// Ctime returns a file's status change time in Unix nanoseconds, or 0
// where the system does not say.
func Ctime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctimespec.Nano()
	}
	return 0
}
