//go:build unix

package main

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/sif-dev/sif/packaging/systemd"
)

// chownToSystemUser gives the directory d to the system user and group.
func chownToSystemUser(d string) error {
	uid, gid, err := systemUserIDs()
	if err != nil {
		return err
	}
	if err := os.Chown(d, uid, gid); err != nil {
		return fmt.Errorf("giving %s to the %q user: %w", d, systemd.SystemUser, err)
	}
	return nil
}

// ownedBySystemUser reports whether st is the system user's.
func ownedBySystemUser(st os.FileInfo) bool {
	uid, _, err := systemUserIDs()
	sys, ok := st.Sys().(*syscall.Stat_t)
	return err == nil && ok && int(sys.Uid) == uid
}

func systemUserIDs() (uid, gid int, err error) {
	u, err := user.Lookup(systemd.SystemUser)
	if err != nil {
		return 0, 0, fmt.Errorf("looking up the %q user: %w", systemd.SystemUser, err)
	}
	uid, err = strconv.Atoi(u.Uid)
	if err == nil {
		gid, err = strconv.Atoi(u.Gid)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("the %q user's ids %s:%s: %w", systemd.SystemUser, u.Uid, u.Gid, err)
	}
	return uid, gid, nil
}
