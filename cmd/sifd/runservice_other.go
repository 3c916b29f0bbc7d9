//go:build !windows

package main

// exitOnFailure: systemd sees a failed daemon through runService's return
// value and sifd's exit status, so nothing exits behind main's back.
const exitOnFailure = false
