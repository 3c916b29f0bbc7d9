//go:build !unix

package main

// supervise does nothing here: the Windows service manager restarts a
// service that dies, and an interactive run is not supervised.
func supervise([]string) (int, bool) { return 0, false }

// exited returns code: there is no supervisor to tell.
func exited(code int) int { return code }
