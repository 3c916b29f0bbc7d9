//go:build unix

package daemon

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyReload delivers SIGHUP to ch; the returned func stops it.
func notifyReload(ch chan<- os.Signal) (stop func()) {
	signal.Notify(ch, syscall.SIGHUP)
	return func() { signal.Stop(ch) }
}
