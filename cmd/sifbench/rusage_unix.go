//go:build unix

package main

import (
	"os"
	"syscall"
)

// maxRSSKB returns the peak resident set size of an exited process in KiB
// (Linux reports ru_maxrss in KiB), or 0 if unknown.
func maxRSSKB(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss)
	}
	return 0
}
