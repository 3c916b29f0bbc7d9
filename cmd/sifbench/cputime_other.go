//go:build !unix

package main

import "time"

var start = time.Now()

// threadCPU is not known here: wall time stands in for it.
func threadCPU() time.Duration { return time.Since(start) }
