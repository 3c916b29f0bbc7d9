//go:build !linux || !cgo

package main

// limitMallocArenas does nothing: glibc's arenas are Linux's, and without
// cgo the index allocates from the Go heap.
func limitMallocArenas() {}
