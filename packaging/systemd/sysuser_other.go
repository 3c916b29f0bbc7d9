//go:build !linux

package systemd

import (
	"fmt"
	"runtime"
)

// EnsureSystemUser creates the system user on Linux; elsewhere the service
// runs as the platform's service account and it returns an error.
func EnsureSystemUser(root string) (created bool, err error) {
	return false, fmt.Errorf("systemd.EnsureSystemUser: the %q system user is for Linux, not %s", SystemUser, runtime.GOOS)
}
