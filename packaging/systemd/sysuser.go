package systemd

// SystemUser names the user and group the system service runs as. It owns
// the index (/var/lib/sifd) and the socket's directory (/run/sifd), and
// nothing else: the unit gives it CAP_DAC_READ_SEARCH to read the trees it
// indexes.
const SystemUser = "sifd"

// SysusersConf declares SystemUser for systemd-sysusers (sysusers.d(5)): a
// system user with a group of the same name, home /var/lib/sifd (the
// index, which systemd creates for the unit; the user is never given a
// home of its own) and no login shell. `sifd install` passes this line to
// systemd-sysusers, and the Debian package ships it as
// /usr/lib/sysusers.d/sifd.conf.
const SysusersConf = `u ` + SystemUser + ` - "sif daemon" ` + StateDir + ` /usr/sbin/nologin` + "\n"
