package main

import "syscall"

// childAttr makes the supervised daemon die with its supervisor, so that a
// supervisor killed outright does not leave the daemon holding the index
// and the socket.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
