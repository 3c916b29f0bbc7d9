package daemon

import (
	"sync"

	"golang.org/x/sys/unix"
)

// openFile opens path with flags (O_NOFOLLOW among them) and refuses a
// symlink anywhere in it, not only at its end.
//
// Roots are kept as real paths (see cleanRoots), so no path sifd reads
// holds a symlink unless one was put there since the walk saw the tree:
// a directory replaced by a symlink, between its listing and the read of
// a file in it, or between an event and its handling. Plain open would
// follow it out of the root, to any file sifd's capability lets it read,
// and index that file under the path, or open a device there. openat2's
// RESOLVE_NO_SYMLINKS makes that open fail with ELOOP, which is reported
// as a symlink, as a final one is.
//
// Kernels before 5.6, and some seccomp filters, refuse openat2: there
// openFile falls back to open, which follows a symlink before the last
// component.
func openFile(path string, flags int) (int, error) {
	if !haveOpenat2() {
		return openClassic(path, flags)
	}
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		// EINTR only: a device may refuse a non-blocking open with
		// EAGAIN for as long as it is busy.
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// haveOpenat2 reports whether openat2 works here, tried once.
var haveOpenat2 = sync.OnceValue(func() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
})
