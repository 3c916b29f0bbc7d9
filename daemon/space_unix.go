//go:build unix

package daemon

import "golang.org/x/sys/unix"

// totalSpace returns the size in bytes of the filesystem holding dir.
func totalSpace(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Blocks) * uint64(st.Bsize), nil
}
