package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sif-dev/sif/daemon"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/server"
)

// `sifd run --run-as USER` is how sifd keeps the system service's rights
// where the service manager cannot set them (a System V init script,
// OpenRC): started as root, it prepares the index's and the socket's
// directories for USER, then becomes USER for good, keeping one
// capability, CAP_DAC_READ_SEARCH (read every file and list every
// directory, change nothing), and runs itself again in the same process
// (the init script's PID stays right). The systemd unit asks the same of
// systemd (User=, AmbientCapabilities=, CapabilityBoundingSet=,
// NoNewPrivileges=); this file does it by hand:
//
//   - on one OS thread, locked, the capability bounding set loses every
//     capability but CAP_DAC_READ_SEARCH, and "keep capabilities" is set
//     so that the thread keeps its permitted set across the change of
//     user;
//   - the groups, group and user change (Go changes them on every thread);
//   - that thread's permitted, effective and inheritable sets become
//     CAP_DAC_READ_SEARCH alone, raised as an ambient capability, which a
//     program run by a user other than root keeps across exec;
//   - no_new_privs is set, and the thread runs sifd again (execve): the new
//     program has the credentials of the thread that ran it, and nothing
//     else of the old process.
//
// The daemon that then starts logs the rights it runs with, read back from
// /proc/self/status.
const (
	runAsFlag = "run-as"
	// droppedEnv marks the run of sifd that a root sifd became: it says
	// as which user it was started, for the log.
	droppedEnv = "SIFD_DROPPED_ROOT"
)

// keptCap is the one capability a sifd that dropped root keeps.
const keptCap = unix.CAP_DAC_READ_SEARCH

// runAsUser is the user --run-as names, with its ids and groups.
type runAsUser struct {
	name     string
	uid, gid int
	groups   []int
}

func lookupRunAs(name string) (runAsUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, numErr := strconv.Atoi(name); numErr == nil {
			u, err = user.LookupId(name)
		}
	}
	if err != nil {
		return runAsUser{}, fmt.Errorf("--run-as %s: no such user", name)
	}
	r := runAsUser{name: u.Username}
	r.uid, err = strconv.Atoi(u.Uid)
	if err == nil {
		r.gid, err = strconv.Atoi(u.Gid)
	}
	if err != nil {
		return runAsUser{}, fmt.Errorf("--run-as %s: ids %s:%s: %w", name, u.Uid, u.Gid, err)
	}
	ids, err := u.GroupIds()
	if err != nil {
		ids = []string{u.Gid}
	}
	for _, id := range ids {
		if g, err := strconv.Atoi(id); err == nil {
			r.groups = append(r.groups, g)
		}
	}
	return r, nil
}

// runAsPending reports whether args are those of a `sifd run --run-as`
// started as root, which becomes the user before anything else: such a
// run is not supervised until it has.
func runAsPending(args []string) bool {
	if os.Geteuid() != 0 {
		return false
	}
	for _, a := range args {
		if a == "--"+runAsFlag || strings.HasPrefix(a, "--"+runAsFlag+"=") {
			return true
		}
	}
	return false
}

// dropRoot makes the process the user u keeping only CAP_DAC_READ_SEARCH,
// and runs sifd again with args and the environment, marked. It returns
// only on failure.
func dropRoot(u runAsUser, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--run-as %s: finding sifd's own path: %w", u.name, err)
	}
	env := append(os.Environ(), droppedEnv+"=root")
	errc := make(chan error, 1)
	go func() {
		// The thread stays locked: if the exec fails, it ends with this
		// goroutine rather than go back to the scheduler with odd rights.
		runtime.LockOSThread()
		errc <- dropAndExec(u, exe, append([]string{exe}, args...), env)
	}()
	return <-errc
}

func dropAndExec(u runAsUser, exe string, argv, env []string) error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if c == keptCap {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("--run-as %s: dropping capability %d from the bounding set: %w", u.name, c, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("--run-as %s: keeping capabilities across the change of user: %w", u.name, err)
	}
	if err := syscall.Setgroups(u.groups); err != nil {
		return fmt.Errorf("--run-as %s: setting the groups %v: %w", u.name, u.groups, err)
	}
	if err := syscall.Setresgid(u.gid, u.gid, u.gid); err != nil {
		return fmt.Errorf("--run-as %s: setting the group %d: %w", u.name, u.gid, err)
	}
	if err := syscall.Setresuid(u.uid, u.uid, u.uid); err != nil {
		return fmt.Errorf("--run-as %s: setting the user %d: %w", u.name, u.uid, err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	data[0].Effective = 1 << keptCap
	data[0].Permitted = 1 << keptCap
	data[0].Inheritable = 1 << keptCap
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("--run-as %s: keeping only CAP_DAC_READ_SEARCH: %w", u.name, err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, keptCap, 0, 0); err != nil {
		return fmt.Errorf("--run-as %s: raising CAP_DAC_READ_SEARCH as an ambient capability: %w", u.name, err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("--run-as %s: setting no_new_privs: %w", u.name, err)
	}
	err = syscall.Exec(exe, argv, env)
	return fmt.Errorf("--run-as %s: running %s again as the user: %w", u.name, exe, err)
}

// lastCap is the highest capability number the kernel knows.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("--run-as: reading the kernel's last capability: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("--run-as: /proc/sys/kernel/cap_last_cap: %q is not a number", b)
	}
	return n, nil
}

// logRights logs, in a sifd that dropped root, the user and capabilities
// it runs with, as the kernel sees them.
func logRights(log *slog.Logger, u runAsUser) {
	if os.Getenv(droppedEnv) == "" {
		return
	}
	os.Unsetenv(droppedEnv)
	st, err := procStatus("/proc/self/status")
	if err != nil {
		log.Warn("started as root and now runs as another user, but its rights cannot be read back", "user", u.name, "err", err)
		return
	}
	args := []any{"user", u.name, "uid", os.Getuid(), "gid", os.Getgid(),
		"effective", st["CapEff"], "bounding", st["CapBnd"], "ambient", st["CapAmb"], "no_new_privs", st["NoNewPrivs"]}
	if eff, err := strconv.ParseUint(st["CapEff"], 16, 64); err != nil || eff != 1<<keptCap {
		log.Warn("started as root and runs as another user, but not with CAP_DAC_READ_SEARCH alone: files only root may read are not indexed", args...)
		return
	}
	log.Info("started as root; runs as another user, with only CAP_DAC_READ_SEARCH (read every file, change nothing)", args...)
}

// procStatus reads a /proc/PID/status file into its fields.
func procStatus(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, sc.Err()
}

// runAs is run's --run-as NAME with the configuration cfg, read from the
// file configPath ("" for none), args the command line and changed
// whether a flag was given on it: started as root, sifd prepares cfg's
// directories for the user and becomes it (runAs returns only on
// failure); started as that user (the run root became, or one a service
// manager started), it logs its rights; as anyone else it fails.
func runAs(name string, cfg daemon.Config, configPath string, args []string, changed func(flag string) bool, log *slog.Logger) error {
	if name == "" {
		return nil
	}
	u, err := lookupRunAs(name)
	if err != nil {
		return err
	}
	switch os.Geteuid() {
	case u.uid:
		logRights(log, u)
		return nil
	case 0:
	default:
		return fmt.Errorf("--run-as %s: only root can become another user, and sifd runs as uid %d", name, os.Geteuid())
	}
	db, sock, perm := cfg.Places()
	if err := prepareFor(u, db, sock, perm); err != nil {
		return err
	}
	// The user's defaults are not root's: name the places root resolved.
	args = args[:len(args):len(args)]
	for _, f := range []struct{ name, value string }{{"config", configPath}, {"db", db}, {"socket", sock}} {
		if !changed(f.name) {
			args = append(args, "--"+f.name+"="+f.value)
		}
	}
	log.Info("started as root: becoming another user, keeping only CAP_DAC_READ_SEARCH", "user", u.name, "uid", u.uid)
	return dropRoot(u, args)
}

// prepareFor makes the directories the daemon writes, for the user u: the
// index's directory, its parent (where an index of an older format is
// moved aside) and its state directory, and the socket's directory, mode
// server.DirMode(perm). A directory that exists must already be u's (or,
// for the socket, writable by every user and sticky, as /tmp): root does
// not take over what someone else owns.
//
// The system service's own directories (/var/lib/sifd and /run/sifd) are
// given to u whoever has them, contents and all, as systemd does with a
// unit's StateDirectory= and RuntimeDirectory=: an index an earlier run as
// root left there is u's from now on.
func prepareFor(u runAsUser, db, sock string, perm os.FileMode) error {
	dirs := []struct {
		path string
		mode os.FileMode
	}{{filepath.Dir(db), 0o700}, {db, 0o700}, {daemon.StateDir(db), 0o700}, {filepath.Dir(sock), server.DirMode(perm)}}
	for i, d := range dirs {
		var err error
		if systemDir(d.path) {
			err = takeOver(u, d.path, d.mode)
		} else {
			err = mkdirOwned(u, d.path, d.mode, i > 0)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// systemDir reports whether d is one of the system service's own
// directories.
func systemDir(d string) bool {
	switch filepath.Clean(d) {
	case daemon.SystemStateDir, daemon.SystemDB, daemon.StateDir(daemon.SystemDB), filepath.Dir(ipc.SystemSocket):
		return true
	}
	return false
}

// takeOver makes the directory d if it is missing and gives it and all it
// holds to u, with mode on d itself.
func takeOver(u runAsUser, d string, mode os.FileMode) error {
	if err := mkdirOwned(u, d, mode, false); err != nil {
		return err
	}
	err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if sys, ok := info.Sys().(*syscall.Stat_t); ok && (int(sys.Uid) != u.uid || int(sys.Gid) != u.gid) {
			return os.Lchown(p, u.uid, u.gid)
		}
		return nil
	})
	if err == nil {
		err = os.Chmod(d, mode)
	}
	if err != nil {
		return fmt.Errorf("--run-as %s: giving %s to the user: %w", u.name, d, err)
	}
	return nil
}

// mkdirOwned makes the directory d and its missing parents with mode,
// owned by u. If d exists and must be u's (mine), it checks that it is,
// or that every user may create files in it with the sticky bit set.
func mkdirOwned(u runAsUser, d string, mode os.FileMode, mine bool) error {
	st, err := os.Stat(d)
	if err == nil {
		sys, ok := st.Sys().(*syscall.Stat_t)
		switch {
		case !mine || !ok || int(sys.Uid) == u.uid:
			return nil
		case st.Mode()&os.ModeSticky != 0 && st.Mode().Perm()&0o002 != 0:
			return nil
		}
		return fmt.Errorf("--run-as %s: %s belongs to uid %d, so sifd could not write it once it runs as %s: give it to the user (chown -R %s: %s) or choose another place",
			u.name, d, sys.Uid, u.name, u.name, d)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--run-as %s: %w", u.name, err)
	}
	if parent := filepath.Dir(d); parent != d {
		if err := mkdirOwned(u, parent, mode, false); err != nil {
			return err
		}
	}
	if err := os.Mkdir(d, mode); err != nil {
		return fmt.Errorf("--run-as %s: %w", u.name, err)
	}
	if err := os.Chmod(d, mode); err != nil { // the umask took bits off
		return fmt.Errorf("--run-as %s: %w", u.name, err)
	}
	if err := os.Chown(d, u.uid, u.gid); err != nil {
		return fmt.Errorf("--run-as %s: giving %s to the user: %w", u.name, d, err)
	}
	return nil
}
