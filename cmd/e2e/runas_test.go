//go:build linux

package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
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
