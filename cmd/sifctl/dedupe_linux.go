package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileID is a file on disk: its device, inode and number of names.
type fileID struct {
	dev, ino uint64
	nlink    uint64
}

func idOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{nlink: 1}
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, nlink: uint64(st.Nlink)}
}

// writable reports whether the caller may write path, by its real uid
// and gids as the kernel would check them.
func writable(path string) bool { return unix.Access(path, unix.W_OK) == nil }

var (
	errDiffers            = errors.New("the bytes differ")
	errCrossDevice        = errors.New("on another filesystem")
	errReflinkUnsupported = errors.New("reflink not supported")
)

// reflinkFile makes file share keep's blocks through FIDEDUPERANGE, which
// compares the bytes under the filesystem's lock and shares them only
// where equal. The kernel may do less than asked per call (btrfs 16 MiB):
// it is asked again from where it stopped.
func reflinkFile(keep, file string, size int64) error {
	src, err := os.Open(keep)
	if err != nil {
		return err
	}
	defer src.Close()
	// Opened for writing: FIDEDUPERANGE asks that of the destination
	// unless the caller owns it.
	dst, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer dst.Close()
	for done := int64(0); done < size; {
		r := unix.FileDedupeRange{
			Src_offset: uint64(done),
			Src_length: uint64(size - done),
			Info:       []unix.FileDedupeRangeInfo{{Dest_fd: int64(dst.Fd()), Dest_offset: uint64(done)}},
		}
		if err := unix.IoctlFileDedupeRange(int(src.Fd()), &r); err != nil {
			return dedupeErr(err)
		}
		info := r.Info[0]
		switch {
		case info.Status == unix.FILE_DEDUPE_RANGE_DIFFERS:
			return errDiffers
		case info.Status < 0:
			return dedupeErr(syscall.Errno(-info.Status))
		case info.Bytes_deduped == 0:
			return fmt.Errorf("FIDEDUPERANGE shared nothing at byte %d", done)
		}
		done += int64(info.Bytes_deduped)
	}
	return nil
}

func dedupeErr(err error) error {
	switch {
	case errors.Is(err, unix.EXDEV):
		return errCrossDevice
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOTTY):
		return fmt.Errorf("%w: %v", errReflinkUnsupported, err)
	}
	return fmt.Errorf("FIDEDUPERANGE: %w", err)
}
