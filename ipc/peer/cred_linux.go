package peer

import (
	"errors"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

func fromUnixConn(c *net.UnixConn) (Cred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("peer: %w", err)
	}
	var cred Cred
	var opErr error
	err = raw.Control(func(fd uintptr) {
		u, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			opErr = fmt.Errorf("peer: SO_PEERCRED: %w", err)
			return
		}
		cred = Cred{PID: u.Pid, UID: u.Uid, GID: u.Gid}
		cred.Groups, opErr = peerGroups(int(fd))
	})
	if err == nil {
		err = opErr
	}
	return cred, err
}

// peerGroups reads SO_PEERGROUPS (Linux 4.13 and later): the supplementary
// groups of the peer when it connected. x/sys has no typed getter for it,
// so the gid array is read with a plain getsockopt; ERANGE reports the
// length needed.
func peerGroups(fd int) ([]uint32, error) {
	n := 32
	for range 3 {
		buf := make([]uint32, n)
		size := uint32(n * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		switch {
		case errno == 0:
			return buf[:size/4], nil
		case errors.Is(errno, unix.ERANGE) && int(size/4) > n:
			n = int(size / 4)
		case errors.Is(errno, unix.ENOPROTOOPT):
			// An old kernel: the caller is judged by its primary group
			// alone, which can only deny, never grant, too much.
			return nil, nil
		default:
			return nil, fmt.Errorf("peer: SO_PEERGROUPS: %w", errno)
		}
	}
	return nil, errors.New("peer: SO_PEERGROUPS: group list keeps growing")
}
