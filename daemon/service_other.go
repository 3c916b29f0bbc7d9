//go:build !windows

package daemon

// exitOnFailure: systemd sees a failed daemon through RunService's return
// value and sifd's exit status, so nothing exits behind main's back.
const exitOnFailure = false
