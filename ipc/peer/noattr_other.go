//go:build unix && !linux

package peer

import "golang.org/x/sys/unix"

// errNoXattr is the error getxattr returns for a file without the
// attribute asked for: the BSDs and darwin name it ENOATTR.
const errNoXattr = unix.ENOATTR
