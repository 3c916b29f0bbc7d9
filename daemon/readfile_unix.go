//go:build unix

package daemon

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// rfile is a file opened by the reader: a bare descriptor, read and
// closed with plain system calls. An *os.File would cost each file an
// attempt to register it with the runtime's poller (a regular file
// opened O_NONBLOCK is refused there), a finalizer and an allocation.
type rfile int

// openRead opens path for reading as openNoFollow does: without following
// a symlink (on Linux, anywhere in the path) and without blocking on fifos
// or devices. Errors are *fs.PathError, as os.OpenFile's.
func openRead(path string) (rfile, error) {
	fd, err := openFile(path, readFlags)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return rfile(fd), nil
}

// read reads into b; it returns 0 and no error at the end of the file.
func (f rfile) read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(f), b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// stat returns what fstat says of the open file.
func (f rfile) stat() (fileStat, error) {
	// x/sys/unix's Stat_t names the times alike on every unix (darwin's
	// syscall.Stat_t calls them Mtimespec) and Nano widens a 32-bit
	// second before multiplying.
	var st unix.Stat_t
	for {
		err := unix.Fstat(int(f), &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileStat{}, err
		}
		break
	}
	return fileStat{
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
		mode:  fileMode(uint32(st.Mode)),
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
	}, nil
}

func (f rfile) close() error { return syscall.Close(int(f)) }

// fileMode converts a stat mode to an fs.FileMode as os.Stat does.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		mode |= fs.ModeDevice
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
