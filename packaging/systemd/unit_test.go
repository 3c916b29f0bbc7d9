package systemd

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sif-dev/sif/daemon"
	"github.com/sif-dev/sif/ipc"
)

var update = flag.Bool("update", false, "rewrite the unit files from the rendered units")

// exampleUnits are the units this directory holds: what `sifd install`
// writes for a sifd in /usr/local/bin indexing /srv and /home (system), or
// alice's home (user).
var exampleUnits = []struct {
	file string
	unit Unit
}{
	{"sifd.service", Unit{
		Exec:     "/usr/local/bin/sifd",
		Args:     []string{"run", "--root", "/home", "--root", "/srv", "--db", "/var/lib/sifd/index", "--socket", "/run/sifd/sifd.sock"},
		Writable: []string{"/var/lib/sifd", "/run/sifd"},
	}},
	{"sifd-user.service", Unit{
		User:     true,
		Exec:     "/usr/local/bin/sifd",
		Args:     []string{"run", "--root", "/home/alice", "--db", "/home/alice/.local/state/sifd/index", "--socket", "/run/user/1000/sifd.sock"},
		Writable: []string{"/home/alice/.local/state/sifd/index", "/run/user/1000"},
	}},
}

// TestSystemdUnitPackaging checks that packaging/systemd holds the units
// Render renders; go test ./packaging/systemd -run Packaging -update rewrites
// them.
func TestSystemdUnitPackaging(t *testing.T) {
	for _, ex := range exampleUnits {
		got, err := Render(ex.unit)
		if err != nil {
			t.Fatal(err)
		}
		path := ex.file
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./packaging/systemd -run Packaging -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the rendered unit; if the change is meant, run go test ./packaging/systemd -run Packaging -update\n--- rendered:\n%s", path, got)
		}
	}
}

func TestSystemdUnitContent(t *testing.T) {
	sys, err := Render(exampleUnits[0].unit)
	if err != nil {
		t.Fatal(err)
	}
	user, err := Render(exampleUnits[1].unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ExecStart=/usr/local/bin/sifd run --root /home --root /srv --db /var/lib/sifd/index --socket /run/sifd/sifd.sock\n",
		"Nice=10\n", "CPUWeight=20\n", "IOSchedulingClass=idle\n", "IOWeight=20\n", "MemoryHigh=", "MemoryMax=1G\n",
		"ProtectSystem=strict\n", "ReadWritePaths=/var/lib/sifd /run/sifd\n", "ProtectHome=read-only\n",
		"PrivateTmp=yes\n", "NoNewPrivileges=yes\n", "RuntimeDirectory=sifd\n", "StateDirectory=sifd\n",
		"Restart=on-failure\n", "KillSignal=SIGTERM\n", "TimeoutStopSec=45\n", "WantedBy=multi-user.target\n",
		"ExecReload=/bin/kill -HUP $MAINPID\n",
		// The system user: reads everything, owns only its two directories.
		"\nUser=" + SystemUser + "\n", "\nGroup=" + SystemUser + "\n",
		"\nAmbientCapabilities=CAP_DAC_READ_SEARCH\n", "\nCapabilityBoundingSet=CAP_DAC_READ_SEARCH\n",
		"\nStateDirectoryMode=0700\n", "\nRuntimeDirectoryMode=0755\n",
		`Written by "sifd install"`,
	} {
		if !strings.Contains(sys, want) {
			t.Errorf("system unit lacks %q", want)
		}
	}
	for _, want := range []string{"WantedBy=default.target\n", "Nice=10\n", "MemoryMax=1G\n", "Restart=on-failure\n", "NoNewPrivileges=yes\n"} {
		if !strings.Contains(user, want) {
			t.Errorf("user unit lacks %q", want)
		}
	}
	// A user manager cannot switch users, grant capabilities or (without
	// unprivileged user namespaces) set up mount namespaces.
	for _, bad := range []string{"User=", "Group=", "CapabilityBoundingSet=", "AmbientCapabilities=", "ProtectSystem=", "ProtectHome=", "PrivateTmp=",
		"PrivateDevices=", "ReadWritePaths=", "StateDirectory=", "RuntimeDirectory=", "multi-user.target"} {
		if strings.Contains(user, "\n"+bad) {
			t.Errorf("user unit sets %q", bad)
		}
	}
}

// TestSystemdUnitPackaged: the unit a package ships differs from the one
// sifd install writes only in its header.
func TestSystemdUnitPackaged(t *testing.T) {
	u := Unit{Exec: "/usr/bin/sifd", Args: []string{"run", "--config", "/etc/sifd/config.toml"}}
	installed, err := Render(u)
	if err != nil {
		t.Fatal(err)
	}
	u.Packaged = true
	packaged, err := Render(u)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(packaged, "installed by the sif package") || strings.Contains(packaged, "sifd install") {
		t.Errorf("packaged unit's header:\n%s", packaged)
	}
	_, instBody, _ := strings.Cut(installed, "[Unit]")
	_, pkgBody, _ := strings.Cut(packaged, "[Unit]")
	if instBody != pkgBody {
		t.Errorf("packaged unit differs below its header:\n%s", packaged)
	}
	if _, err := Render(Unit{User: true, Packaged: true, Exec: "/usr/bin/sifd"}); err == nil {
		t.Error("a packaged user unit was rendered")
	}
}

func TestSystemdUnitWritable(t *testing.T) {
	u, err := Render(Unit{Exec: "/usr/bin/sifd", Args: []string{"run"}, Writable: []string{"/var/lib/sifd/x", "/srv/idx", "/run/my sock"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "ReadWritePaths=/var/lib/sifd /run/sifd -/srv/idx -\"/run/my sock\"\n"; !strings.Contains(u, want) {
		t.Errorf("want %q in\n%s", want, u)
	}
	if _, err := Render(Unit{Exec: "sifd"}); err == nil {
		t.Error("relative executable accepted")
	}
	if _, err := Render(Unit{Exec: "/usr/bin/sifd", Args: []string{"--root", "/a{{b"}}); err == nil {
		t.Error(`"{{" accepted`)
	}
}

func TestSystemdQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/srv/data":    "/srv/data",
		"--max-size=5": "--max-size=5",
		"/a b":         `"/a b"`,
		"50%":          "50%%",
		"$HOME":        "$$HOME",
		`a"b\c`:        `"a\"b\\c"`,
		"a\nb":         `"a\x0ab"`,
		"":             `""`,
		"ünï":          `"ünï"`,
	} {
		if got := systemdQuote(in); got != want {
			t.Errorf("systemdQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestPaths: the directories the unit gives the system user are those the
// daemon uses by default as a system service.
func TestPaths(t *testing.T) {
	if daemon.SystemStateDir != StateDir || filepath.Dir(daemon.SystemDB) != StateDir {
		t.Errorf("daemon.SystemStateDir %s, daemon.SystemDB %s; the unit's state directory is %s", daemon.SystemStateDir, daemon.SystemDB, StateDir)
	}
	if filepath.Dir(ipc.SystemSocket) != RuntimeDir {
		t.Errorf("ipc.SystemSocket %s is not in the unit's runtime directory %s", ipc.SystemSocket, RuntimeDir)
	}
}

// TestSystemdUnitRestart: a daemon that dies on its own (Pebble's fatal
// error, a kill) is started again by systemd within seconds, in the system
// and the user unit alike; a crash loop is stopped by the start limit
// rather than spinning: the limit's window spans a whole burst of
// restarts.
func TestSystemdUnitRestart(t *testing.T) {
	for _, ex := range exampleUnits {
		text, err := Render(ex.unit)
		if err != nil {
			t.Fatal(err)
		}
		setting := func(key string) (int, bool) {
			for line := range strings.Lines(text) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
					n, err := strconv.Atoi(v)
					if err != nil {
						t.Errorf("%s: %s=%q is not a number of seconds", ex.file, key, v)
					}
					return n, true
				}
			}
			return 0, false
		}
		if !strings.Contains(text, "\nRestart=on-failure\n") {
			t.Errorf("%s: no Restart=on-failure", ex.file)
		}
		sec, ok := setting("RestartSec")
		if !ok || sec < 1 || sec > 5 {
			t.Errorf("%s: RestartSec=%d (set %v), want 1 to 5 s: back within seconds, without spinning", ex.file, sec, ok)
		}
		burst, ok1 := setting("StartLimitBurst")
		window, ok2 := setting("StartLimitIntervalSec")
		if !ok1 || !ok2 || burst < 3 || window < 2*burst*sec {
			t.Errorf("%s: StartLimitBurst=%d StartLimitIntervalSec=%d: want a burst of at least 3 within a window that spans it", ex.file, burst, window)
		}
		if unit, _, _ := strings.Cut(text, "[Service]"); !strings.Contains(unit, "StartLimitBurst=") {
			t.Errorf("%s: the start limit is not in [Unit], where systemd reads it", ex.file)
		}
	}
}
