//go:build !linux

package main

import (
	"errors"
	"io/fs"
)

// fileID is a file on disk: its device, inode and number of names, not
// known here, where each file counts as one name on one device.
type fileID struct {
	dev, ino uint64
	nlink    uint64
}

func idOf(fs.FileInfo) fileID { return fileID{nlink: 1} }

// writable leaves the check to the operation itself, which fails on a
// file the caller cannot write.
func writable(string) bool { return true }

var (
	errDiffers            = errors.New("the bytes differ")
	errCrossDevice        = errors.New("on another filesystem")
	errReflinkUnsupported = errors.New("reflink not supported")
)

// reflinkFile is FIDEDUPERANGE, which only Linux has.
func reflinkFile(string, string, int64) error {
	return errReflinkUnsupported
}
