//go:build !windows

package server

import "os"

// setSocketPerm gives the socket at path the permission bits perm: who may
// connect to a Unix socket is decided by write permission on it.
func setSocketPerm(path string, perm os.FileMode) error { return os.Chmod(path, perm) }
