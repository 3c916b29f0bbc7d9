//go:build unix

package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
