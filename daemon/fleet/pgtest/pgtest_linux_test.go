package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOtherUserConnects: a daemon that runs as nobody (as sifd does in
// the end-to-end tests run by root) reaches the server over its socket.
func TestOtherUserConnects(t *testing.T) {
	srv := Start(t, nil)
	cmd := exec.Command(filepath.Join(srv.Bin(), "psql"), "--no-psqlrc", "--tuples-only", "--no-align",
		"--command", "SELECT current_user", srv.URL("postgres"))
	cmd.Dir = "/"
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != srv.User() {
		t.Fatalf("psql as another user: %v\n%s", err, out)
	}
}
