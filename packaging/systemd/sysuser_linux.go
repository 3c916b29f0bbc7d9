package systemd

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnsureSystemUser creates SystemUser and its group in the user database of
// the system whose root directory is root ("" or "/" for this machine; a
// directory for an image being built), unless the user exists already. It
// reports whether it created the user.
//
// It runs systemd-sysusers with SysusersConf: the same declaration the
// Debian package ships, idempotent, and present wherever systemd is. Where
// systemd-sysusers is missing it runs useradd (shadow's, on every Debian and
// Fedora system) with the same name, home and shell. Either needs root.
// Users from NSS sources other than the passwd file (LDAP) are not seen; a
// sifd user there makes the tools fail with their own message, returned.
func EnsureSystemUser(root string) (created bool, err error) {
	if root == "" {
		root = "/"
	}
	if ok, err := hasEntry(filepath.Join(root, "etc/passwd"), SystemUser); err != nil || ok {
		return false, err
	}
	var cmd *exec.Cmd
	if sysusers, err := exec.LookPath("systemd-sysusers"); err == nil {
		cmd = exec.Command(sysusers, "--root="+root, "--inline", strings.TrimSpace(SysusersConf))
	} else if useradd, err := exec.LookPath("useradd"); err == nil {
		args := []string{"--system", "--no-create-home", "--home-dir", StateDir, "--shell", "/usr/sbin/nologin", "--comment", "sif daemon"}
		if hasGroup, err := hasEntry(filepath.Join(root, "etc/group"), SystemUser); err != nil {
			return false, err
		} else if hasGroup {
			args = append(args, "--gid", SystemUser)
		} else {
			args = append(args, "--user-group")
		}
		if filepath.Clean(root) != "/" {
			args = append(args, "--prefix", root)
		}
		cmd = exec.Command(useradd, append(args, SystemUser)...)
	} else {
		return false, fmt.Errorf("systemd.EnsureSystemUser: neither systemd-sysusers nor useradd is installed: create the system user %q (group %q, home %s, no login shell) yourself", SystemUser, SystemUser, StateDir)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return false, fmt.Errorf("systemd.EnsureSystemUser: creating the system user %q: %s: %w: %s", SystemUser, strings.Join(cmd.Args, " "), err, strings.TrimSpace(string(out)))
	}
	ok, err := hasEntry(filepath.Join(root, "etc/passwd"), SystemUser)
	if err == nil && !ok {
		err = fmt.Errorf("systemd.EnsureSystemUser: %s ran but %s has no user %q", filepath.Base(cmd.Path), filepath.Join(root, "etc/passwd"), SystemUser)
	}
	return err == nil, err
}

// hasEntry reports whether the passwd(5) or group(5) file holds name. A
// missing file holds no one.
func hasEntry(file, name string) (bool, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("systemd.EnsureSystemUser: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n, _, ok := strings.Cut(sc.Text(), ":"); ok && n == name {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("systemd.EnsureSystemUser: reading %s: %w", file, err)
	}
	return false, nil
}
