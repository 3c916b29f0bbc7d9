//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sif-dev/sif/ipc"
)

func statusOnce(e *env) (*ipc.Status, error) {
	return ipc.NewClient(e.socket).Status(context.Background())
}

// oneLine requires stderr to be exactly one line containing want.
func oneLine(t *testing.T, what string, r result, code int, want string) {
	t.Helper()
	if r.code != code {
		t.Errorf("%s: exit %d, want %d (stderr %q)", what, r.code, code, r.stderr)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("%s: stderr %q, want one line containing %q", what, r.stderr, want)
	}
}

// TestBadInput: every kind of bad input gets one clear line on stderr and
// exit status 2, and the daemon keeps running.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	q := e.write("a.txt", words(20, 5000))
	noSock := filepath.Join(e.dir, "nobody-here.sock")
	oneLine(t, "no daemon", run(t, sifctlBin, "--socket", noSock, "similar", q), 2, "no sifd is listening on "+noSock)

	// A socket that speaks HTTP, but not sif.
	other := filepath.Join(e.dir, "other.sock")
	ln, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "teapot", http.StatusTeapot)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	oneLine(t, "not sif", run(t, sifctlBin, "--socket", other, "similar", q), 2, "does not answer like sifd")

	e.start()
	oneLine(t, "missing file", e.sifctl("similar", filepath.Join(e.dir, "missing.txt")), 2, "missing.txt: no such file or directory")
	if r := e.sifctl("similar", e.root); r.code == 2 || !strings.Contains(r.stdout, e.root+" (directory, ") {
		t.Errorf("a directory is asked about as one (similar DIR): exit %d, %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	oneLine(t, "bad threshold", e.sifctl("similar", "--threshold", "150", q), 2, "--threshold 150")
	if os.Geteuid() != 0 {
		secret := filepath.Join(e.dir, "secret.txt")
		os.WriteFile(secret, []byte("x"), 0)
		oneLine(t, "unreadable", e.sifctl("similar", secret), 2, "secret.txt: permission denied")
		locked := filepath.Join(e.dir, "locked")
		os.Mkdir(locked, 0)
		oneLine(t, "unreadable directory", e.sifctl("similar", locked), 2, "locked: permission denied")
	}

	// A second daemon on the same socket refuses to start and names it.
	r := run(t, sifdBin, "run", "--root", e.root, "--db", filepath.Join(e.dir, "db2"), "--socket", e.socket)
	if r.code != 2 || !strings.Contains(r.stderr, "in use") {
		t.Errorf("second daemon: exit %d, stderr %q", r.code, r.stderr)
	}
	// The first one still answers.
	if r, _ := e.similar(q); r.code != 1 {
		t.Errorf("after the bad requests: exit %d %s", r.code, r.stderr)
	}
	e.stop()

	// The index remembers its scheme: another one is a clear error.
	r = run(t, sifdBin, "run", "--root", e.root, "--db", e.db, "--socket", e.socket, "--scheme", "chunks")
	if r.code != 2 || !strings.Contains(r.stderr, "manber") || !strings.Contains(r.stderr, "chunks") {
		t.Errorf("scheme mismatch: exit %d, stderr %q", r.code, r.stderr)
	}
	// No root: a usage error.
	r = run(t, sifdBin, "run", "--db", e.db)
	if r.code != 2 || !strings.Contains(r.stderr, "root") {
		t.Errorf("no root: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, sifdBin, "run", "--root", filepath.Join(e.dir, "nope"), "--db", e.db, "--socket", e.socket)
	if r.code != 2 || !strings.Contains(r.stderr, "nope") {
		t.Errorf("missing root: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestGroupsAndDupes: all-against-all finds the two families of similar
// files, folds identical copies, and dupes lists them apart.
func TestGroupsAndDupes(t *testing.T) {
	e := newEnv(t)
	a, b := words(30, 20000), words(31, 20000)
	pa := e.write("a.txt", a)
	e.write("a2.txt", edit(32, a, 0.2))
	pacopy := e.write("x/a-copy.txt", a)
	e.write("b.txt", b)
	e.write("b2.txt", edit(33, b, 0.2))
	e.write("c.txt", words(34, 20000))
	e.start()

	r := e.sifctl("groups", "--json")
	if r.code != 0 {
		t.Fatalf("groups: exit %d %s", r.code, r.stderr)
	}
	var g ipc.GroupsResponse
	if err := json.Unmarshal([]byte(r.stdout), &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Groups) != 2 {
		t.Fatalf("groups: %d, want 2: %s", len(g.Groups), r.stdout)
	}
	for _, grp := range g.Groups {
		if len(grp.Members) != 1 || grp.Members[0].Percent < 50 {
			t.Errorf("group %+v: want one member above 50%%", grp)
		}
	}
	h := e.sifctl("groups")
	if !strings.Contains(h.stdout, "Minimum similarity = 25%") || !strings.Contains(h.stdout, "R100 ") {
		t.Errorf("human groups output:\n%s", h.stdout)
	}
	if !strings.Contains(h.stdout, "= "+pacopy) && !strings.Contains(h.stdout, "= "+pa) {
		t.Errorf("identical copy not folded into its group:\n%s", h.stdout)
	}
	if r := e.sifctl("groups", "--threshold", "99"); r.code != 1 {
		t.Errorf("groups at 99%%: exit %d, want 1 (nothing)\n%s", r.code, r.stdout)
	}

	r = e.sifctl("dupes", "--json")
	var d ipc.DupesResponse
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != 0 {
		t.Fatalf("dupes: exit %d %v %s", r.code, err, r.stdout)
	}
	if len(d.Sets) != 1 || len(d.Sets[0].Files) != 2 || d.Sets[0].Files[0].Exact() != pa || d.Sets[0].Files[1].Exact() != pacopy {
		t.Errorf("dupes: %+v", d.Sets)
	}
}

// TestCompare works without a daemon.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	a := words(40, 20000)
	pa, pb, pc := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	os.WriteFile(pa, a, 0o644)
	os.WriteFile(pb, append(append([]byte(nil), a[:10000]...), words(41, 30000)...), 0o644)
	os.WriteFile(pc, words(42, 20000), 0o644)
	r := run(t, sifctlBin, "--socket", filepath.Join(dir, "none.sock"), "compare", "--json", pa, pb)
	if r.code != 0 {
		t.Fatalf("compare: exit %d %s", r.code, r.stderr)
	}
	var out struct {
		Schemes []struct {
			Params      string   `json:"params"`
			AInB        float64  `json:"a_in_b"`
			BInA        float64  `json:"b_in_a"`
			SharedBytes *float64 `json:"shared_bytes"`
		} `json:"schemes"`
	}
	json.Unmarshal([]byte(r.stdout), &out)
	if len(out.Schemes) != 2 {
		t.Fatalf("compare output: %s", r.stdout)
	}
	for _, s := range out.Schemes {
		// b holds the first half of a; a is a quarter of b.
		if s.AInB < 35 || s.AInB > 65 || s.BInA < 12 || s.BInA > 38 {
			t.Errorf("%s: a in b %.1f%%, b in a %.1f%%", s.Params, s.AInB, s.BInA)
		}
	}
	if out.Schemes[1].SharedBytes == nil || *out.Schemes[1].SharedBytes < 7000 || *out.Schemes[1].SharedBytes > 10000 {
		t.Errorf("chunks shared bytes: %v, want about 10000", out.Schemes[1].SharedBytes)
	}
	if r := run(t, sifctlBin, "compare", pa, pc); r.code != 1 {
		t.Errorf("unrelated files: exit %d, want 1\n%s", r.code, r.stdout)
	}
}

// TestSocketFromEnvironment: without --socket, sifctl talks to $SIF_SOCKET.
func TestSocketFromEnvironment(t *testing.T) {
	e := newEnv(t)
	q := e.write("a.txt", words(70, 5000))
	e.start()
	cmd := exec.Command(sifctlBin, "status", "--json")
	cmd.Env = append(os.Environ(), "SIF_SOCKET="+e.socket)
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"state":"ready"`) {
		t.Fatalf("status via SIF_SOCKET: %v %s", err, out)
	}
	cmd = exec.Command(sifctlBin, "similar", q)
	cmd.Env = append(os.Environ(), "SIF_SOCKET="+filepath.Join(e.dir, "elsewhere.sock"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "elsewhere.sock") {
		t.Errorf("SIF_SOCKET naming no daemon: %v, stderr %q", err, stderr.String())
	}
}

// TestSocketIsPrivate: a socket other than the system one is private to the
// daemon's user by default (--socket-access owner), and another user gets a
// clear refusal.
func TestSocketIsPrivate(t *testing.T) {
	e := newEnv(t)
	q := e.write("a.txt", words(71, 5000))
	e.start()
	st, err := os.Stat(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode %o, want 600", perm)
	}
	cmd := exec.Command(sifctlBin, "--socket", e.socket, "similar", q)
	if os.Geteuid() == 0 {
		// sifd runs as nobody; ask as yet another user.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody - 1, Gid: nobody - 1}}
	} else {
		os.Chmod(e.socket, 0)
		defer os.Chmod(e.socket, 0o600)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "permission denied on "+e.socket) ||
		!strings.Contains(stderr.String(), "the socket (mode 0") {
		t.Errorf("another user: %v, stderr %q", err, stderr.String())
	}
	if os.Geteuid() != 0 {
		return
	}
	// A directory on the way that the user may not search is named as
	// the cause, not the socket.
	closed := filepath.Join(filepath.Dir(e.socket), "closed") // a directory the user can reach
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(closed, "sifd.sock")
	if err := os.Symlink(e.socket, link); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(sifctlBin, "--socket", link, "status")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody - 1, Gid: nobody - 1}}
	stderr.Reset()
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 ||
		!strings.Contains(stderr.String(), "the directory "+closed+" (mode 0700) does not let you reach the socket") {
		t.Errorf("a closed directory on the way: %v, stderr %q", err, stderr.String())
	}
}
