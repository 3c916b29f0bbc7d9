package peer

import (
	"errors"
	"fmt"
	"net"
	"slices"
)

// ErrUnsupported: the platform or the connection cannot tell who the peer
// is.
var ErrUnsupported = errors.New("peer: credentials of the caller are not available here")

// Cred identifies the process on the other end of a Unix socket.
type Cred struct {
	PID    int32
	UID    uint32
	GID    uint32   // primary group
	Groups []uint32 // supplementary groups; may include GID
}

// InGroup reports whether gid is the caller's primary or a supplementary
// group.
func (c Cred) InGroup(gid uint32) bool {
	return c.GID == gid || slices.Contains(c.Groups, gid)
}

func (c Cred) String() string {
	return fmt.Sprintf("uid %d gid %d pid %d", c.UID, c.GID, c.PID)
}

// FromConn returns the credentials of the process that opened c, which
// must be a Unix stream connection (or wrap one and expose it through a
// NetConn method). It fails with an error wrapping ErrUnsupported where
// the platform cannot tell.
func FromConn(c net.Conn) (Cred, error) {
	for {
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = w.NetConn()
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Cred{}, fmt.Errorf("%w: %T is not a Unix socket connection", ErrUnsupported, c)
	}
	return fromUnixConn(uc)
}
