package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/packaging/systemd"
)

func TestDebVersion(t *testing.T) {
	date := time.Date(2026, 3, 4, 23, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"v1.2.3":                   "1.2.3",
		"1.2.3":                    "1.2.3",
		"v1.2.3-4-gabc1234":        "1.2.3+git4.abc1234",
		"v1.2.3-rc1-4-gabc1234":    "1.2.3-rc1+git4.abc1234",
		"v1.2.3-dirty":             "1.2.3+dirty",
		"abc1234":                  "0~git20260304.abc1234",
		"1234567":                  "0~git20260304.1234567",
		"abc1234-dirty":            "0~git20260304.abc1234+dirty",
		"v0.9.0-12-g0123abc-dirty": "0.9.0+git12.0123abc+dirty",
	} {
		got := debVersion(in, date)
		if got != want {
			t.Errorf("debVersion(%q) = %q, want %q", in, got, want)
		}
		if !validVersion.MatchString(got) {
			t.Errorf("debVersion(%q) = %q, not a valid version", in, got)
		}
	}
	// Versions sort as the history does.
	order := []string{"0~git20260304.abc1234", "0.9.0", "0.9.0+git12.0123abc", "1.2.3"}
	for i := 1; i < len(order); i++ {
		if err := exec.Command("dpkg", "--compare-versions", order[i-1], "lt", order[i]).Run(); err != nil {
			t.Errorf("dpkg --compare-versions %s lt %s: %v", order[i-1], order[i], err)
		}
	}
}

// TestPackage builds the package, checks what it holds, runs the daemon it
// ships on its default configuration, and (as root) installs, reinstalls
// and purges it in a scratch root with dpkg, checking the system user, the
// unit (with systemd-analyze verify) and what purge leaves.
func TestPackage(t *testing.T) {
	for _, tool := range []string{"dpkg", "dpkg-deb", "systemd-analyze"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: apt-get install dpkg systemd (as .ci/run does)", tool)
		}
	}
	out := t.TempDir()
	const version = "1.2.3~test"
	deb, err := Build(context.Background(), Options{Out: out, Version: version, Maintainer: "sif tests <tests@example.org>"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "sif_"+version+"_"+debArch[runtime.GOARCH]+".deb"); deb != want {
		t.Errorf("package at %s, want %s", deb, want)
	}

	// The control fields.
	fields := cmdOut(t, "dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Maintainer")
	for _, want := range []string{"Package: sif\n", "Version: " + version + "\n", "Architecture: " + debArch[runtime.GOARCH] + "\n"} {
		if !strings.Contains(fields, want) {
			t.Errorf("control lacks %q:\n%s", want, fields)
		}
	}

	// The files, with their modes and owners.
	listing := parseContents(t, cmdOut(t, "dpkg-deb", "--contents", deb))
	want := map[string]string{
		"/usr/bin/sifd":                                               "-rwxr-xr-x root/root",
		"/usr/bin/sifctl":                                             "-rwxr-xr-x root/root",
		"/lib/systemd/system/sifd.service":                            "-rw-r--r-- root/root",
		"/etc/sifd/config.toml":                                       "-rw-r--r-- root/root",
		"/usr/lib/sysusers.d/sifd.conf":                               "-rw-r--r-- root/root",
		"/usr/share/doc/sif/copyright":                                "-rw-r--r-- root/root",
		"/usr/share/doc/sif/README.md":                                "-rw-r--r-- root/root",
		"/usr/share/doc/sif/packaging/README.md":                      "-rw-r--r-- root/root",
		"/usr/share/doc/sif/packaging/fleet/partitioned-postings.sql": "-rw-r--r-- root/root",
		"/usr/share/bash-completion/completions/sifd":                 "-rw-r--r-- root/root",
		"/usr/share/bash-completion/completions/sifctl":               "-rw-r--r-- root/root",
		"/usr/share/zsh/vendor-completions/_sifd":                     "-rw-r--r-- root/root",
		"/usr/share/zsh/vendor-completions/_sifctl":                   "-rw-r--r-- root/root",
		"/usr/share/fish/vendor_completions.d/sifd.fish":              "-rw-r--r-- root/root",
		"/usr/share/fish/vendor_completions.d/sifctl.fish":            "-rw-r--r-- root/root",
		"/etc/sifd":        "drwxr-xr-x root/root",
		"/etc/init.d/sifd": "-rwxr-xr-x root/root",
	}
	for _, page := range []string{"sifd", "sifd-run", "sifd-check", "sifd-dump", "sifd-install", "sifd-uninstall",
		"sifd-start", "sifd-stop", "sifd-restart", "sifd-status", "sifd-completion-bash",
		"sifctl", "sifctl-similar", "sifctl-groups", "sifctl-dupes", "sifctl-status", "sifctl-compare",
		"sifctl-roots", "sifctl-roots-add", "sifctl-roots-remove", "sifctl-roots-list", "sifctl-rescan", "sifctl-wait", "sifctl-sketch"} {
		want["/usr/share/man/man1/"+page+".1.gz"] = "-rw-r--r-- root/root"
	}
	for path, mode := range want {
		if got, ok := listing[path]; !ok {
			t.Errorf("package lacks %s", path)
		} else if got != mode {
			t.Errorf("%s: %s, want %s", path, got, mode)
		}
	}
	for path := range listing {
		if strings.Contains(path, "gen-docs") {
			t.Errorf("package has a page for the hidden command: %s", path)
		}
	}

	// The documents are the repository's, byte for byte: the README and
	// the operator's guide, at their paths in the repository.
	for _, doc := range []string{"README.md", "packaging/README.md", "packaging/fleet/partitioned-postings.sql"} {
		want, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		if got := debFile(t, deb, "/usr/share/doc/sif/"+doc); got != string(want) {
			t.Errorf("/usr/share/doc/sif/%s: %d bytes, not the repository's %s (%d bytes)", doc, len(got), doc, len(want))
		}
	}

	// The maintainer scripts and the conffile.
	control := t.TempDir()
	cmdOut(t, "dpkg-deb", "--control", deb, control)
	if b, _ := os.ReadFile(filepath.Join(control, "conffiles")); !sameLines(string(b), "/etc/sifd/config.toml\n/etc/init.d/sifd\n") {
		t.Errorf("conffiles = %q, want the configuration file and the init script", b)
	}
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		if st, err := os.Stat(filepath.Join(control, s)); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("control script %s: %v, %v", s, st, err)
		}
		cmdOut(t, "sh", "-n", filepath.Join(control, s))
	}

	// What the files say.
	tree := t.TempDir()
	cmdOut(t, "dpkg-deb", "-x", deb, tree)
	if v := cmdOut(t, filepath.Join(tree, "usr/bin/sifd"), "--version"); !strings.Contains(v, version) {
		t.Errorf("sifd --version = %q, want %s", v, version)
	}
	if v := cmdOut(t, filepath.Join(tree, "usr/bin/sifctl"), "--version"); !strings.Contains(v, version) {
		t.Errorf("sifctl --version = %q, want %s", v, version)
	}
	unit := readFile(t, filepath.Join(tree, "lib/systemd/system/sifd.service"))
	for _, line := range []string{
		"ExecStart=/usr/bin/sifd run --config /etc/sifd/config.toml --db /var/lib/sifd/index --socket /run/sifd/sifd.sock",
		"User=sifd", "Group=sifd", "AmbientCapabilities=CAP_DAC_READ_SEARCH", "CapabilityBoundingSet=CAP_DAC_READ_SEARCH",
		"ProtectSystem=strict", "ProtectHome=read-only", "StateDirectory=sifd", "RuntimeDirectory=sifd",
		"RuntimeDirectoryMode=0755", "WantedBy=multi-user.target",
	} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).MatchString(unit) {
			t.Errorf("unit lacks %q:\n%s", line, unit)
		}
	}
	if got := readFile(t, filepath.Join(tree, "usr/lib/sysusers.d/sifd.conf")); got != systemd.SysusersConf {
		t.Errorf("sysusers.d/sifd.conf = %q, want %q", got, systemd.SysusersConf)
	}
	shipped, _ := assets.ReadFile("config.toml")
	if got := readFile(t, filepath.Join(tree, "etc/sifd/config.toml")); got != string(shipped) {
		t.Error("etc/sifd/config.toml differs from packaging/deb/config.toml")
	}
	page := gunzip(t, filepath.Join(tree, "usr/share/man/man1/sifd-run.1.gz"))
	if !strings.HasPrefix(page, `.nh`) || !strings.Contains(page, `.TH "SIFD-RUN" "1"`) || !strings.Contains(page, ".SH OPTIONS") || !strings.Contains(page, "config") {
		t.Errorf("sifd-run.1 is not the run command's page:\n%.400s", page)
	}
	if _, err := exec.LookPath("bash"); err == nil {
		cmdOut(t, "bash", "-n", filepath.Join(tree, "usr/share/bash-completion/completions/sifctl"))
	}

	// The daemon takes the configuration as shipped: alone it lacks only
	// roots; with one it runs and answers.
	runShippedConfig(t, tree)
	cmdOut(t, "sh", "-n", filepath.Join(tree, "etc/init.d/sifd"))
	runInitScript(t, tree)

	t.Run("dpkg", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("installing into a scratch root with dpkg --root needs root (CI runs as root)")
		}
		installInScratchRoot(t, deb)
	})
}

// runShippedConfig runs the sifd in tree on tree's /etc/sifd/config.toml.
func runShippedConfig(t *testing.T, tree string) {
	sifd, sifctl := filepath.Join(tree, "usr/bin/sifd"), filepath.Join(tree, "usr/bin/sifctl")
	config := filepath.Join(tree, "etc/sifd/config.toml")
	cmd := exec.Command(sifd, "run", "--config", config, "--db", filepath.Join(t.TempDir(), "db"), "--socket", filepath.Join(t.TempDir(), "s.sock"))
	msg, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(msg), "no roots") || strings.Contains(string(msg), "config.toml:") {
		t.Errorf("sifd run --config (shipped) without roots: exit %d, %s; want exit 2 asking only for roots", code, msg)
	}

	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), bytes.Repeat([]byte("the sif package test\n"), 200), 0o644); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "sifdeb") // short: a socket path has ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "s.sock")
	var log bytes.Buffer
	cmd = exec.Command(sifd, "run", "--config", config, "--root", root, "--db", filepath.Join(t.TempDir(), "db"), "--socket", sock)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("sifd on the shipped configuration: %v\n%s", err, log.String())
			}
		case <-time.After(45 * time.Second):
			cmd.Process.Kill()
			t.Errorf("sifd did not stop on SIGTERM\n%s", log.String())
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := exec.Command(sifctl, "--socket", sock, "wait", "--timeout", "5s")
		if out, err := st.CombinedOutput(); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("sifd on the shipped configuration never answered: %v %s\n%s", err, out, log.String())
		}
		select {
		case err := <-done:
			t.Fatalf("sifd on the shipped configuration exited: %v\n%s", err, log.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if out := cmdOut(t, sifctl, "--socket", sock, "status"); !strings.Contains(out, root) {
		t.Errorf("sifctl status does not name the root %s:\n%s", root, out)
	}
}

// installInScratchRoot installs deb with dpkg --root into a directory made
// to look like a Debian system: an empty dpkg database, a passwd file with
// root alone, and the host's systemd units and /bin/kill (which
// systemd-analyze verify --root resolves inside the root). The maintainer
// scripts run on the host with DPKG_ROOT set (--force-script-chrootless)
// and act on the root: systemd-sysusers --root creates the user there,
// deb-systemd-helper enables the unit there.
func installInScratchRoot(t *testing.T, deb string) {
	root := t.TempDir()
	for _, d := range []string{"etc", "var/lib/dpkg/info", "var/lib/dpkg/updates", "var/log", "bin", "lib/systemd/system"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{
		"var/lib/dpkg/status": "",
		"etc/passwd":          "root:x:0:0:root:/root:/bin/bash\n",
		"etc/group":           "root:x:0:\n",
		"etc/shadow":          "root:*:19000:0:99999:7:::\n",
		"etc/gshadow":         "root:*::\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmdOut(t, "cp", "-a", "/lib/systemd/system/.", filepath.Join(root, "lib/systemd/system"))
	os.Remove(filepath.Join(root, "lib/systemd/system/sifd.service")) // the host's own, if any
	cmdOut(t, "cp", "-L", "/bin/kill", filepath.Join(root, "bin/kill"))

	hostPasswd := readFile(t, "/etc/passwd")
	dpkg := func(args ...string) string {
		return cmdOut(t, "dpkg", append([]string{"--root=" + root, "--force-script-chrootless", "--log=" + filepath.Join(root, "var/log/dpkg.log")}, args...)...)
	}
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(root, p)); return err == nil }
	wants := "etc/systemd/system/multi-user.target.wants/sifd.service"
	userLine := regexp.MustCompile(`(?m)^sifd:x:\d+:\d+:sif daemon:/var/lib/sifd:/usr/sbin/nologin$`)

	log := dpkg("--install", deb)
	if !strings.Contains(log, "Setting up sif (") || !strings.Contains(log, "systemctl start sifd") {
		t.Errorf("dpkg --install said:\n%s", log)
	}
	if st := dpkg("--status", "sif"); !strings.Contains(st, "Status: install ok installed") {
		t.Errorf("dpkg --status sif:\n%s", st)
	}
	for _, p := range []string{"usr/bin/sifd", "usr/bin/sifctl", "etc/sifd/config.toml", "lib/systemd/system/sifd.service"} {
		if !exists(p) {
			t.Errorf("%s not installed", p)
		}
	}
	if passwd := readFile(t, filepath.Join(root, "etc/passwd")); !userLine.MatchString(passwd) {
		t.Errorf("postinst did not create the sifd user in the root:\n%s", passwd)
	}
	if !regexp.MustCompile(`(?m)^sifd:x:\d+:`).MatchString(readFile(t, filepath.Join(root, "etc/group"))) {
		t.Error("postinst did not create the sifd group in the root")
	}
	if readFile(t, "/etc/passwd") != hostPasswd {
		t.Error("installing into the scratch root changed the host's /etc/passwd")
	}
	if target, err := os.Readlink(filepath.Join(root, wants)); err != nil || target != "/lib/systemd/system/sifd.service" {
		t.Errorf("unit not enabled: %s -> %q, %v", wants, target, err)
	}

	// systemd's own check of the installed unit, binaries resolved in the
	// root. It exits 0 on some problems, so any output fails; a broken
	// copy shows that the check sees the unit.
	verify := func(unit string) (string, error) {
		cmd := exec.Command("systemd-analyze", "verify", "--man=no", "--root="+root, unit)
		cmd.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0")
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := verify(filepath.Join(root, "lib/systemd/system/sifd.service")); err != nil || out != "" {
		t.Errorf("systemd-analyze verify --root=%s sifd.service: %v\n%s", root, err, out)
	}
	broken := strings.Replace(readFile(t, filepath.Join(root, "lib/systemd/system/sifd.service")), "/usr/bin/sifd run", "/usr/bin/sifd-missing run", 1)
	brokenPath := filepath.Join(root, "etc/systemd/system/sifd-broken.service")
	if err := os.WriteFile(brokenPath, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := verify(brokenPath); !strings.Contains(out, "sifd-missing") {
		t.Errorf("systemd-analyze verify did not notice a missing ExecStart binary: %q", out)
	}
	os.Remove(brokenPath)

	// Reinstall after the administrator edited the configuration and
	// disabled the unit: both stay as they are, and the user is not
	// created twice.
	conf := filepath.Join(root, "etc/sifd/config.toml")
	edited := readFile(t, conf) + "roots = [\"/srv\"]\n"
	if err := os.WriteFile(conf, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, wants)); err != nil {
		t.Fatal(err)
	}
	dpkg("--install", deb)
	if readFile(t, conf) != edited {
		t.Error("reinstalling replaced the edited configuration file")
	}
	if exists(wants) {
		t.Error("reinstalling enabled the unit the administrator had disabled")
	}
	if n := len(userLine.FindAllString(readFile(t, filepath.Join(root, "etc/passwd")), -1)); n != 1 {
		t.Errorf("%d sifd users after reinstalling", n)
	}

	// Purge: the package's files, its configuration and the index go; the
	// user stays, as Debian leaves system users.
	if err := os.MkdirAll(filepath.Join(root, "var/lib/sifd/index"), 0o700); err != nil {
		t.Fatal(err)
	}
	dpkg("--purge", "sif")
	for _, p := range []string{"usr/bin/sifd", "usr/bin/sifctl", "etc/sifd", "lib/systemd/system/sifd.service",
		"usr/lib/sysusers.d/sifd.conf", "usr/share/man/man1/sifd.1.gz", "var/lib/sifd", wants} {
		if exists(p) {
			t.Errorf("%s is left after purge", p)
		}
	}
	if st := dpkg("--list"); strings.Contains(st, " sif ") {
		t.Errorf("sif still listed after purge:\n%s", st)
	}
	if !userLine.MatchString(readFile(t, filepath.Join(root, "etc/passwd"))) {
		t.Error("purge removed the sifd user")
	}
}

// parseContents maps each path of dpkg-deb --contents output to its mode
// and owner, "-rwxr-xr-x root/root"; directories without their trailing /.
func parseContents(t *testing.T, listing string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			t.Fatalf("dpkg-deb --contents line %q", sc.Text())
		}
		path := strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")
		m[path] = f[0] + " " + f[1]
	}
	return m
}

// debFile returns the content of the file at path (absolute) in the
// package deb, read from its data archive.
func debFile(t *testing.T, deb, path string) string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", "--fsys-tarfile", deb).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --fsys-tarfile %s: %v", deb, err)
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s in the package (%v)", deb, path, err)
		}
		if strings.TrimPrefix(h.Name, ".") == path {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("%s: reading %s: %v", deb, path, err)
			}
			return string(b)
		}
	}
}

func cmdOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// sameLines reports whether a and b hold the same lines in any order.
func sameLines(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// runInitScript runs the package's init script, as a host without
// systemd runs it, on the package's sifd, with its paths moved into
// temporary directories and the user the daemon becomes changed to nobody
// (the sifd user is not created on the host). As root: start, status,
// reload, stop, status, and the daemon runs as that user with
// CAP_DAC_READ_SEARCH alone. As another user, start fails and says why.
func runInitScript(t *testing.T, tree string) {
	dir, err := os.MkdirTemp("", "sifinit") // short: a socket path has ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), bytes.Repeat([]byte("the init script test\n"), 200), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("roots = [%q]\n", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "sifd.sock")
	pidFile, logFile := filepath.Join(dir, "sifd.pid"), filepath.Join(dir, "sifd.log")
	script := readFile(t, filepath.Join(tree, "etc/init.d/sifd"))
	for old, repl := range map[string]string{
		"DAEMON=/usr/bin/sifd":              "DAEMON=" + filepath.Join(tree, "usr/bin/sifd"),
		"PIDFILE=/run/sifd.pid":             "PIDFILE=" + pidFile,
		"LOG=/var/log/sifd.log":             "LOG=" + logFile,
		"-- run --run-as sifd $DAEMON_ARGS": "-- run --run-as nobody $DAEMON_ARGS",
		"/etc/sifd/config.toml --db /var/lib/sifd/index --socket /run/sifd/sifd.sock": conf + " --db " + filepath.Join(dir, "db", "index") + " --socket " + sock,
		"[ -r /etc/default/sifd ] && . /etc/default/sifd":                             "",
	} {
		if !strings.Contains(script, old) {
			t.Fatalf("the init script has no %q", old)
		}
		script = strings.Replace(script, old, repl, 1)
	}
	path := filepath.Join(dir, "sifd.init")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	initd := func(action string) (string, int) {
		out, err := exec.Command("sh", path, action).CombinedOutput()
		return string(out), exitCode(err)
	}
	if os.Geteuid() != 0 {
		if out, code := initd("start"); code != 1 || !strings.Contains(out, "did not start") || !strings.Contains(out, "only root can become another user") {
			t.Errorf("init script start by uid %d: exit %d, want 1 and the daemon's reason:\n%s", os.Geteuid(), code, out)
		}
		return
	}
	defer initd("stop")
	if out, code := initd("start"); code != 0 {
		t.Fatalf("init script start: exit %d\n%s\n%s", code, out, readFile(t, logFile))
	}
	if out, code := initd("status"); code != 0 || out != "Running\n" {
		t.Errorf("init script status: exit %d, %q; want 0, Running", code, out)
	}
	sifctl := filepath.Join(tree, "usr/bin/sifctl")
	cmdOut(t, sifctl, "--socket", sock, "wait", "--timeout", "60s")
	if out := cmdOut(t, sifctl, "--socket", sock, "status"); !strings.Contains(out, "1 files") && !strings.Contains(out, "1 file") {
		t.Errorf("the daemon did not index the file only root may read:\n%s", out)
	}
	pid := strings.TrimSpace(readFile(t, pidFile))
	status := readFile(t, "/proc/"+pid+"/status")
	for _, line := range []string{"Uid:\t65534\t65534\t65534\t65534", "CapEff:\t0000000000000004", "CapBnd:\t0000000000000004", "NoNewPrivs:\t1"} {
		if !strings.Contains(status, line+"\n") {
			t.Errorf("the daemon (pid %s) runs without %q:\n%s", pid, line, regexp.MustCompile(`(?m)^(Uid|Gid|Cap[A-Za-z]+|NoNewPrivs):.*$`).FindAllString(status, -1))
		}
	}
	if out, code := initd("reload"); code != 0 {
		t.Errorf("init script reload: exit %d\n%s", code, out)
	}
	if out, code := initd("stop"); code != 0 {
		t.Errorf("init script stop: exit %d\n%s", code, out)
	}
	if out, code := initd("status"); code != 3 || out != "Stopped\n" {
		t.Errorf("init script status after stop: exit %d, %q; want 3, Stopped", code, out)
	}
	// Gone, or a zombie this machine's PID 1 has not reaped yet.
	if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Errorf("the daemon (pid %s) runs on after stop: %s", pid, st)
	}
	if log := readFile(t, logFile); !strings.Contains(log, "runs as another user, with only CAP_DAC_READ_SEARCH") || !strings.Contains(log, "reload") {
		t.Errorf("the log lacks the daemon's rights or the reload:\n%s", log)
	}
}
