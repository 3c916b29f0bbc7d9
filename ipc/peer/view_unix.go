//go:build unix

package peer

import (
	"encoding/binary"
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Permission bits asked of a file or directory.
const (
	permRead   = 4
	permSearch = 1
)

// View decides what one caller may read. It remembers the directories it
// has judged, so a View should live for one request: files and
// permissions change. Not safe for concurrent use.
type View struct {
	cred Cred
	dirs map[string]bool // directory (as given) → caller can reach files in it
}

// NewView returns a View for the caller c.
func NewView(c Cred) *View {
	return &View{cred: c, dirs: make(map[string]bool)}
}

// CanRead reports whether the caller could open the regular file at path
// (absolute) for reading now.
func (v *View) CanRead(path string) bool {
	_, ok := v.readable(path)
	return ok
}

// Indexed is what the index recorded of a file: its inode, and its
// status change time (Unix nanoseconds, 0 when unknown).
type Indexed struct {
	Dev, Ino uint64
	CtimeNs  int64
}

// CanReadIndexed reports whether the caller could open the regular file
// at path for reading now, and that file is still the one indexed as
// was: the same inode, its status unchanged since. A file replaced
// (renamed over, removed and made again, even on a reused inode number)
// or rewritten, chmod'ed or chown'ed since it was indexed fails, until
// the daemon has read it again: what the index holds of it may be the
// content of a file the caller could not read, and an answer computed
// on it would tell about that content.
func (v *View) CanReadIndexed(path string, was Indexed) bool {
	st, ok := v.readable(path)
	if !ok {
		return false
	}
	if uint64(st.Dev) != was.Dev || uint64(st.Ino) != was.Ino { // Dev is 32 bits on some systems
		return false
	}
	return was.CtimeNs == 0 || st.Ctim.Nano() == was.CtimeNs
}

// readable returns the lstat of the regular file at path, and whether the
// caller could open it for reading now.
func (v *View) readable(path string) (*unix.Stat_t, bool) {
	if !filepath.IsAbs(path) {
		return nil, false
	}
	if !v.reachable(filepath.Dir(path)) {
		return nil, false
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false
	}
	return &st, v.allowed(path, &st, permRead)
}

// CanList reports whether the caller could open the directory at path for
// reading and reach the files in it: search permission down to it, and
// read and search permission on it.
func (v *View) CanList(dir string) bool {
	if !filepath.IsAbs(dir) || !v.reachable(dir) {
		return false
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat(real, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	return v.allowed(real, &st, permRead)
}

// reachable reports whether the caller has search permission on dir and
// on every directory above it, after symbolic links are resolved, as path
// resolution needs.
func (v *View) reachable(dir string) bool {
	if ok, seen := v.dirs[dir]; seen {
		return ok
	}
	ok := v.judgeReachable(dir)
	v.dirs[dir] = ok
	return ok
}

func (v *View) judgeReachable(dir string) bool {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil || !filepath.IsAbs(real) {
		return false
	}
	if real != dir {
		return v.reachable(real)
	}
	if parent := filepath.Dir(dir); parent != dir && !v.reachable(parent) {
		return false
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	return v.allowed(dir, &st, permSearch)
}

// allowed decides whether the caller has the permission want (permRead or
// permSearch) on the file at path, whose lstat is st, as Linux's
// generic_permission does: the owner is judged by the owner bits alone;
// otherwise the access ACL decides when there is one and its mask (the
// mode's group bits) is not empty; otherwise the group bits apply to
// members of the file's group and the other bits to everyone else.
func (v *View) allowed(path string, st *unix.Stat_t, want uint16) bool {
	mode := uint16(st.Mode)
	if v.cred.UID == st.Uid {
		return (mode>>6)&want == want
	}
	if mode&0o070 != 0 {
		acl, err := readACL(path)
		if err != nil {
			return false // an ACL that cannot be read grants nothing
		}
		if acl != nil {
			return acl.allows(v.cred, st.Gid, want)
		}
	}
	bits := mode
	if v.cred.InGroup(st.Gid) {
		bits = mode >> 3
	}
	return bits&want == want
}

// POSIX ACL tags (linux/posix_acl_xattr.h).
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20

	aclXattr   = "system.posix_acl_access"
	aclVersion = 2
)

type aclEntry struct {
	tag, perm uint16
	id        uint32
}

type accessACL []aclEntry

// errBadACL: the ACL attribute is not in the format the kernel writes.
var errBadACL = errors.New("peer: malformed ACL")

// readACL returns the access ACL of path, or nil when it has none (or the
// filesystem has no ACLs).
func readACL(path string) (accessACL, error) {
	buf := make([]byte, 4+8*16)
	for {
		n, err := unix.Lgetxattr(path, aclXattr, buf)
		switch {
		case err == nil:
			return parseACL(buf[:n])
		case errors.Is(err, errNoXattr), errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EOPNOTSUPP):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < 1<<20:
			buf = make([]byte, 2*len(buf))
		default:
			return nil, err
		}
	}
}

// parseACL decodes the xattr form of an ACL: a little-endian version
// number, then entries of tag (16 bits), permissions (16 bits) and id (32
// bits).
func parseACL(b []byte) (accessACL, error) {
	if len(b) < 4 || (len(b)-4)%8 != 0 || binary.LittleEndian.Uint32(b) != aclVersion {
		return nil, errBadACL
	}
	acl := make(accessACL, 0, (len(b)-4)/8)
	for p := b[4:]; len(p) > 0; p = p[8:] {
		acl = append(acl, aclEntry{
			tag:  binary.LittleEndian.Uint16(p),
			perm: binary.LittleEndian.Uint16(p[2:]),
			id:   binary.LittleEndian.Uint32(p[4:]),
		})
	}
	return acl, nil
}

// allows applies the POSIX.1e access check algorithm (acl(5)) to a caller
// who is not the file's owner: a named user entry; else the owning group
// and named group entries the caller belongs to, any of which may grant;
// else the other entry. Named entries and group entries are limited by
// the mask.
func (a accessACL) allows(c Cred, group uint32, want uint16) bool {
	mask := uint16(7)
	for _, e := range a {
		if e.tag == aclMask {
			mask = e.perm
		}
	}
	for _, e := range a {
		if e.tag == aclUser && e.id == c.UID {
			return e.perm&mask&want == want
		}
	}
	matched := false
	for _, e := range a {
		var in bool
		switch e.tag {
		case aclGroupObj:
			in = c.InGroup(group)
		case aclGroup:
			in = c.InGroup(e.id)
		}
		if !in {
			continue
		}
		matched = true
		if e.perm&mask&want == want {
			return true
		}
	}
	if matched {
		return false
	}
	for _, e := range a {
		if e.tag == aclOther {
			return e.perm&want == want
		}
	}
	return false
}
