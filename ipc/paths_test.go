package ipc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClientSocket(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SIF_SOCKET", "")
	t.Setenv("XDG_RUNTIME_DIR", dir)
	own := filepath.Join(dir, "sifd.sock")
	system := filepath.Join(dir, "system.sock")
	if got := clientSocket(0, system); got != SystemSocket {
		t.Errorf("root: %s, want %s", got, SystemSocket)
	}
	const user = 1000
	if got := clientSocket(user, system); got != own {
		t.Errorf("no socket at all: %s, want the per-user %s (for the error message)", got, own)
	}
	must := func(p string) {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	must(system)
	if got := clientSocket(user, system); got != system {
		t.Errorf("only the system socket: %s, want it", got)
	}
	must(own)
	if got := clientSocket(user, system); got != own {
		t.Errorf("both: %s, want the user's own %s", got, own)
	}
	t.Setenv("SIF_SOCKET", "/x/y.sock")
	if got := clientSocket(user, system); got != "/x/y.sock" {
		t.Errorf("SIF_SOCKET: %s", got)
	}
}
