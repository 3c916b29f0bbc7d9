package watcher

import "fmt"

// FSKind is what a filesystem means for watching it: whether its change
// events can be trusted, and whether it holds files worth indexing.
type FSKind int

const (
	// LocalFS is a disk or memory filesystem of this machine (ext4, xfs,
	// btrfs, zfs, tmpfs, overlay...): the kernel sees, and reports, every
	// change.
	LocalFS FSKind = iota
	// NetworkFS is a network or cluster filesystem, or a FUSE one (sshfs,
	// rclone...): changes made elsewhere, by the server, another client
	// or the FUSE daemon, raise no events, so a tree on it must be
	// reconciled on a schedule rather than trusted to its watches.
	NetworkFS
	// VirtualFS is a kernel pseudo-filesystem (proc, sysfs, cgroup...):
	// its files describe the running system, and their sizes and contents
	// are nothing to index.
	VirtualFS
)

func (k FSKind) String() string {
	switch k {
	case LocalFS:
		return "local"
	case NetworkFS:
		return "network"
	case VirtualFS:
		return "virtual"
	}
	return fmt.Sprintf("FSKind(%d)", int(k))
}
