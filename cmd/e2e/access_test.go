//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sif-dev/sif/ipc"
)

// Users of the permission tests: ids that no account uses, so nothing is
// created on the machine (the kernel needs no account behind a uid).
const (
	uidDaemon = 23450 // sifd, as the system service runs it: its own user with CAP_DAC_READ_SEARCH
	uidAlice  = 23451 // in group team
	uidBob    = 23452 // in the operator group
	uidCarol  = 23453 // team as her primary group
	uidDave   = 23454 // in no group of note
	gidTeam   = 23460
	gidOps    = 23461
)

// who is a caller of sifctl.
type who struct {
	name string
	cred *syscall.Credential // nil: root, as the test runs
}

var (
	asRoot   = who{"root", nil}
	asDaemon = who{"sifd's user", &syscall.Credential{Uid: uidDaemon, Gid: uidDaemon}}
	asAlice  = who{"alice", &syscall.Credential{Uid: uidAlice, Gid: uidAlice, Groups: []uint32{gidTeam}}}
	asBob    = who{"bob", &syscall.Credential{Uid: uidBob, Gid: uidBob, Groups: []uint32{gidOps}}}
	asCarol  = who{"carol", &syscall.Credential{Uid: uidCarol, Gid: gidTeam}}
	asDave   = who{"dave", &syscall.Credential{Uid: uidDave, Gid: uidDave}}
)

// asSystemService is how sifd runs as the system service: as its own
// user, reading and searching everything through CAP_DAC_READ_SEARCH.
func asSystemService() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: uidDaemon, Gid: uidDaemon},
		AmbientCaps: []uintptr{unix.CAP_DAC_READ_SEARCH},
	}
}

// sifctlAs runs sifctl as w against the env's socket.
func (e *env) sifctlAs(w who, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(sifctlBin, append([]string{"--socket", e.socket}, args...)...)
	cmd.Dir = "/"
	if w.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.cred}
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			e.t.Fatalf("running sifctl %v as %s: %v", args, w.name, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// kernelReadable asks the kernel which of paths w can open for reading.
func kernelReadable(t *testing.T, w who, paths []string) map[string]bool {
	t.Helper()
	script := `for f; do if (exec 0<"$f") 2>/dev/null; then echo 1; else echo 0; fi; done`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, paths...)...)
	cmd.Dir = "/"
	if w.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.cred}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kernel check as %s: %v", w.name, err)
	}
	verdicts := strings.Fields(string(out))
	if len(verdicts) != len(paths) {
		t.Fatalf("kernel check as %s: %d verdicts for %d paths", w.name, len(verdicts), len(paths))
	}
	m := map[string]bool{}
	for i, p := range paths {
		m[p] = verdicts[i] == "1"
	}
	return m
}

// place is a directory of the permission tree and the modes of the files
// in it.
type place struct {
	dir      string
	dirMode  os.FileMode
	dirOwner [2]int // uid, gid
	dirACL   string
	fileMode os.FileMode
	owner    [2]int
	acl      string
	// readers are the callers (besides root and sifd's user) who may read
	// the files: what the kernel says, written out so the test reads as a
	// table.
	readers []string
}

var places = []place{
	{"pub", 0o755, [2]int{0, 0}, "", 0o644, [2]int{0, 0}, "", []string{"alice", "bob", "carol", "dave"}},
	{"grp", 0o755, [2]int{0, 0}, "", 0o640, [2]int{0, gidTeam}, "", []string{"alice", "carol"}},
	{"own", 0o755, [2]int{0, 0}, "", 0o600, [2]int{uidAlice, uidAlice}, "", []string{"alice"}},
	{"priv", 0o700, [2]int{uidAlice, uidAlice}, "", 0o644, [2]int{uidAlice, uidAlice}, "", []string{"alice"}},
	{"teamdir", 0o750, [2]int{0, gidTeam}, "", 0o644, [2]int{0, 0}, "", []string{"alice", "carol"}},
	{"acl", 0o755, [2]int{0, 0}, "", 0o600, [2]int{0, 0}, fmt.Sprintf("u:%d:r", uidBob), []string{"bob"}},
	{"acldir", 0o700, [2]int{0, 0}, fmt.Sprintf("u:%d:rx", uidCarol), 0o644, [2]int{0, 0}, "", []string{"carol"}},
	{"revoked", 0o755, [2]int{0, 0}, "", 0o644, [2]int{0, 0}, "", nil}, // made 0600 after it is indexed
}

// TestAnswersFilteredByCallersRights runs sifd as its own user with
// CAP_DAC_READ_SEARCH on a shared socket, indexes files of many owners,
// modes, groups and ACLs, and asks every route as several users: each
// answer names exactly the files the kernel lets that user open, and counts
// only those.
func TestAnswersFilteredByCallersRights(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: sifd and sifctl run as other users here (CI runs as root)")
	}
	if _, err := exec.LookPath("setfacl"); err != nil {
		t.Fatal("setfacl is missing: install the acl package (.ci/run does)")
	}
	e := newEnv(t)
	os.Chmod(e.root, 0o755)
	// A second root nobody but root and sifd may enter.
	hidden := filepath.Join(e.dir, "hidden")
	must(t, os.Mkdir(hidden, 0o700))
	base := words(901, 6000)
	copyContent := words(902, 3000)
	var variants, copies []string
	for i, p := range places {
		dir := filepath.Join(e.root, p.dir)
		must(t, os.Mkdir(dir, 0o755))
		v := filepath.Join(dir, "v.txt")
		c := filepath.Join(dir, "copy.txt")
		must(t, os.WriteFile(v, edit(uint64(i), base, 0.08), 0o644))
		must(t, os.WriteFile(c, copyContent, 0o644))
		for _, f := range []string{v, c} {
			must(t, os.Chown(f, p.owner[0], p.owner[1]))
			must(t, os.Chmod(f, p.fileMode))
			if p.acl != "" {
				setfacl(t, p.acl, f)
			}
		}
		must(t, os.Chown(dir, p.dirOwner[0], p.dirOwner[1]))
		must(t, os.Chmod(dir, p.dirMode))
		if p.dirACL != "" {
			setfacl(t, p.dirACL, dir)
		}
		variants, copies = append(variants, v), append(copies, c)
	}
	hv := filepath.Join(hidden, "v.txt")
	hc := filepath.Join(hidden, "copy.txt")
	must(t, os.WriteFile(hv, edit(99, base, 0.08), 0o644))
	must(t, os.WriteFile(hc, copyContent, 0o644))
	variants, copies = append(variants, hv), append(copies, hc)
	// The query: readable by all, outside the roots.
	qdir := filepath.Join(e.dir, "q")
	must(t, os.Mkdir(qdir, 0o755))
	query := filepath.Join(qdir, "query.txt")
	must(t, os.WriteFile(query, base, 0o644))

	e.daemonAttr = asSystemService()
	e.start("--root", hidden, "--socket-access", "all", "--operator-group", fmt.Sprint(gidOps))
	if st, err := os.Stat(e.socket); err != nil || st.Mode().Perm() != 0o666 {
		t.Fatalf("socket with --socket-access all: %v, mode %v; want 0666", err, st.Mode().Perm())
	}
	all := append(slices.Clone(variants), copies...)
	if got := e.status().Index.Files; got != uint64(len(all)) {
		t.Fatalf("root sees %d indexed files, want %d (sifd could not read some?)\n%s", got, len(all), e.logs.String())
	}
	// A file made unreadable to everyone after it was indexed.
	for _, f := range []string{filepath.Join(e.root, "revoked", "v.txt"), filepath.Join(e.root, "revoked", "copy.txt")} {
		must(t, os.Chmod(f, 0o600))
	}

	callers := []who{asRoot, asDaemon, asAlice, asBob, asCarol, asDave}
	seen := map[string]map[string]bool{} // similar's answer: caller → path → listed
	for _, w := range callers {
		t.Run(w.name, func(t *testing.T) {
			truth := kernelReadable(t, w, all)
			sees := func(paths []string) []string {
				return slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return !truth[p] && w.cred != nil && w != asDaemon })
			}
			// The table agrees with the kernel (for the callers it names).
			for i, p := range places {
				for _, f := range []string{variants[i], copies[i]} {
					if w.cred == nil || w == asDaemon {
						break
					}
					if want := slices.Contains(p.readers, w.name); truth[f] != want {
						t.Fatalf("the kernel says %s may read %s: %v; the table says %v", w.name, f, truth[f], want)
					}
				}
			}
			wantVariants, wantCopies := sees(variants), sees(copies)

			// similar: exactly the readable files, identical copies included.
			r := e.sifctlAs(w, "similar", "--json", "--threshold", "10", query)
			var sim similarJSON
			if err := json.Unmarshal([]byte(r.stdout), &sim); err != nil && r.code != 1 {
				t.Fatalf("similar: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
			}
			var got []string
			seen[w.name] = map[string]bool{}
			for _, m := range sim.Matches {
				got = append(got, m.Path)
				seen[w.name][m.Path] = true
			}
			if g, want := sorted(got), sorted(wantVariants); !slices.Equal(g, want) {
				t.Errorf("similar as %s:\n got %q\nwant %q", w.name, g, want)
			}

			// groups: only readable files, in one group when two or more.
			r = e.sifctlAs(w, "groups", "--json", "--threshold", "30")
			var gr ipc.GroupsResponse
			if r.code == 0 || r.code == 1 {
				if err := json.Unmarshal([]byte(r.stdout), &gr); err != nil {
					t.Fatalf("groups: %v\n%s", err, r.stdout)
				}
			} else {
				t.Fatalf("groups: exit %d: %s", r.code, r.stderr)
			}
			got = nil
			for _, g := range gr.Groups {
				got = append(got, groupPaths(g)...)
			}
			want := wantVariants
			if len(want) < 2 {
				want = nil
			}
			if g, w2 := sorted(got), sorted(want); !slices.Equal(g, w2) {
				t.Errorf("groups as %s:\n got %q\nwant %q", w.name, g, w2)
			}

			// dupes: a set of the readable copies only.
			r = e.sifctlAs(w, "dupes", "--json")
			var dp ipc.DupesResponse
			if err := json.Unmarshal([]byte(r.stdout), &dp); err != nil {
				t.Fatalf("dupes: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
			}
			got = nil
			for _, s := range dp.Sets {
				for _, f := range s.Files {
					got = append(got, f.Path)
				}
			}
			want = wantCopies
			if len(want) < 2 {
				want = nil
			}
			if g, w2 := sorted(got), sorted(want); !slices.Equal(g, w2) {
				t.Errorf("dupes as %s:\n got %q\nwant %q", w.name, g, w2)
			}

			// status and roots: the roots the caller can list; counts
			// only for those who see everything.
			r = e.sifctlAs(w, "status", "--json")
			var st ipc.Status
			if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
				t.Fatalf("status: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
			}
			privileged := w.cred == nil || w == asDaemon
			var roots []string
			for _, rs := range st.Roots {
				roots = append(roots, rs.Path)
				if !privileged && (rs.FilesSeen != 0 || rs.FilesDone != 0 || rs.FilesRead != 0) {
					t.Errorf("status as %s counts files under %s: %+v", w.name, rs.Path, rs)
				}
			}
			wantRoots := []string{e.root}
			if privileged {
				wantRoots = []string{e.root, hidden}
			}
			if g, w2 := sorted(roots), sorted(wantRoots); !slices.Equal(g, w2) {
				t.Errorf("status roots as %s: %q, want %q", w.name, g, w2)
			}
			if privileged {
				if st.Redacted || st.Index.Files != uint64(len(all)) || st.Counters.Indexed == 0 {
					t.Errorf("status as %s: redacted %v, %d files, %d indexed; want the whole index", w.name, st.Redacted, st.Index.Files, st.Counters.Indexed)
				}
			} else if !st.Redacted || st.Index != (ipc.IndexStats{}) || st.Counters != (ipc.Counters{}) || st.DB != "" || len(st.LastError) > 0 {
				t.Errorf("status as %s leaks counts or paths: %+v", w.name, st)
			}
			r = e.sifctlAs(w, "roots", "list", "--json")
			if !strings.Contains(r.stdout, e.root) || strings.Contains(r.stdout, hidden) != privileged {
				t.Errorf("roots list as %s: %s%s", w.name, r.stdout, r.stderr)
			}

			// wait is for everyone.
			if r := e.sifctlAs(w, "wait", "--timeout", "60s"); r.code != 0 {
				t.Errorf("wait as %s: exit %d: %s", w.name, r.code, r.stderr)
			}
		})
	}

	// The matrix the answers showed, for the record.
	var tab strings.Builder
	fmt.Fprintf(&tab, "%-44s", "file (dir mode owner:group / file mode owner:group acl)")
	for _, w := range callers {
		fmt.Fprintf(&tab, " %-6.6s", w.name)
	}
	for i, p := range append(slices.Clone(places), place{dir: "second root"}) {
		desc := fmt.Sprintf("%s (%o %d:%d%s / %o %d:%d%s)", p.dir, p.dirMode, p.dirOwner[0], p.dirOwner[1], aclNote(p.dirACL),
			p.fileMode, p.owner[0], p.owner[1], aclNote(p.acl))
		if p.dir == "second root" {
			desc = "second root (0700 0:0 / 0644 0:0)"
		} else if p.dir == "revoked" {
			desc += " then 0600"
		}
		fmt.Fprintf(&tab, "\n%-44s", desc)
		for _, w := range callers {
			mark := "-"
			if seen[w.name][variants[i]] {
				mark = "yes"
			}
			fmt.Fprintf(&tab, " %-6s", mark)
		}
	}
	t.Logf("files listed by similar, per caller:\n%s", tab.String())

	// Changing the daemon: root, sifd's user and the operator group only,
	// and an operator only for directories they can read.
	extra := filepath.Join(e.dir, "extra")
	must(t, os.Mkdir(extra, 0o755))
	e.write("pub/more.txt", words(903, 2000))
	for _, w := range []who{asAlice, asCarol, asDave} {
		for _, args := range [][]string{{"roots", "add", extra}, {"roots", "remove", e.root}, {"rescan"}, {"rescan", e.root}} {
			r := e.sifctlAs(w, args...)
			if r.code != 2 || !strings.Contains(r.stderr, "is for root") || !strings.Contains(r.stderr, "Ask an administrator") {
				t.Errorf("%s: sifctl %v: exit %d, stderr %q; want a 403 saying what to do", w.name, args, r.code, r.stderr)
			}
		}
	}
	if r := e.sifctlAs(asBob, "roots", "add", filepath.Join(e.root, "priv")); r.code != 2 || !strings.Contains(r.stderr, "cannot read this directory") {
		t.Errorf("bob adding alice's private directory: exit %d, %q", r.code, r.stderr)
	}
	if r := e.sifctlAs(asBob, "rescan", hidden); r.code != 2 || !strings.Contains(r.stderr, "cannot read this directory") {
		t.Errorf("bob rescanning a root he cannot read: exit %d, %q", r.code, r.stderr)
	}
	if r := e.sifctlAs(asBob, "rescan"); r.code != 0 || strings.Contains(r.stdout, hidden) {
		t.Errorf("bob rescanning every root: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.sifctlAs(asBob, "roots", "add", extra); r.code != 0 {
		t.Errorf("bob (operator) adding a readable directory: exit %d, %s", r.code, r.stderr)
	}
	if r := e.sifctlAs(asDaemon, "roots", "remove", extra); r.code != 0 {
		t.Errorf("sifd's user removing a root: exit %d, %s", r.code, r.stderr)
	}
	e.stop()
}

func aclNote(acl string) string {
	if acl == "" {
		return ""
	}
	return " acl " + acl
}

func groupPaths(g ipc.Group) []string {
	var ps []string
	for _, f := range append([]ipc.GroupFile{g.Reference}, g.Members...) {
		ps = append(ps, f.Path)
		for _, c := range f.Copies {
			ps = append(ps, c.Path)
		}
	}
	return ps
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func setfacl(t *testing.T, spec, p string) {
	t.Helper()
	if out, err := exec.Command("setfacl", "-m", spec, p).CombinedOutput(); err != nil {
		t.Fatalf("setfacl -m %s %s: %v\n%s", spec, p, err, out)
	}
}
