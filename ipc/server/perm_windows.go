package server

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// setSocketPerm protects the socket at path with an ACL, since Windows
// ignores permission bits: connecting to an AF_UNIX socket needs write
// access to its file. A private socket (perm gives nothing to group or
// others) allows only SYSTEM, the Administrators and the daemon's own
// user; a shared one adds every authenticated user, who are then refused
// by the server, which cannot learn a caller's identity here.
func setSocketPerm(path string, perm os.FileMode) error {
	sddl := "D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;OW)"
	if perm&0o077 != 0 {
		sddl += "(A;;FRFW;;;AU)"
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return fmt.Errorf("socket ACL: %w", err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("socket ACL: %w", err)
	}
	err = windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	if err != nil {
		return fmt.Errorf("socket ACL: %w", err)
	}
	return nil
}
