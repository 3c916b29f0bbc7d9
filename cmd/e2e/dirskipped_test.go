//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSimilarDirSkipped: `sifctl similar DIR`, run by a user who cannot
// read all of DIR, names on stderr what it skipped, the directories the
// walk could not list first and then, by path, the files it could not
// fingerprint; it counts them, still prints its answer, and exits 2.
func TestSimilarDirSkipped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs sifctl as another user: run it as root")
	}
	e := newEnv(t)
	proj := project(300)
	writeTree(t, filepath.Join(e.root, "orig"), proj)
	e.start()

	q := filepath.Join(e.dir, "q")
	writeTree(t, q, proj)
	for _, name := range []string{"zz-secret", "a-secret"} {
		if err := os.WriteFile(filepath.Join(q, name), words(7, 4000), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	locked := filepath.Join(q, "locked")
	writeTree(t, locked, map[string][]byte{"hidden.txt": words(8, 4000)})
	os.Chmod(locked, 0o700)
	filepath.WalkDir(q, func(p string, d os.DirEntry, _ error) error {
		if d.IsDir() && p != locked {
			os.Chmod(p, 0o755)
		}
		return nil
	})

	// The daemon's own user: it may use the socket, and reads neither the
	// secrets nor the locked directory.
	r := e.sifctlAs(who{"sifd's own user", &syscall.Credential{Uid: nobody, Gid: nobody}}, "similar", "--json", q)
	var out dirJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 2 {
		t.Fatalf("exit %d, %v: %q (stderr %s)", r.code, err, r.stdout, r.stderr)
	}
	// The secrets are files the walk found, and count as such.
	if out.Unreadable != 3 || out.Files != len(proj)+2 || len(out.Matches) == 0 || out.Matches[0].Path != filepath.Join(e.root, "orig") {
		t.Errorf("%d unreadable, %d files, matches %+v; want 3, %d, the original first", out.Unreadable, out.Files, out.Matches, len(proj)+2)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	want := []string{locked, filepath.Join(q, "a-secret"), filepath.Join(q, "zz-secret")}
	if len(lines) != len(want) {
		t.Fatalf("stderr %q, want a line for each of %v", r.stderr, want)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "sifctl: "+want[i]+": ") || !strings.HasSuffix(l, "permission denied (skipped)") {
			t.Errorf("stderr line %d: %q, want %s named, permission denied, skipped", i+1, l, want[i])
		}
	}
}
