package daemon

import (
	"fmt"

	"github.com/sif-dev/sif/watcher"
)

// pseudoFSError says that a root lies on a kernel pseudo-filesystem (proc,
// sysfs, devtmpfs, cgroup, debugfs, tracefs, securityfs...): its files
// describe the running system, change with every read and are nothing to
// index, so such a root is refused wherever roots are named (--root, the
// configuration file, sifctl roots add).
type pseudoFSError struct {
	root string // as given
	real string // absolute, symlinks resolved
	fs   string
}

func (e *pseudoFSError) Error() string {
	at := e.root
	if e.real != e.root {
		at = fmt.Sprintf("%s (%s)", e.root, e.real)
	}
	return fmt.Sprintf("root %s: on %s, a kernel pseudo-filesystem whose files describe the running system: nothing to index there; name a directory on a disk", at, e.fs)
}

// checkRootFS returns a *pseudoFSError if real, the resolved path of
// root, lies on a kernel pseudo-filesystem. An error finding out is not
// this check's to report: the caller's stat or the root's scan reports it.
func checkRootFS(root, real string) error {
	kind, name, err := detectFS(real)
	if err != nil || kind != watcher.VirtualFS {
		return nil
	}
	return &pseudoFSError{root: root, real: real, fs: name}
}
