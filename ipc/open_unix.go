//go:build unix

package ipc

import (
	"os"
	"syscall"
)

// openQuery opens path for reading without blocking: opening a fifo with
// no writer, or a device, must not hang before SketchFile can see what the
// file is and refuse it.
func openQuery(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}
