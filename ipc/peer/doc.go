// Package peer tells who is on the other end of sifd's socket and what
// that caller may read.
//
// A caller's credentials (Cred) are the user, primary group and
// supplementary groups of the process that connected, as the kernel
// recorded them when it connected (SO_PEERCRED and SO_PEERGROUPS on
// Linux). They cannot be forged by the client.
//
// A View answers one question for one caller: could this caller open the
// file at a path for reading right now? It decides as the kernel would for
// an open(2) by that process: search (x) permission on every directory
// from / down to the file's directory, after resolving symbolic links in
// the directories, and read (r) permission on the file itself, each
// decided from the owner, group and mode bits, or from the POSIX access
// ACL when the file or directory has one. A path that no longer exists, or
// that is now a symbolic link, is not readable. Root and the daemon's own
// user are not filtered at all; the server does not make a View for them.
//
// For an indexed file the server asks more (CanReadIndexed): that the
// file now at the path is still the one the index describes, the same
// inode with the same status change time. A file replaced or changed
// since it was indexed is refused until the daemon has read it again,
// since what the index holds of it may be the content of a file the
// caller could not read.
//
// The daemon itself must be able to see every path it asks about: it runs
// as root or with CAP_DAC_READ_SEARCH (the system service), or checks only
// paths under its own roots, which it can read.
package peer
