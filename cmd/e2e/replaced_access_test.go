//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/sif-dev/sif/ipc"
)

// TestReplacedFileNotAnsweredOnUntilReadAgain: a file dave cannot read is
// indexed in a directory he owns; he moves it aside and puts a file of his
// own, readable by all, at its path. Until sifd has read the path again,
// its index holds the first file's fingerprints under that path, and an
// answer computed on them would tell dave how much of his guesses the
// file he could not read contains. The settle delay is long here, so the
// replacement waits unread: similar and groups, asked by dave, leave the
// path out, while root still sees the record. Once sifd has read the path
// again (a restart), its record is of dave's file.
func TestReplacedFileNotAnsweredOnUntilReadAgain(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: sifd and sifctl run as other users here (CI runs as root)")
	}
	e := newEnv(t)
	must(t, os.Chmod(e.root, 0o755))
	secret := words(931, 6000)
	home := filepath.Join(e.root, "dave")
	must(t, os.Mkdir(home, 0o755))
	must(t, os.Chown(home, uidDave, uidDave))
	p := filepath.Join(home, "notes.txt")
	must(t, os.WriteFile(p, secret, 0o600)) // root's, in dave's directory
	// A near-copy of it that everyone may read, for groups to link it to.
	pub := filepath.Join(e.root, "pub")
	must(t, os.Mkdir(pub, 0o755))
	near := filepath.Join(pub, "near.txt")
	must(t, os.WriteFile(near, edit(932, secret, 0.05), 0o644))
	// Dave's guess of the secret, outside the roots.
	qdir := filepath.Join(e.dir, "q")
	must(t, os.Mkdir(qdir, 0o755))
	guess := filepath.Join(qdir, "guess.txt")
	must(t, os.WriteFile(guess, secret, 0o644))

	e.daemonAttr = asSystemService()
	args := []string{"--socket-access", "all", "--settle-delay", "10m", "--max-settle-delay", "20m"}
	e.start(args...)

	// --fast: the index's estimates, as a sync tool sending fingerprints
	// gets them (the check of the best matches reads their current bytes).
	similarAs := func(w who) []string {
		t.Helper()
		r := e.sifctlAs(w, "similar", "--json", "--fast", "--threshold", "10", guess)
		var sim similarJSON
		if err := json.Unmarshal([]byte(r.stdout), &sim); err != nil {
			t.Fatalf("similar as %s: exit %d, %v\n%s%s", w.name, r.code, err, r.stdout, r.stderr)
		}
		var got []string
		for _, m := range sim.Matches {
			got = append(got, fmt.Sprintf("%s %.0f%%", m.Path, m.Containment))
		}
		return got
	}
	groupsAs := func(w who) []string {
		t.Helper()
		r := e.sifctlAs(w, "groups", "--json", "--threshold", "30")
		var gr ipc.GroupsResponse
		if err := json.Unmarshal([]byte(r.stdout), &gr); err != nil {
			t.Fatalf("groups as %s: exit %d, %v\n%s%s", w.name, r.code, err, r.stdout, r.stderr)
		}
		var got []string
		for _, g := range gr.Groups {
			got = append(got, groupPaths(g)...)
		}
		return sorted(got)
	}
	has := func(lines []string, path string) bool {
		return slices.ContainsFunc(lines, func(l string) bool { return l == path || len(l) > len(path) && l[:len(path)+1] == path+" " })
	}

	// Before: dave cannot read the file, and is not answered on it.
	if got := similarAs(asDave); has(got, p) || !has(got, near) {
		t.Fatalf("similar as dave before the swap: %q; want %s and not %s", got, near, p)
	}

	// Dave moves the file aside (his directory) and puts his own there.
	swap := exec.Command("/bin/sh", "-c", `mv notes.txt old.txt && printf 'a file of my own, nothing like the other one\n' > notes.txt && chmod 644 notes.txt`)
	swap.Dir = home
	swap.SysProcAttr = &syscall.SysProcAttr{Credential: asDave.cred}
	if out, err := swap.CombinedOutput(); err != nil {
		t.Fatalf("the swap as dave: %v\n%s", err, out)
	}
	if readable := kernelReadable(t, asDave, []string{p}); !readable[p] {
		t.Fatalf("dave cannot read his own %s", p)
	}

	// The swap waits in the settler: root still sees the old record.
	if got := similarAs(asRoot); !has(got, p) {
		t.Fatalf("similar as root after the swap, before sifd read it again: %q; want %s listed (the test needs the old record in place)", got, p)
	}
	if got := similarAs(asDave); has(got, p) {
		t.Errorf("similar as dave lists %s while its record is of the file he could not read: %q", p, got)
	}
	if got := groupsAs(asDave); slices.Contains(got, p) {
		t.Errorf("groups as dave links %s on the file he could not read: %q", p, got)
	}
	if got := groupsAs(asRoot); !slices.Contains(got, p) || !slices.Contains(got, near) {
		t.Errorf("groups as root: %q; want %s and %s", got, p, near)
	}

	// Read again (a restart rescans the root): dave is answered on his own
	// file, which is like nothing in the index.
	e.stop()
	e.start(args...)
	old := filepath.Join(home, "old.txt")
	if got := similarAs(asRoot); !has(got, old) || has(got, p) {
		t.Errorf("similar as root once read again: %q; want %s and not %s", got, old, p)
	}
	if got := similarAs(asDave); has(got, p) || has(got, old) || !has(got, near) {
		t.Errorf("similar as dave once read again: %q; want %s, and neither %s nor %s", got, near, p, old)
	}
}
