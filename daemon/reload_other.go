//go:build !unix

package daemon

import "os"

// notifyReload: there is no reload signal here; restart the service to
// apply a new configuration.
func notifyReload(chan<- os.Signal) (stop func()) { return nil }
