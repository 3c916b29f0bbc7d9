//go:build !linux

package daemon

// orderedEvents: elsewhere the watcher's events are ordered only within
// a directory's, so each root gets its own cookie.
const orderedEvents = false
