package daemon

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite packaging/systemd from the rendered units")

// exampleUnits are the units packaging/systemd holds: what `sifd install`
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
// SystemdUnit renders; go test ./daemon -run Packaging -update rewrites
// them.
func TestSystemdUnitPackaging(t *testing.T) {
	for _, ex := range exampleUnits {
		got, err := SystemdUnit(ex.unit)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "packaging", "systemd", ex.file)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./daemon -run Packaging -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the rendered unit; if the change is meant, run go test ./daemon -run Packaging -update\n--- rendered:\n%s", path, got)
		}
	}
}

func TestSystemdUnitContent(t *testing.T) {
	sys, err := SystemdUnit(exampleUnits[0].unit)
	if err != nil {
		t.Fatal(err)
	}
	user, err := SystemdUnit(exampleUnits[1].unit)
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
	installed, err := SystemdUnit(u)
	if err != nil {
		t.Fatal(err)
	}
	u.Packaged = true
	packaged, err := SystemdUnit(u)
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
	if _, err := SystemdUnit(Unit{User: true, Packaged: true, Exec: "/usr/bin/sifd"}); err == nil {
		t.Error("a packaged user unit was rendered")
	}
}

func TestSystemdUnitWritable(t *testing.T) {
	u, err := SystemdUnit(Unit{Exec: "/usr/bin/sifd", Args: []string{"run"}, Writable: []string{"/var/lib/sifd/x", "/srv/idx", "/run/my sock"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "ReadWritePaths=/var/lib/sifd /run/sifd -/srv/idx -\"/run/my sock\"\n"; !strings.Contains(u, want) {
		t.Errorf("want %q in\n%s", want, u)
	}
	if _, err := SystemdUnit(Unit{Exec: "sifd"}); err == nil {
		t.Error("relative executable accepted")
	}
	if _, err := SystemdUnit(Unit{Exec: "/usr/bin/sifd", Args: []string{"--root", "/a{{b"}}); err == nil {
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

// TestProgram runs the daemon the way a service manager does: Start
// returns at once, Stop cancels and waits.
func TestProgram(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte(strings.Repeat("sif service test\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "sifsvc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "s.sock")
	p := &program{parent: context.Background(), cfg: Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: sock}, stopTimeout: 30 * time.Second}
	start := time.Now()
	if err := p.Start(nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Start blocked for %s", d)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not create its socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	waited := make(chan struct{})
	go func() { p.wait(); close(waited) }()
	if err := p.Stop(nil); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return after the daemon stopped")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind after Stop: %v", err)
	}
}

// TestProgramFails: a daemon that cannot start ends wait, and its error is
// the result.
func TestProgramFails(t *testing.T) {
	p := &program{parent: context.Background(), cfg: Config{}, stopTimeout: time.Second}
	if err := p.Start(nil); err != nil {
		t.Fatal(err)
	}
	p.wait()
	if err := p.result(); err == nil || !strings.Contains(err.Error(), "no roots") {
		t.Errorf("result = %v, want the no-roots error", err)
	}
	if err := p.Stop(nil); err == nil {
		t.Error("Stop after a failed start returned nil")
	}
}
