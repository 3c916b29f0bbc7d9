//go:build unix

package main

import (
	"os"
	"syscall"
)

// reexec replaces the process with a new run of the same program, with the
// same arguments and environment: the same PID for the service manager,
// and nothing of the old process's state (open files, locks, Pebble's
// goroutines). It returns only if it fails.
func reexec() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, os.Environ())
}
