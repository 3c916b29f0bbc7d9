//go:build !linux

package daemon

// lowerPriority does nothing here: the workers run at the daemon's
// priority and give way to queries only between their files' pieces
// (queryfirst.go).
func lowerPriority() error { return nil }

// whole runs f, a whole-index answer, at the daemon's priority.
func whole(f func()) { f() }

// atNice runs f at the daemon's priority.
func atNice(_ int, f func()) { f() }

// workerNice is unused here: the workers run at the daemon's priority.
const workerNice = 0

// lowPriorityWorkers says that workers run at the daemon's priority.
const lowPriorityWorkers = false
