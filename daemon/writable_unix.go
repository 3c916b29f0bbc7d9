//go:build unix

package daemon

import "golang.org/x/sys/unix"

// dirWritable returns why the daemon may not write in dir, or nil: the
// kernel's answer to access(2) with W_OK, which is EROFS on a read-only
// filesystem or mount, EPERM for an immutable directory and EACCES when
// its permissions forbid it. It writes nothing.
func dirWritable(dir string) error {
	return unix.Access(dir, unix.W_OK)
}

// diskSize returns the size of the filesystem holding dir and the bytes
// available on it to the daemon's user.
func diskSize(dir string) (total, free uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Blocks) * uint64(st.Bsize), uint64(st.Bavail) * uint64(st.Bsize), nil
}
