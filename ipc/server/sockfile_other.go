//go:build !unix

package server

import "os"

// sameFile reports whether a and b describe the same file. Here a socket
// file's identity cannot be had from Lstat, so any file at the path is
// taken for the same: a removed socket is noticed, a replaced one is not.
func sameFile(a, b os.FileInfo) bool { return true }

// fileOwner: files have no uid and gid here.
func fileOwner(os.FileInfo) (uid, gid int) { return -1, -1 }
