package config

import (
	"fmt"
	"os/user"
	"strconv"

	"github.com/sif-dev/sif/watcher"
)

// Values of network_fs (daemon.Config.NetworkFS): what to do with a root on
// a filesystem that sends no change events (NFS, SMB, FUSE).
const (
	NetworkFSScan   = "scan"   // rescan it every rescan interval
	NetworkFSRefuse = "refuse" // refuse it
)

// Values of socket_access (daemon.Config.SocketAccess): who may connect to
// the socket.
const (
	SocketAll   = "all"   // every local user, answered with what each may read
	SocketOwner = "owner" // the daemon's own user and root
)

// DefaultMemoryLimit is the soft limit sifd sets on its Go heap when
// neither memory_limit, --memory-limit nor $GOMEMLIMIT names one: the
// collector works harder as the heap nears it, rather than let it grow
// to twice the live heap. The index's cache (index.DefaultCacheSize) and
// about 30 MB of code and C allocations come on top of it. MinMemoryLimit
// is the least a configuration may set.
const (
	DefaultMemoryLimit = 128 << 20
	MinMemoryLimit     = 32 << 20
)

// DefaultMinFreeSpace is the free space kept on the index's filesystem
// when min_free_space (daemon.Config.MinFreeSpace) is not set: room for
// Pebble to flush a memtable and compact. On a filesystem of less than
// four times as much, the daemon keeps a quarter of its size instead.
const DefaultMinFreeSpace = 64 << 20

// LookupGroup resolves operator_group, a group name or a numeric gid, to
// its gid.
func LookupGroup(name string) (uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("group %q: %w", name, err)
	}
	n, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("group %q: gid %q is not a number (groups are not numbered on this system)", name, g.Gid)
	}
	return uint32(n), nil
}

// PseudoFSError says that a root lies on a kernel pseudo-filesystem (proc,
// sysfs, devtmpfs, cgroup, debugfs, tracefs, securityfs...): its files
// describe the running system, change with every read and are nothing to
// index, so such a root is refused wherever roots are named (--root, the
// configuration file, sifctl roots add).
type PseudoFSError struct {
	Root string // as given
	Real string // absolute, symlinks resolved
	FS   string // the filesystem's name, such as "proc"
}

func (e *PseudoFSError) Error() string {
	at := e.Root
	if e.Real != e.Root {
		at = fmt.Sprintf("%s (%s)", e.Root, e.Real)
	}
	return fmt.Sprintf("root %s: on %s, a kernel pseudo-filesystem whose files describe the running system: nothing to index there; name a directory on a disk", at, e.FS)
}

// CheckRootFS returns a *PseudoFSError if real, the resolved path of
// root, lies on a kernel pseudo-filesystem. An error finding out is not
// this check's to report: the caller's stat or the root's scan reports it.
func CheckRootFS(root, real string) error {
	kind, name, err := watcher.DetectFS(real)
	if err != nil || kind != watcher.VirtualFS {
		return nil
	}
	return &PseudoFSError{Root: root, Real: real, FS: name}
}
