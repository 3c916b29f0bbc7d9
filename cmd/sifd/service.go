package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kardianos/service"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sif-dev/sif/daemon"
	"github.com/sif-dev/sif/packaging/systemd"
)

// exitNotRunning is `sifd status`'s exit status for an installed service
// that is not running, or none installed (as systemctl is-active).
const exitNotRunning = 3

// newServiceCmds returns install, uninstall, start, stop, restart and status.
func newServiceCmds(stdout io.Writer) []*cobra.Command {
	cmds := []*cobra.Command{newInstallCmd(stdout)}
	for _, c := range []struct{ name, short string }{
		{"uninstall", "Stop and remove the installed service"},
		{"start", "Start the installed service"},
		{"stop", "Stop the installed service"},
		{"restart", "Restart the installed service"},
		{"status", "Say whether the installed service runs; exit 3 if not"},
	} {
		cmds = append(cmds, newControlCmd(stdout, c.name, c.short))
	}
	return cmds
}

func newInstallCmd(stdout io.Writer) *cobra.Command {
	var (
		f    runFlags
		user bool
	)
	cmd := &cobra.Command{
		Use:   "install [--user] --root DIR [--root DIR...] [run flags]",
		Short: "Install sifd as a service that runs `sifd run` with these flags",
		Long: `install registers sifd with the service manager and says which it used: a
systemd unit on Linux (/etc/systemd/system/sifd.service, or
~/.config/systemd/user/sifd.service with --user); where systemd is not the
init system, a System V init script (/etc/init.d/sifd) or an OpenRC one; a
Windows service on Windows. The service runs "sifd run" with the flags given
here, saved with absolute paths; to change them, uninstall and install
again. It is enabled, not started: run "sifd start".

A system service keeps its index in ` + daemon.SystemDB + ` and listens on
/run/sifd/sifd.sock (on Windows, in %ProgramData%\sifd). On Linux it runs as
the system user "sifd", which install creates when it is missing (with
systemd-sysusers, else useradd): that user may read every file
(CAP_DAC_READ_SEARCH) and write only the index and socket directories. An
init script starts sifd as root: the service then runs "sifd run --run-as
sifd", which makes those directories and becomes that user, keeping only
that capability, before it does anything else. A user service (--user,
systemd only) keeps its index in $XDG_STATE_HOME/sifd/index and listens on
$XDG_RUNTIME_DIR/sifd.sock; it runs while the user is logged in, or always
after "loginctl enable-linger". --db and --socket override.

The systemd unit runs at low CPU and I/O priority under a 1 GiB memory
ceiling, and a system unit sees the file system read-only except for its
index and socket directories (see packaging/systemd in the source).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := install(cmd.Flags(), &f, user, stdout); err != nil {
				return &statusError{exitError, err}
			}
			return nil
		},
	}
	addRunFlags(cmd.Flags(), &f)
	cmd.Flags().BoolVar(&user, "user", false, "install a per-user service (systemd --user) instead of a system service")
	return cmd
}

func install(fl *pflag.FlagSet, f *runFlags, user bool, stdout io.Writer) error {
	if err := checkUser(user); err != nil {
		return err
	}
	if len(f.roots) == 0 {
		return errors.New("install: no roots: name at least one directory with --root")
	}
	// Fail now, not at the service's first start, on bad log flags.
	if _, err := newLogger(io.Discard, f.logLevel, f.logFormat); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := checkSchemeFlags(fl, f.params.Scheme); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	args, db, sock, err := serviceArgs(fl, f, user)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("install: finding sifd's own path: %w", err)
	}
	if strings.Contains(exe, "go-build") {
		return fmt.Errorf("install: %s is a temporary binary from go run: build sifd, put it where it will stay, and run its install", exe)
	}
	if runAsSelf(user) && !fl.Changed(runAsFlag) {
		// The init script starts sifd as root: sifd itself becomes the
		// system user, with the unit's rights (runas_linux.go).
		args = append([]string{args[0], "--" + runAsFlag, systemd.SystemUser}, args[1:]...)
	}
	var unit string
	if runtime.GOOS == "linux" {
		if !user {
			created, err := systemd.EnsureSystemUser("")
			if err != nil {
				return fmt.Errorf("install: the service runs as the system user %q: %w", systemd.SystemUser, err)
			}
			if created {
				fmt.Fprintf(stdout, "created the system user %q\n", systemd.SystemUser)
			}
		}
		// The sandbox lets the service write only these; create them now
		// (systemd creates /var/lib/sifd and /run/sifd itself).
		writable := []string{db, daemon.StateDir(db), filepath.Dir(sock)}
		for _, d := range writable {
			if !user && (d == daemon.SystemDB || d == daemon.StateDir(daemon.SystemDB) || d == filepath.Dir(daemonSystemSocket())) {
				continue
			}
			if err := mkdirFor(d, user, stdout); err != nil {
				return fmt.Errorf("install: %w", err)
			}
		}
		unit, err = systemd.Render(systemd.Unit{User: user, Exec: exe, Args: args, Writable: writable})
		if err != nil {
			return fmt.Errorf("install: %w", err)
		}
	}
	s, err := newService(user, exe, args, unit)
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("install (%s): %w", service.Platform(), err)
	}
	u := userFlag(user)
	fmt.Fprintf(stdout, "installed the %s service %q as %s: %s %s\n",
		kind(user), serviceName, managerFile(user), exe, strings.Join(args, " "))
	if runAsSelf(user) {
		fmt.Fprintf(stdout, "%s starts it as root; sifd then runs as the %q user, keeping only the right to read every file (CAP_DAC_READ_SEARCH)\n",
			managerName(), systemd.SystemUser)
	}
	fmt.Fprintf(stdout, "start it with: sifd start%s\n", u)
	if user && runtime.GOOS == "linux" {
		fmt.Fprintln(stdout, "to keep it running when you are logged out: loginctl enable-linger")
	}
	return nil
}

// mkdirFor creates the directory d that the service writes. A system
// service's new directories are given to the system user; an existing one
// is left as it is, with a note if it belongs to someone else.
func mkdirFor(d string, user bool, stdout io.Writer) error {
	st, err := os.Stat(d)
	if err == nil {
		if !user && !ownedBySystemUser(st) {
			fmt.Fprintf(stdout, "note: %s exists and is not the %q user's: the service must be able to write it\n", d, systemd.SystemUser)
		}
		return nil
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	if user {
		return nil
	}
	return chownToSystemUser(d)
}

// serviceArgs returns the arguments of the installed `sifd run`: the roots,
// the index and the socket as absolute paths, then every other run flag
// given on the command line, and last --db DB --socket SOCKET. It also
// returns DB and SOCKET.
func serviceArgs(fl *pflag.FlagSet, f *runFlags, user bool) (args []string, db, sock string, err error) {
	args = []string{"run"}
	for _, r := range f.roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, "", "", fmt.Errorf("install: --root %s: %w", r, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, "", "", fmt.Errorf("install: --root %s: %w", r, err)
		}
		if !st.IsDir() {
			return nil, "", "", fmt.Errorf("install: --root %s: not a directory", r)
		}
		args = append(args, "--root", abs)
	}
	var cfgErr error
	fl.Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "root", "db", "socket", "user":
			return
		case "config":
			// The service starts in another directory: save the file's
			// absolute path.
			if v := fl.Value.String(); v != "" {
				abs, err := filepath.Abs(v)
				if err != nil {
					cfgErr = fmt.Errorf("install: --config %s: %w", v, err)
					return
				}
				args = append(args, "--config="+abs)
				return
			}
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	})
	if cfgErr != nil {
		return nil, "", "", cfgErr
	}
	db, sock = servicePaths(user)
	for _, p := range []struct {
		flag string
		val  string
		def  *string
	}{{"db", f.db, &db}, {"socket", f.socket, &sock}} {
		if p.val == "" {
			continue
		}
		abs, err := filepath.Abs(p.val)
		if err != nil {
			return nil, "", "", fmt.Errorf("install: --%s %s: %w", p.flag, p.val, err)
		}
		*p.def = abs
	}
	return append(args, "--db", db, "--socket", sock), db, sock, nil
}

func newControlCmd(stdout io.Writer, action, short string) *cobra.Command {
	var user bool
	cmd := &cobra.Command{
		Use:   action + " [--user]",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkUser(user); err != nil {
				if action == "status" {
					// No per-user service can be installed here.
					fmt.Fprintf(stdout, "not installed (%v)\n", err)
					return &statusError{code: exitNotRunning}
				}
				return &statusError{exitError, err}
			}
			s, err := newService(user, "", nil, "")
			if err != nil {
				return &statusError{exitError, fmt.Errorf("%s: %w", action, err)}
			}
			if action == "status" {
				return serviceStatus(s, user, stdout)
			}
			if action == "uninstall" {
				_ = s.Stop() // systemd's disable leaves it running; it may already be stopped
			}
			if err := service.Control(s, action); err != nil {
				return &statusError{exitError, fmt.Errorf("%s the %s service (%s): %w", action, kind(user), service.Platform(), err)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&user, "user", false, "the per-user service (systemd --user) instead of the system service")
	return cmd
}

// serviceStatus prints whether the service runs. It exits 0 when it
// runs, else exitNotRunning: not installed, stopped, or in a state the
// service manager cannot tell (as systemctl is-active).
func serviceStatus(s service.Service, user bool, stdout io.Writer) error {
	st, err := s.Status()
	if err != nil && !errors.Is(err, service.ErrNotInstalled) && !serviceInstalled(user) {
		// Some managers (System V's "service NAME status") fail on a
		// service they do not know rather than saying so.
		err = service.ErrNotInstalled
	}
	var exit *exec.ExitError
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		if unit := packagedUnit(); unit != "" && !user && service.Platform() != "linux-systemd" {
			fmt.Fprintf(stdout, "not installed for %s: the package's systemd unit (%s) is there, but systemd is not this host's init system; "+
				"use the package's /etc/init.d/%s if it has one, or install one with: sifd install --root DIR\n", managerName(), unit, serviceName)
			return &statusError{code: exitNotRunning}
		}
		fmt.Fprintf(stdout, "not installed (install it with: sifd install%s --root DIR)\n", userFlag(user))
		return &statusError{code: exitNotRunning}
	case errors.As(err, &exit) && service.Platform() != "linux-systemd":
		// An init script's "status" of a stopped service exits non-zero
		// (LSB: 3), which kardianos/service reports as an error.
		fmt.Fprintf(stdout, "stopped (start it with: sifd start%s)\n", userFlag(user))
		return &statusError{code: exitNotRunning}
	case err != nil:
		fmt.Fprintf(stdout, "not running, as far as %s tells: %v\n", service.Platform(), err)
		return &statusError{code: exitNotRunning}
	case st == service.StatusRunning:
		fmt.Fprintln(stdout, "running")
		return nil
	case st == service.StatusStopped:
		fmt.Fprintf(stdout, "stopped (start it with: sifd start%s)\n", userFlag(user))
		return &statusError{code: exitNotRunning}
	default:
		fmt.Fprintln(stdout, "unknown")
		return &statusError{code: exitNotRunning}
	}
}

// checkUser refuses --user where there is no per-user service manager,
// saying what to do instead.
func checkUser(user bool) error {
	switch {
	case !user:
		return nil
	case runtime.GOOS != "linux":
		return fmt.Errorf("--user: per-user services are systemd's; on %s install a system service, or run 'sifd run --root DIR' under your own supervisor", runtime.GOOS)
	case service.Platform() != "linux-systemd":
		return fmt.Errorf("--user: per-user services need systemd's user manager, and this system's service manager is %s: "+
			"run 'sifd run --root DIR' under your own supervisor instead (a login script, runit, supervisord, or a crontab @reboot line), "+
			"or install a system service as root", service.Platform())
	}
	return nil
}

// serviceInstalled reports whether the file install writes for the
// service manager in use exists. Where sif does not know that file, it
// reports true: the manager's own answer stands.
func serviceInstalled(user bool) bool {
	file := serviceFile(user)
	if file == "" || !user && service.Platform() == "linux-systemd" && packagedUnit() != "" {
		return true // sif's package installed the unit
	}
	_, err := os.Stat(file)
	return !errors.Is(err, fs.ErrNotExist)
}

// serviceFile is the file install writes for the service manager in use,
// or "" where sif does not know it.
func serviceFile(user bool) string {
	switch service.Platform() {
	case "linux-systemd":
		if user {
			home, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			return filepath.Join(home, ".config", "systemd", "user", serviceName+".service")
		}
		return "/etc/systemd/system/" + serviceName + ".service"
	case "unix-systemv", "linux-openrc":
		return "/etc/init.d/" + serviceName
	case "linux-upstart":
		return "/etc/init/" + serviceName + ".conf"
	}
	return ""
}

// managerName names the service manager in use in words.
func managerName() string {
	switch p := service.Platform(); p {
	case "linux-systemd":
		return "systemd"
	case "unix-systemv":
		return "System V init"
	case "linux-openrc":
		return "OpenRC"
	case "linux-upstart":
		return "Upstart"
	case "windows-service":
		return "the Windows service manager"
	default:
		return p
	}
}

// managerFile says what install writes: "a systemd unit
// (/etc/systemd/system/sifd.service)", "a System V init script
// (/etc/init.d/sifd)", ...
func managerFile(user bool) string {
	what := "a service of " + managerName()
	switch service.Platform() {
	case "linux-systemd":
		what = "a systemd unit"
	case "unix-systemv":
		what = "a System V init script"
	case "linux-openrc":
		what = "an OpenRC init script"
	case "linux-upstart":
		what = "an Upstart job"
	}
	if f := serviceFile(user); f != "" {
		what += " (" + f + ")"
	}
	return what
}

// runAsSelf reports whether the service install writes is one whose
// manager cannot run sifd as its user with its one capability, so that
// sifd does it itself with --run-as: a system service on Linux under any
// manager but systemd.
func runAsSelf(user bool) bool {
	return runtime.GOOS == "linux" && !user && service.Platform() != "linux-systemd"
}

// packagedUnit is the systemd unit the sif package installs, if it is
// there.
func packagedUnit() string {
	for _, f := range []string{"/lib/systemd/system/" + serviceName + ".service", "/usr/lib/systemd/system/" + serviceName + ".service"} {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return ""
}

func daemonSystemSocket() string {
	_, sock := servicePaths(false)
	return sock
}

func kind(user bool) string {
	if user {
		return "user"
	}
	return "system"
}

func userFlag(user bool) string {
	if user {
		return " --user"
	}
	return ""
}
