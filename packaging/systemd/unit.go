// Package systemd describes how sifd runs as a systemd service: the unit
// that "sifd install" writes and the Debian package ships (Render, from one
// template), how long a stop may take (StopTimeout), and the system user the
// system unit runs as (SystemUser, SysusersConf, EnsureSystemUser).
//
// The unit files beside this package's sources, sifd.service and
// sifd-user.service, are Render's output for an example install; the tests
// compare them byte for byte and check every rendering with
// systemd-analyze verify. After changing the template,
// go test ./packaging/systemd -run Packaging -update rewrites them.
//
// It installs nothing and runs nothing: cmd/sifd passes the unit to its
// service manager library, and packaging/deb packs it.
package systemd

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/template"
)

// Unit describes the systemd unit that `sifd install` writes. Render
// renders it; nothing is installed.
type Unit struct {
	// User selects a per-user unit (systemd --user, WantedBy=default.target)
	// instead of a system unit (WantedBy=multi-user.target).
	User bool
	// Exec is the absolute path of the sifd binary.
	Exec string
	// Args follow Exec on the ExecStart line: "run", "--root", DIR, ...
	Args []string
	// Writable are the directories a system unit may write besides
	// /var/lib/sifd and /run/sifd (ReadWritePaths=): the index and the
	// socket's directory. A user unit does not sandbox the file system, so
	// it ignores them.
	Writable []string
	// Packaged marks the system unit a distribution package ships: its
	// header points at the configuration file and `systemctl edit`
	// instead of `sifd install`.
	Packaged bool
}

// The directories systemd creates for the system unit and gives to
// SystemUser: StateDirectory=sifd (the index; daemon.SystemStateDir) and
// RuntimeDirectory=sifd (the socket's; the directory of ipc.SystemSocket).
const (
	StateDir   = "/var/lib/sifd"
	RuntimeDir = "/run/sifd"
)

// Restarting a daemon that died (Restart=on-failure: a crash, a fatal
// error of Pebble, a kill by the OOM killer; not a stop asked for): it is
// started again RestartSec seconds later, so that the service is back
// within seconds, yet a daemon that dies at once does not spin. After
// StartLimitBurst starts within StartLimitInterval seconds systemd gives
// up: a daemon dying that often needs someone to look, and the limit spans
// every restart of the burst (StartLimitBurst × RestartSec is well within
// it), so a crash loop is caught whatever its pace.
const (
	RestartSec         = 2
	StartLimitBurst    = 5
	StartLimitInterval = 300
)

// StopTimeout bounds how long a service stop waits for the daemon to finish
// the requests in flight and close the index. The unit's TimeoutStopSec is
// a little longer, so systemd does not kill a daemon that is still closing.
const StopTimeout = 30

// unitTemplate is the systemd unit sifd installs, passed to kardianos/service
// as its SystemdScript once rendered. It is a text/template executed by
// Render, with every value already quoted for systemd; the output
// holds no "{{", so kardianos's own template engine copies it verbatim.
//
// The service is an indexer that should never compete with the machine's
// real work: low CPU and I/O weight, idle I/O class, a memory ceiling. The
// system unit runs as the SystemUser (sifd), which owns nothing but its
// index and socket directories, with one capability, CAP_DAC_READ_SEARCH,
// to read every tree it indexes whatever its permissions; it sees the
// system and home directories read-only, and may write only those two
// directories, which systemd creates and gives to the user
// (StateDirectory=, RuntimeDirectory=). The socket's directory is open to
// every user (0755), so that the daemon can let other users connect. A
// user manager
// rejects or cannot honour the mount-namespace and capability settings
// without unprivileged user namespaces, so the user unit keeps only the
// resource limits and the settings that need no namespace.
//
// Type=notify: sifd tells systemd when its socket serves queries
// (daemon.Notifier, over sd_notify), so `systemctl start` returns, and units ordered after
// sifd start, only then; its status line shows the first scan's progress.
const unitTemplate = `{{if .Packaged -}}
# sifd: the sif daemon, installed by the sif package. Configure it in
# /etc/sifd/config.toml ("systemctl reload sifd" applies roots, exclusions
# and size limits); change the unit itself with "systemctl edit sifd".
{{- else -}}
# sifd: the sif daemon. Written by "sifd install{{if .User}} --user{{end}}"; remove it with
# "sifd uninstall{{if .User}} --user{{end}}". Generated: edit the flags by reinstalling.
{{- end}}
[Unit]
Description=sif: index of similar files
Documentation=https://github.com/sif-dev/sif
ConditionFileIsExecutable={{.Exec}}
{{- if not .User}}
After=local-fs.target
{{- end}}
StartLimitIntervalSec={{.StartLimitInterval}}
StartLimitBurst={{.StartLimitBurst}}

[Service]
Type=notify
NotifyAccess=main
ExecStart={{.ExecStart}}
Restart=on-failure
RestartSec={{.RestartSec}}
KillSignal=SIGTERM
ExecReload=/bin/kill -HUP $MAINPID
TimeoutStopSec={{.TimeoutStop}}
UMask=0077

# An indexer yields to everything else.
Nice=10
CPUWeight=20
IOSchedulingClass=idle
IOWeight=20
MemoryHigh=768M
MemoryMax=1G
TasksMax=256
LimitNOFILE=65536
{{- if not .User}}

# Who it runs as: a system user that owns only the two directories below.
User=sifd
Group=sifd

# Where it writes: /var/lib/sifd (index) and /run/sifd (socket; the
# directory is open to every user, the socket's mode is sifd's to set).
StateDirectory=sifd
StateDirectoryMode=0700
RuntimeDirectory=sifd
RuntimeDirectoryMode=0755
ReadWritePaths={{.ReadWrite}}

# Read everything, change nothing else.
CapabilityBoundingSet=CAP_DAC_READ_SEARCH
AmbientCapabilities=CAP_DAC_READ_SEARCH
ProtectSystem=strict
ProtectHome=read-only
PrivateTmp=yes
PrivateDevices=yes
PrivateNetwork=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
RestrictNamespaces=yes
{{- end}}
NoNewPrivileges=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
RestrictAddressFamilies=AF_UNIX
SystemCallArchitectures=native

[Install]
WantedBy={{if .User}}default.target{{else}}multi-user.target{{end}}
`

var unitTmpl = template.Must(template.New("sifd.service").Parse(unitTemplate))

// Render returns the text of the systemd unit for u. It installs nothing;
// `sifd install` passes the text to kardianos/service, packaging/deb packs
// it, and the tests check it with systemd-analyze verify.
func Render(u Unit) (string, error) {
	if !filepath.IsAbs(u.Exec) {
		return "", fmt.Errorf("systemd.Render: executable %q is not an absolute path", u.Exec)
	}
	words := []string{systemdQuote(u.Exec)}
	for _, a := range u.Args {
		words = append(words, systemdQuote(a))
	}
	rw := []string{StateDir, RuntimeDir}
	for _, w := range u.Writable {
		if !filepath.IsAbs(w) {
			return "", fmt.Errorf("systemd.Render: writable path %q is not absolute", w)
		}
		w = filepath.Clean(w)
		if under(w, StateDir) || under(w, RuntimeDir) {
			continue
		}
		// "-": a path that has gone missing (a custom socket directory
		// under /run after a reboot) does not stop the unit; sifd then
		// names it in its own error.
		rw = append(rw, "-"+systemdQuote(w))
	}
	if u.User && u.Packaged {
		return "", errors.New("systemd.Render: a packaged unit is a system unit, not a user unit")
	}
	data := struct {
		User        bool
		Packaged    bool
		Exec        string
		ExecStart   string
		ReadWrite   string
		TimeoutStop int

		RestartSec, StartLimitBurst, StartLimitInterval int
	}{u.User, u.Packaged, systemdQuote(u.Exec), strings.Join(words, " "), strings.Join(rw, " "), StopTimeout + 15,
		RestartSec, StartLimitBurst, StartLimitInterval}
	var b strings.Builder
	if err := unitTmpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("systemd.Render: %w", err)
	}
	out := b.String()
	if strings.Contains(out, "{{") {
		// kardianos/service would read it as a template action.
		return "", errors.New(`systemd.Render: a path or flag contains "{{", which the service installer cannot write`)
	}
	return out, nil
}

// systemdQuote quotes s as one word of a systemd command line or path list:
// plain when it is made of safe characters, else in double quotes with C
// escapes. '%' (specifiers) and '$' (environment variables) are doubled so
// that systemd passes them through literally.
func systemdQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%$", r)) {
			plain = false
			break
		}
	}
	var b strings.Builder
	if !plain {
		b.WriteByte('"')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			b.WriteString("%%")
		case c == '$':
			b.WriteString("$$")
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	if !plain {
		b.WriteByte('"')
	}
	return b.String()
}

// under reports whether path is root or lies below it.
func under(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+"/")
}
