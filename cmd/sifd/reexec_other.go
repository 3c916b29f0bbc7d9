//go:build !unix

package main

import "errors"

// reexec is not available here: the process exits with an error, and the
// service manager, which restarts a service that fails, starts it again.
func reexec() error {
	return errors.New("a process cannot replace itself on this system")
}
