//go:build linux

package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// procStatus reads the fields of /proc/PID/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			m[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return m
}

// children returns the pids of pid's child processes.
func children(t *testing.T, pid int) []int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// sifd run --run-as, started as root as an init script starts it, becomes
// the user keeping only CAP_DAC_READ_SEARCH, in the process started (the
// init script's pid) and in the daemon it supervises, as the kernel sees
// them; it makes its socket's directory open to every user; it indexes a
// file only root may read; another user's query is answered. Started by
// another user than root, --run-as is refused in plain words.
func TestRunAsDropsRoot(t *testing.T) {
	e := newEnv(t)
	e.socket = filepath.Join(e.dir, "run", "sifd.sock")
	open := e.write("open.txt", words(9100, 4000))
	secret := filepath.Join(e.root, "secret")
	if err := os.Mkdir(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Join(secret, "copy.txt")
	b, _ := os.ReadFile(open)
	if err := os.WriteFile(hidden, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		e.daemonAttr = &syscall.SysProcAttr{}
		e.startNoWait("--run-as", "nobody")
		<-e.waited
		e.daemon = nil
		if !strings.Contains(e.logs.String(), "--run-as nobody: only root can become another user") {
			t.Fatalf("--run-as by uid %d: want a plain refusal, got:\n%s", os.Geteuid(), e.logs.String())
		}
		return
	}
	e.daemonAttr = &syscall.SysProcAttr{} // root, as an init script runs it
	e.setenv = []string{"SIFD_SUPERVISE=1"}
	e.start("--run-as", "nobody", "--socket-access", "all")

	pids := append([]int{e.daemon.Process.Pid}, children(t, e.daemon.Process.Pid)...)
	if len(pids) != 2 {
		t.Fatalf("want the supervisor and its daemon, found processes %v", pids)
	}
	want := map[string]string{
		"Uid": "65534 65534 65534 65534", "Gid": "65534 65534 65534 65534",
		"CapPrm": "0000000000000004", "CapEff": "0000000000000004",
		"CapBnd": "0000000000000004", "CapAmb": "0000000000000004", "NoNewPrivs": "1",
	}
	for _, pid := range pids {
		st := procStatus(t, pid)
		for k, v := range want {
			if st[k] != v {
				t.Errorf("process %d: %s %q, want %q", pid, k, st[k], v)
			}
		}
	}
	if !strings.Contains(e.logs.String(), "runs as another user, with only CAP_DAC_READ_SEARCH") {
		t.Errorf("the daemon does not log the rights it runs with:\n%s", e.logs.String())
	}
	for _, d := range []string{e.db, filepath.Dir(e.socket)} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != nobody {
			t.Errorf("%s belongs to uid %d, want the daemon's user %d", d, uid, nobody)
		}
	}
	if m := mode(t, filepath.Dir(e.socket)); m != 0o755 {
		t.Errorf("socket directory mode %v, want 0755 (every user reaches the socket)", m)
	}

	if st := e.status(); st.Index.Files != 2 {
		t.Errorf("%d files indexed, want 2: the daemon reads what only root may", st.Index.Files)
	}
	r := e.sifctlAs(asRoot, "similar", open)
	if r.code != 0 || !strings.Contains(r.stdout, hidden) {
		t.Errorf("root's query: exit %d, want %s among:\n%s%s", r.code, hidden, r.stdout, r.stderr)
	}
	r = e.sifctlAs(asDave, "similar", "--json", open)
	if r.code != 1 || strings.Contains(r.stdout, hidden) || r.stderr != "" {
		t.Errorf("another user's query: exit %d (want 1: answered, and %s, which they may not read, left out):\n%s%s", r.code, hidden, r.stdout, r.stderr)
	}
	e.stop()
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// sysvInit reports whether this machine's services are System V init
// scripts run by service(8): systemd is not PID 1 and there is an
// /etc/init.d.
func sysvInit() bool {
	_, systemd := os.Stat("/run/systemd/system")
	_, initd := os.Stat("/etc/init.d")
	_, svc := exec.LookPath("service")
	return systemd != nil && initd == nil && svc == nil
}

// sifd install where systemd is not the init system writes a System V init
// script, says so, and the service it starts runs as the system user with
// only CAP_DAC_READ_SEARCH (read back from /proc), in a socket directory
// open to every user: a user with no sifd of their own, naming no socket,
// is answered by it. sifd status follows the service through install,
// start, stop and uninstall. It installs the real service, so it runs as
// root on a machine whose init system is System V, as CI's are.
func TestSysVInstall(t *testing.T) {
	if os.Geteuid() != 0 || !sysvInit() {
		t.Skip("installs the system service for real: needs root on a machine whose init system is System V (CI's)")
	}
	const script = "/etc/init.d/sifd"
	if _, err := os.Stat(script); err == nil {
		t.Fatalf("%s exists: this test installs its own sifd service; uninstall the machine's first (sifd uninstall)", script)
	}
	e := newEnv(t)
	open := e.write("open.txt", words(9200, 4000))
	hidden := filepath.Join(e.root, "secret", "copy.txt")
	if err := os.Mkdir(filepath.Dir(hidden), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(open)
	if err := os.WriteFile(hidden, b, 0o600); err != nil {
		t.Fatal(err)
	}
	sifd := func(args ...string) result { return run(t, sifdBin, args...) }
	t.Cleanup(func() {
		sifd("stop")
		sifd("uninstall")
		for _, p := range []string{"/var/lib/sifd", "/run/sifd", "/var/log/sifd.log", "/var/log/sifd.err"} {
			os.RemoveAll(p)
		}
	})
	expect := func(r result, code int, what string) {
		t.Helper()
		if r.code != code || !strings.Contains(r.stdout, what) {
			t.Fatalf("exit %d, want %d and %q in:\n%s%s", r.code, code, what, r.stdout, r.stderr)
		}
	}
	expect(sifd("status"), 3, "not installed")
	r := sifd("install", "--root", e.root)
	expect(r, 0, "as a System V init script ("+script+")")
	expect(r, 0, "run --run-as sifd --root "+e.root)
	expect(sifd("status"), 3, "stopped")
	expect(sifd("start"), 0, "")

	socket := "/run/sifd/sifd.sock"
	var st *ipc.Status
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if st, err = ipc.NewClient(socket).Status(context.Background()); err == nil && st.State == "ready" {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile("/var/log/sifd.err")
			t.Fatalf("the service is not ready after 60 s: %v\n%s", err, log)
		}
	}
	expect(sifd("status"), 0, "running")
	if st.Index.Files != 2 {
		t.Errorf("%d files indexed, want 2: the service reads what only root may", st.Index.Files)
	}

	pidText, err := os.ReadFile("/var/run/sifd.pid")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))
	u, err := user.Lookup("sifd")
	if err != nil {
		t.Fatalf("install did not create the system user: %v", err)
	}
	ids := strings.Repeat(u.Uid+" ", 4)
	for _, p := range append([]int{pid}, children(t, pid)...) {
		got := procStatus(t, p)
		for k, v := range map[string]string{"Uid": ids[:len(ids)-1], "CapEff": "0000000000000004", "CapBnd": "0000000000000004", "NoNewPrivs": "1"} {
			if got[k] != v {
				t.Errorf("service process %d: %s %q, want %q", p, k, got[k], v)
			}
		}
	}
	if m := mode(t, "/run/sifd"); m != 0o755 {
		t.Errorf("/run/sifd has mode %v, want 0755", m)
	}

	// A user with no sifd of their own, naming no socket.
	cmd := exec.Command(sifctlBin, "similar", "--json", open)
	cmd.Dir = "/"
	cmd.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: asDave.cred}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), `"query"`) || strings.Contains(string(out), hidden) {
		t.Errorf("another user's query, naming no socket: %v (want exit 1: answered, without %s, which they may not read):\n%s", err, hidden, out)
	}
	r = run(t, sifctlBin, "similar", open)
	if r.code != 0 || !strings.Contains(r.stdout, hidden) {
		t.Errorf("root's query: exit %d, want %s among:\n%s%s", r.code, hidden, r.stdout, r.stderr)
	}

	expect(sifd("stop"), 0, "")
	expect(sifd("status"), 3, "stopped")
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("the service's process %d is still there after sifd stop", pid)
	}
	expect(sifd("uninstall"), 0, "")
	expect(sifd("status"), 3, "not installed")
}
