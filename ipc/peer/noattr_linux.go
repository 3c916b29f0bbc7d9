package peer

import "golang.org/x/sys/unix"

// errNoXattr is the error getxattr returns for a file without the
// attribute asked for.
const errNoXattr = unix.ENODATA
