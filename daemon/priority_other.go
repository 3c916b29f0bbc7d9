//go:build !linux

package daemon

// lowerPriority does nothing here: the workers run at the daemon's
// priority and give way to queries only between their files' pieces
// (queryfirst.go).
func lowerPriority() error { return nil }

// lowPriorityWorkers says that workers run at the daemon's priority.
const lowPriorityWorkers = false
