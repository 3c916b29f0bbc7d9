package peer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Test users and groups: ids no account uses, so the test creates nothing
// on the machine; the kernel does not need them to exist.
const (
	uidA, uidB, uidC = 23401, 23402, 23403
	gidTeam          = 23410
	gidB             = 23402
)

var callers = map[string]Cred{
	"a (in team)":           {UID: uidA, GID: uidA, Groups: []uint32{gidTeam}},
	"b":                     {UID: uidB, GID: gidB},
	"c (team as primary)":   {UID: uidC, GID: gidTeam},
	"d (no groups, nobody)": {UID: 65534, GID: 65534},
}

// TestViewMatchesKernel builds a tree of files and directories with many
// owners, modes and ACLs, and checks that a View's verdict for every caller
// and file is the kernel's: whether a process with that caller's
// credentials can open the file for reading.
func TestViewMatchesKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test runs processes as other users to learn the kernel's verdicts")
	}
	// Not t.TempDir: its parent is private, and every caller must reach top.
	top, err := os.MkdirTemp("", "sif-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	chmod(t, top, 0o755)
	var files []string
	mk := func(dir string, dirMode os.FileMode, dirUID, dirGID int) string {
		p := filepath.Join(top, dir)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		chown(t, p, dirUID, dirGID)
		chmod(t, p, dirMode)
		return p
	}
	file := func(dir, name string, mode os.FileMode, uid, gid int, acl string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("content\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		chown(t, p, uid, gid)
		chmod(t, p, mode)
		if acl != "" {
			setfacl(t, acl, p)
		}
		files = append(files, p)
	}
	for _, d := range []struct {
		mode     os.FileMode
		uid, gid int
	}{{0o755, 0, 0}, {0o700, uidA, uidA}, {0o750, 0, gidTeam}, {0o711, 0, 0}, {0o705, uidB, gidTeam}, {0o070, uidA, gidTeam}} {
		dir := mk(fmt.Sprintf("d%o-%d-%d", d.mode, d.uid, d.gid), d.mode, d.uid, d.gid)
		for _, f := range []struct {
			mode     os.FileMode
			uid, gid int
		}{{0o644, 0, 0}, {0o600, uidA, uidA}, {0o640, 0, gidTeam}, {0o604, uidB, gidTeam}, {0o060, uidA, gidTeam}, {0o000, uidA, uidA}, {0o400, uidB, gidB}} {
			file(dir, fmt.Sprintf("f%o-%d-%d", f.mode, f.uid, f.gid), f.mode, f.uid, f.gid, "")
		}
	}
	// Nested: a readable directory inside one that only team may search.
	inner := mk("team-only/open", 0o755, 0, 0)
	chmod(t, filepath.Dir(inner), 0o710)
	chown(t, filepath.Dir(inner), 0, gidTeam)
	file(inner, "f644", 0o644, 0, 0, "")

	// ACLs on files: a named user, a named group, a mask that takes back
	// what a named entry grants, a named entry that denies its member what
	// the other entry would give.
	acls := mk("acl", 0o755, 0, 0)
	file(acls, "user-b", 0o600, 0, 0, "u:23402:r")
	file(acls, "group-b", 0o600, 0, 0, "g:23402:r")
	file(acls, "masked", 0o600, 0, 0, "u:23401:rw,g:23410:r,m::-")
	file(acls, "team-denied", 0o604, 0, 0, "g:23410:-")
	file(acls, "owner-none", 0o044, uidA, 0, "u:23403:r")
	file(acls, "mask-r", 0o600, 0, 0, "u:23401:rw,m::r")
	file(acls, "team-denied-masked", 0o644, 0, 0, "g:23410:-,u:23403:r")
	// ACLs on directories.
	aclDir := mk("acl-dir", 0o700, 0, 0)
	setfacl(t, "u:23403:rx", aclDir)
	file(aclDir, "f644", 0o644, 0, 0, "")
	aclDir2 := mk("acl-dir-masked", 0o770, 0, gidTeam)
	setfacl(t, "g:23410:rx,m::r", aclDir2)
	file(aclDir2, "f644", 0o644, 0, 0, "")

	// Directories reached through symbolic links: the link's target decides.
	if err := os.Symlink(filepath.Join(top, fmt.Sprintf("d%o-%d-%d", 0o700, uidA, uidA)), filepath.Join(top, "link-to-a")); err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(top, "link-to-a", fmt.Sprintf("f%o-%d-%d", 0o644, 0, 0)))
	// Not regular files, or not there.
	files = append(files, filepath.Join(top, "missing"), acls)
	if err := os.Symlink(filepath.Join(acls, "user-b"), filepath.Join(acls, "symlink")); err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(acls, "symlink"))

	for name, c := range callers {
		truth := kernelCanRead(t, c, files)
		v := NewView(c)
		var wrong []string
		readable := 0
		for i, f := range files {
			if i == len(files)-1 {
				truth[i] = false // sifd never follows a symbolic link to a file
			}
			if truth[i] {
				readable++
			}
			if got := v.CanRead(f); got != truth[i] {
				wrong = append(wrong, fmt.Sprintf("%s: view says %v, kernel %v", strings.TrimPrefix(f, top), got, truth[i]))
			}
		}
		if len(wrong) > 0 {
			t.Errorf("caller %s: %d of %d verdicts differ:\n%s", name, len(wrong), len(files), strings.Join(wrong, "\n"))
		}
		// Guard against a matrix where everything is readable or nothing.
		if readable == 0 || readable == len(files) {
			t.Errorf("caller %s can read %d of %d files: the matrix tells nothing", name, readable, len(files))
		}
		t.Logf("caller %s: may read %d of %d", name, readable, len(files))
	}
}

// kernelCanRead runs a shell with c's credentials that tries to open each
// file for reading, and returns its verdicts.
func kernelCanRead(t *testing.T, c Cred, files []string) []bool {
	t.Helper()
	script := `for f; do if (exec 0<"$f") 2>/dev/null && [ -f "$f" ]; then echo 1; else echo 0; fi; done`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, files...)...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the kernel check as uid %d: %v", c.UID, err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(files) {
		t.Fatalf("kernel check printed %d verdicts for %d files", len(lines), len(files))
	}
	res := make([]bool, len(files))
	for i, l := range lines {
		res[i] = l == "1"
	}
	return res
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, p string, uid, gid int) {
	t.Helper()
	if err := os.Lchown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func setfacl(t *testing.T, spec, p string) {
	t.Helper()
	out, err := exec.Command("setfacl", "-m", spec, p).CombinedOutput()
	if err != nil {
		t.Fatalf("setfacl -m %s %s: %v\n%s (install the acl package)", spec, p, err, out)
	}
}
