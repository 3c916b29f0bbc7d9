package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ErrInUse: another process is serving on the socket path.
var ErrInUse = errors.New("server: socket is in use by another process")

// DefaultCheckEvery is how often Watch looks at the socket's file by
// default.
const DefaultCheckEvery = 2 * time.Second

// Listener is a net.Listener on a Unix socket file that it can make again:
// if the file is removed or replaced (by another file or another socket),
// Ensure, which Watch calls every few seconds, listens again on a new
// socket at the same path, with the same mode, in a directory with the
// same mode and owner, and closes the old listening socket. Connections
// already accepted are untouched, and Accept goes on returning the new
// socket's. It never removes what is not its own but a stale socket: not
// a file that is not a socket, nor a socket someone answers on (another
// sifd that took the path over); then it waits, and listens again once
// the path is free or stale.
//
// Accept, Addr, Close, Ensure and Watch are safe to call concurrently.
type Listener struct {
	path    string
	perm    os.FileMode
	dirMode os.FileMode // of the socket's directory when Listen was called
	dirUID  int         // its owner, or -1 where there is none
	dirGID  int

	mu     sync.Mutex
	ln     net.Listener
	id     os.FileInfo // the socket file ln made
	closed bool
	failed string // the last failure Ensure logged, so it is logged once
}

// Listen creates the Unix socket at path, with its directory if it is
// missing (mode DirMode(perm), so that those the socket is open to can
// reach it), and the socket mode perm. A stale socket left by a daemon
// that died is removed; a socket someone still answers on is not, and
// Listen fails with ErrInUse. A path that exists and is not a socket is
// never removed.
//
// The caller must Close the Listener (Serve does); Close removes the
// socket file if it is still the one the Listener made.
func Listen(path string, perm os.FileMode) (*Listener, error) {
	dir := filepath.Dir(path)
	if err := MkdirFor(path, perm); err != nil {
		return nil, fmt.Errorf("server.Listen %s: %w", path, err)
	}
	dst, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("server.Listen %s: %w", path, err)
	}
	ln, id, err := listenAt(path, perm)
	if err != nil {
		return nil, fmt.Errorf("server.Listen %s: %w", path, err)
	}
	uid, gid := fileOwner(dst)
	return &Listener{path: path, perm: perm, dirMode: dst.Mode().Perm(), dirUID: uid, dirGID: gid, ln: ln, id: id}, nil
}

// DirMode is the mode of a socket's directory for a socket of mode perm:
// the owner's rwx, and search (x) and read for the group and others when
// the socket gives them anything. A socket open to every user in a 0700
// directory would be closed to them all the same.
func DirMode(perm os.FileMode) os.FileMode {
	mode := os.FileMode(0o700)
	if perm&0o060 != 0 {
		mode |= 0o050
	}
	if perm&0o006 != 0 {
		mode |= 0o005
	}
	return mode
}

// MkdirFor makes the directory of the socket path, with its parents, if it
// is missing: mode DirMode(perm) whatever the umask. An existing directory
// is left as it is.
func MkdirFor(path string, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	mode := DirMode(perm)
	if err := os.MkdirAll(dir, mode); err != nil {
		return err
	}
	return os.Chmod(dir, mode) // the umask took bits off
}

// listenAt listens on a new socket at path, in an existing directory, as
// Listen does, and returns it with its file's identity.
func listenAt(path string, perm os.FileMode) (net.Listener, os.FileInfo, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode().Type() != os.ModeSocket {
			return nil, nil, fmt.Errorf("exists and is not a socket (%s); remove it or choose another --socket", fileKind(st))
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, nil, ErrInUse
		}
		if err := os.Remove(path); err != nil {
			return nil, nil, fmt.Errorf("removing stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, err
	}
	// Close must not unlink the path: by then it may be another's.
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	if err := setSocketPerm(path, perm); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, nil, err
	}
	id, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, id, nil
}

// fileKind names the type of the file st describes, for messages.
func fileKind(st os.FileInfo) string {
	switch t := st.Mode().Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeDevice != 0:
		return "a device"
	default:
		return "a special file"
	}
}

// Accept waits for the next connection on the current socket.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		ln := l.ln
		l.mu.Unlock()
		c, err := ln.Accept()
		if err == nil {
			return c, nil
		}
		l.mu.Lock()
		replaced := l.ln != ln && !l.closed
		l.mu.Unlock()
		if !replaced {
			return nil, err
		}
		// Ensure closed ln for a new socket: accept on that one.
	}
}

// Addr returns the current socket's address.
func (l *Listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ln.Addr()
}

// Close stops listening and removes the socket file if it is still the
// one the Listener made. Closing twice does nothing more.
func (l *Listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.ln.Close()
	if st, serr := os.Lstat(l.path); serr == nil && sameFile(st, l.id) {
		os.Remove(l.path)
	}
	return err
}

// Path returns the socket's path.
func (l *Listener) Path() string { return l.path }

// Ensure makes sure the socket file is the Listener's own: if it was
// removed or replaced, Ensure logs it at Warn on log and listens again on
// a new socket at the same path (see Listener). It returns nil when the
// socket is in place, whether it was already or is now, and otherwise why
// it is not; a failure is logged at Warn the first time and at Debug while
// it stays the same. It returns net.ErrClosed once the Listener is closed.
func (l *Listener) Ensure(log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return net.ErrClosed
	}
	what := "removed"
	st, err := os.Lstat(l.path)
	switch {
	case err == nil && sameFile(st, l.id):
		l.failed = ""
		return nil
	case err == nil:
		what = "replaced by " + fileKind(st)
	case errors.Is(err, fs.ErrNotExist):
		if _, derr := os.Lstat(filepath.Dir(l.path)); errors.Is(derr, fs.ErrNotExist) {
			what = "removed with its directory"
		}
	default:
		return l.failLocked(log, "cannot check the socket file", err)
	}
	if err := l.mkdirLocked(); err != nil {
		return l.failLocked(log, "socket file "+what+"; cannot make its directory again: sifd cannot be reached until it is restarted", err)
	}
	ln, id, err := listenAt(l.path, l.perm)
	switch {
	case errors.Is(err, ErrInUse):
		return l.failLocked(log, "socket file "+what+", and another process answers there: sifd cannot be reached until that socket is removed", err)
	case err != nil:
		return l.failLocked(log, "socket file "+what+"; cannot listen there again: sifd cannot be reached until the path is free", err)
	}
	old := l.ln
	l.ln, l.id, l.failed = ln, id, ""
	old.Close() // wakes Accept, which takes the new socket
	log.Warn("socket file "+what+": listening again on a new socket", "socket", l.path, "mode", fmt.Sprintf("%#o", l.perm))
	return nil
}

// failLocked logs a failure of Ensure, at Warn unless it is the one
// logged last, and returns it.
func (l *Listener) failLocked(log *slog.Logger, msg string, err error) error {
	level := slog.LevelWarn
	if l.failed == msg+err.Error() {
		level = slog.LevelDebug
	}
	l.failed = msg + err.Error()
	log.Log(context.Background(), level, msg, "socket", l.path, "err", err)
	return fmt.Errorf("socket %s: %s: %w", l.path, msg, err)
}

// mkdirLocked makes the socket's directory again if it is gone, with the
// mode and, where the process may set it, the owner it had.
func (l *Listener) mkdirLocked() error {
	dir := filepath.Dir(l.path)
	if _, err := os.Lstat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, l.dirMode); err != nil {
		return err
	}
	if err := os.Chmod(dir, l.dirMode); err != nil { // the umask took bits off
		return err
	}
	if l.dirUID >= 0 {
		// As a user other than its owner, only the mode can be kept.
		os.Lchown(dir, l.dirUID, l.dirGID)
	}
	return nil
}

// Watch calls Ensure every interval (DefaultCheckEvery when it is not
// positive) until ctx is done or the Listener is closed, logging to log.
func (l *Listener) Watch(ctx context.Context, every time.Duration, log *slog.Logger) {
	if every <= 0 {
		every = DefaultCheckEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if errors.Is(l.Ensure(log), net.ErrClosed) {
				return
			}
		}
	}
}
