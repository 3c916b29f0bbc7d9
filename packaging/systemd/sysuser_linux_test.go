package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEnsureSystemUser creates the sifd user in scratch roots with each tool
// EnsureSystemUser may use, as `sifd install` does on the machine itself.
func TestEnsureSystemUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating users, even in a scratch root, needs root (CI runs as root)")
	}
	wantUser := regexp.MustCompile(`(?m)^sifd:x:(\d+):(\d+):sif daemon:/var/lib/sifd:/usr/sbin/nologin$`)
	newRoot := func(t *testing.T, group string) string {
		root := t.TempDir()
		if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{
			"passwd": "root:x:0:0:root:/root:/bin/bash\n", "group": "root:x:0:\n" + group,
			"shadow": "root:*:19000:0:99999:7:::\n", "gshadow": "root:*::\n",
		} {
			if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	check := func(t *testing.T, root string) {
		t.Helper()
		passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
		group, _ := os.ReadFile(filepath.Join(root, "etc/group"))
		m := wantUser.FindStringSubmatch(string(passwd))
		if m == nil {
			t.Fatalf("etc/passwd has no sifd system user:\n%s", passwd)
		}
		if !regexp.MustCompile(`(?m)^sifd:x:` + m[2] + `:`).Match(group) {
			t.Errorf("etc/group has no sifd group with gid %s:\n%s", m[2], group)
		}
		if !strings.HasPrefix(string(passwd), "root:x:0:0:") {
			t.Errorf("root's entry was lost:\n%s", passwd)
		}
	}
	ensure := func(t *testing.T, root string, wantCreated bool) {
		t.Helper()
		created, err := EnsureSystemUser(root)
		if err != nil {
			t.Fatal(err)
		}
		if created != wantCreated {
			t.Errorf("created = %v, want %v", created, wantCreated)
		}
	}
	// onlyTool leaves only the named tool on $PATH.
	onlyTool := func(t *testing.T, tool string) {
		bin := t.TempDir()
		if tool != "" {
			p, err := exec.LookPath(tool)
			if err != nil {
				t.Fatalf("%s not found (Debian: apt-get install systemd passwd): %v", tool, err)
			}
			if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("PATH", bin)
	}

	t.Run("systemd-sysusers", func(t *testing.T) {
		onlyTool(t, "systemd-sysusers")
		root := newRoot(t, "")
		ensure(t, root, true)
		check(t, root)
		ensure(t, root, false) // there already: nothing to do
		check(t, root)
	})
	t.Run("useradd", func(t *testing.T) {
		onlyTool(t, "useradd")
		root := newRoot(t, "")
		ensure(t, root, true)
		check(t, root)
		ensure(t, root, false)
	})
	t.Run("useradd, group exists", func(t *testing.T) {
		onlyTool(t, "useradd")
		root := newRoot(t, "sifd:x:990:\n")
		ensure(t, root, true)
		check(t, root)
		passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
		if m := wantUser.FindStringSubmatch(string(passwd)); m[2] != "990" {
			t.Errorf("sifd's gid is %s, want the existing group's 990", m[2])
		}
	})
	t.Run("no tool", func(t *testing.T) {
		onlyTool(t, "")
		_, err := EnsureSystemUser(newRoot(t, ""))
		if err == nil || !strings.Contains(err.Error(), "neither systemd-sysusers nor useradd") {
			t.Errorf("err = %v, want one naming the missing tools", err)
		}
	})
	t.Run("tool fails", func(t *testing.T) {
		onlyTool(t, "useradd")
		root := newRoot(t, "")
		// A shadow file useradd cannot open.
		shadow := filepath.Join(root, "etc/shadow")
		if err := os.Remove(shadow); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(shadow, 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := EnsureSystemUser(root)
		if err == nil || !strings.Contains(err.Error(), `creating the system user "sifd"`) || !strings.Contains(err.Error(), "useradd") {
			t.Errorf("err = %v, want one naming the user and the failing command", err)
		}
	})
}
