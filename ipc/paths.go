package ipc

import (
	"os"
	"path/filepath"
)

// SystemSocket is where a system-wide sifd listens.
const SystemSocket = "/run/sifd/sifd.sock"

// DefaultSocket returns the socket a client talks to and a daemon listens
// on when none is named: $SIF_SOCKET if set; else for root SystemSocket;
// else $XDG_RUNTIME_DIR/sifd.sock, or sifd.sock in the per-user state
// directory when there is no runtime directory.
func DefaultSocket() string { return defaultSocket(os.Geteuid()) }

func defaultSocket(euid int) string {
	if s := os.Getenv("SIF_SOCKET"); s != "" {
		return s
	}
	if euid == 0 {
		return SystemSocket
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "sifd.sock")
	}
	return filepath.Join(UserStateDir(), "sifd.sock")
}

// UserStateDir is sifd's per-user state directory: $XDG_STATE_HOME/sifd,
// else ~/.local/state/sifd.
func UserStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "sifd")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "sifd-state")
	}
	return filepath.Join(home, ".local", "state", "sifd")
}

// ClientSocket returns the socket a client talks to when none is named: as
// DefaultSocket, except that an ordinary user without a sifd of their own
// (no socket at the per-user path) talks to the system-wide one, if it
// exists.
func ClientSocket() string { return clientSocket(os.Geteuid(), SystemSocket) }

func clientSocket(euid int, system string) string {
	s := defaultSocket(euid)
	if os.Getenv("SIF_SOCKET") != "" || s == SystemSocket {
		return s
	}
	if _, err := os.Stat(s); err != nil {
		if _, err := os.Stat(system); err == nil {
			return system
		}
	}
	return s
}
