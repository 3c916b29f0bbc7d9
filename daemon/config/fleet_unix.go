//go:build unix

package config

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivate refuses a URL file that users other than its owner may read
// or write, or whose owner is neither root nor the user sifd runs as (that
// user could point sifd at a database of their own).
func checkPrivate(path string, st os.FileInfo) error {
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s: mode %04o lets other users read or change the fleet database's password; chmod 600 it", path, perm)
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		if uid := int(s.Uid); uid != 0 && uid != os.Geteuid() {
			return fmt.Errorf("%s: owned by uid %d, neither root nor the user sifd runs as (uid %d), who could change the fleet database it names; chown it", path, uid, os.Geteuid())
		}
	}
	return nil
}
