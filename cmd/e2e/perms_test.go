//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// denied returns the paths root's status lists as denied, or nil.
func denied(st *ipc.Status) []string {
	if len(st.Roots) == 0 || st.Roots[0].Denied == nil {
		return nil
	}
	return st.Roots[0].Denied.Paths
}

// Files sifd (not root: it runs as nobody here) may not read come back by
// themselves once they may be read again, without sifctl rescan, and are
// listed in the status meanwhile: a directory locked (chmod 000) before
// the daemon starts, a file locked then, a directory locked while the
// daemon runs, and a file locked while it runs. In the end the index
// equals a fresh scan.
func TestPermissionDeniedComesBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run sifd as another user whom permissions bind")
	}
	e := newEnv(t)
	n := 0
	mk := func(dir string, count int) []string {
		var out []string
		for i := range count {
			n++
			out = append(out, e.write(fmt.Sprintf("%s/f%03d.txt", dir, i), words(uint64(5000+n), 3000)))
		}
		return out
	}
	open := mk("open", 50)
	lockedFiles := append(mk("locked", 40), mk("locked/sub", 10)...)
	lockedFile := mk("loose", 1)[0]
	locked := filepath.Join(e.root, "locked")
	openDir := filepath.Join(e.root, "open")
	total := uint64(n)
	chmod := func(p string, mode os.FileMode) {
		t.Helper()
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	chmod(locked, 0)
	chmod(lockedFile, 0)
	e.start("--settle-delay", "50ms")

	st := e.status()
	if got, want := denied(st), []string{lockedFile, locked}; !sameSet(got, want) || st.Roots[0].Denied.Count != 2 {
		t.Errorf("denied at start: %+v, want %v", st.Roots[0].Denied, want)
	}
	if want := total - uint64(len(lockedFiles)) - 1; st.Index.Files != want {
		t.Errorf("%d files indexed at start, want %d", st.Index.Files, want)
	}
	text := e.sifctl("status").stdout
	if !strings.Contains(text, "permission denied: 2 paths left out") || !strings.Contains(text, "      "+locked+"\n") {
		t.Errorf("sifctl status does not list what is denied:\n%s", text)
	}

	// Unlocked, they come back within seconds, by themselves.
	chmod(locked, 0o755)
	chmod(lockedFile, 0o644)
	t0 := time.Now()
	e.until(10*time.Second, "the unlocked files indexed", func(st *ipc.Status) bool {
		return st.Index.Files == total && denied(st) == nil
	})
	t.Logf("locked at start: back %v after chmod", time.Since(t0).Round(time.Millisecond))
	e.waitApplied()
	// The directory locked at start is watched now, below it too.
	fresh := e.write("locked/sub/new.txt", words(4999, 3000))
	total++
	e.waitApplied()
	for _, p := range []string{lockedFiles[0], lockedFiles[len(lockedFiles)-1], lockedFile, fresh} {
		if !e.indexed(p) {
			t.Errorf("%s not indexed once readable", p)
		}
	}

	// Locked while the daemon runs: left out and listed, then back.
	chmod(openDir, 0)
	chmod(lockedFiles[3], 0)
	// The paths are listed as the rescan meets them; their files leave
	// the index with its next batch, so the two are waited for together.
	want := total - uint64(len(open)) - 1
	e.until(10*time.Second, fmt.Sprintf("the directory and file locked while running listed, and %d files left indexed", want), func(st *ipc.Status) bool {
		return sameSet(denied(st), []string{openDir, lockedFiles[3]}) && st.Index.Files == want
	})
	chmod(openDir, 0o755)
	chmod(lockedFiles[3], 0o644)
	t0 = time.Now()
	e.until(10*time.Second, "the files locked while running back", func(st *ipc.Status) bool {
		return st.Index.Files == total && denied(st) == nil
	})
	t.Logf("locked while running: back %v after chmod", time.Since(t0).Round(time.Millisecond))
	if r := e.sifctl("status"); strings.Contains(r.stdout, "left out, retried") {
		t.Errorf("sifctl status still lists denied paths:\n%s", r.stdout)
	}
	if !slices.Contains(open, filepath.Join(openDir, "f000.txt")) {
		t.Fatal("test tree not as expected")
	}
	checkAgainstFreshScan(t, e)
}
