//go:build unix

package daemon

import "golang.org/x/sys/unix"

// freeSpace returns the bytes available to the daemon's user on the
// filesystem holding dir.
func freeSpace(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
