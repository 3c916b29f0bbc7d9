package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ErrInUse: another process is serving on the socket path.
var ErrInUse = errors.New("server: socket is in use by another process")

// Listen creates the Unix socket at path, with its directory (mode 0700 if
// it is created), and the socket mode perm. A stale socket left by a daemon
// that died is removed; a socket someone still answers on is not, and
// Listen fails with ErrInUse. A path that exists and is not a socket is
// never removed.
func Listen(path string, perm os.FileMode) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("server.Listen %s: %w", path, err)
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("server.Listen %s: exists and is not a socket; remove it or choose another --socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("server.Listen %s: %w", path, ErrInUse)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("server.Listen %s: removing stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("server.Listen %s: %w", path, err)
	}
	if err := setSocketPerm(path, perm); err != nil {
		ln.Close()
		return nil, fmt.Errorf("server.Listen %s: %w", path, err)
	}
	return ln, nil
}
