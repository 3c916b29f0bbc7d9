//go:build !unix

package ipc

import "os"

// openQuery opens path for reading. Opening a file here does not block on
// what it is.
func openQuery(path string) (*os.File, error) { return os.Open(path) }
