package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdAnalyzeVerify checks the units install writes with systemd's
// own parser. systemd-analyze verify exits 0 on unknown keys and bad
// values (it only warns), so any output fails the test.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze not found: install Debian's systemd package (apt-get install --no-install-recommends systemd), as .ci/run does")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "bin", "sifd") // ConditionFileIsExecutable and ExecStart need it
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A user manager needs its runtime directory.
	rt := filepath.Join(dir, "run")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	weird := []string{"--root", "/srv/with space", "--root", `/srv/50% "q" $HOME\x`, "--log-level=debug"}
	for _, ex := range exampleUnits {
		for _, extra := range [][]string{nil, weird} {
			u := ex.unit
			u.Exec = exe
			u.Args = append(append([]string(nil), u.Args...), extra...)
			u.Writable = append(append([]string(nil), u.Writable...), "/srv/idx dir")
			text, err := Render(u)
			if err != nil {
				t.Fatal(err)
			}
			unitDir := filepath.Join(dir, ex.file+map[bool]string{false: "", true: ".weird"}[extra != nil])
			if err := os.Mkdir(unitDir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(unitDir, "sifd.service")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"verify", "--man=no", path}
			if u.User {
				args = append([]string{"--user"}, args...)
			}
			cmd := exec.Command(analyze, args...)
			cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "SYSTEMD_LOG_COLOR=0")
			out, err := cmd.CombinedOutput()
			if err != nil || len(strings.TrimSpace(string(out))) > 0 {
				t.Errorf("systemd-analyze %s: %v\n%s\n--- unit:\n%s", strings.Join(args, " "), err, out, text)
			}
		}
	}
}
