//go:build unix && !linux

package main

import "syscall"

// childAttr: the supervised daemon outlives a supervisor killed outright
// here (no PR_SET_PDEATHSIG).
func childAttr() *syscall.SysProcAttr { return nil }
