//go:build !linux

package peer

import "net"

func fromUnixConn(*net.UnixConn) (Cred, error) { return Cred{}, ErrUnsupported }
