//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// A root on a kernel pseudo-filesystem (/proc/self here, which would
// have the daemon scan its own process) is refused at each entry point,
// with a message naming the root and the filesystem: sifd run --root, a
// root in the configuration file, and sifctl roots add.
func TestPseudoFSRootRefused(t *testing.T) {
	e := newEnv(t)
	want := func(what string, r result, code int, root, fs string) {
		t.Helper()
		if r.code != code || !strings.Contains(r.stderr, root) || !strings.Contains(r.stderr, "on "+fs+", a kernel pseudo-filesystem") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming %s and %s", what, r.code, r.stderr, code, root, fs)
		}
	}
	// (Accepted, such a root would keep sifd running: give up after 20 s.)
	r, _ := runIn(t, e.dir, nil, 20*time.Second, sifdBin, "run", "--root", "/proc/self", "--db", e.db, "--socket", e.socket, "--config", "")
	want("sifd run --root /proc/self", r, 2, "/proc/self", "proc")
	if _, err := os.Stat(e.db); err == nil {
		t.Errorf("sifd run --root /proc/self made the index directory %s before refusing", e.db)
	}

	conf := filepath.Join(e.dir, "config.toml")
	os.WriteFile(conf, []byte("roots = [\"/sys/kernel\"]\n"), 0o644)
	r, _ = runIn(t, e.dir, nil, 20*time.Second, sifdBin, "run", "--config", conf, "--db", e.db, "--socket", e.socket)
	want("roots in the configuration file", r, 2, "/sys/kernel", "sysfs")
	if !strings.Contains(r.stderr, conf+":1: roots:") {
		t.Errorf("the configuration's error does not name the file, line and key: %q", r.stderr)
	}

	e.write("a.txt", words(1, 8000))
	e.start()
	r = e.sifctl("roots", "add", "/proc/self")
	want("sifctl roots add /proc/self", r, 2, "/proc/self", "proc")
	r = e.sifctl("roots", "add", "/dev")
	want("sifctl roots add /dev", r, 2, "/dev", "devtmpfs")
	if st := e.status(); len(st.Roots) != 1 || st.Roots[0].Path != e.root {
		t.Errorf("roots after the refused adds: %+v", st.Roots)
	}
}

// A root that goes missing is logged once, at warn level, naming the root
// and why; its return is logged at info level. (The first to notice may be
// a worker that finds a file of it gone, before the fault loop looks.)
func TestRootMissingLogged(t *testing.T) {
	e := newEnv(t)
	files := e.corpus("m", 5, 300)
	e.start("--settle-delay", "20ms")
	away := e.root + ".away"
	if err := os.Rename(e.root, away); err != nil {
		t.Fatal(err)
	}
	e.until(20*time.Second, "missing root", func(st *ipc.Status) bool { return st.Roots[0].State == ipc.RootMissing })
	time.Sleep(2500 * time.Millisecond) // a fault poll more, which must not log it again
	logs := e.logs.String()
	line := lineWith(logs, "root is missing")
	if line == "" || !strings.Contains(line, "level=WARN") || !strings.Contains(line, "root="+e.root) ||
		!strings.Contains(line, `why="not found"`) || !strings.Contains(line, "no such file or directory") {
		t.Errorf("log line of the missing root: %q\nlog:\n%s", line, logs)
	}
	if n := strings.Count(logs, "root is missing"); n != 1 {
		t.Errorf("the missing root was logged %d times, want once", n)
	}
	if err := os.Rename(away, e.root); err != nil {
		t.Fatal(err)
	}
	e.until(20*time.Second, "root back", func(st *ipc.Status) bool { return st.Roots[0].State == ipc.RootWatching })
	line = lineWith(e.logs.String(), "root is back")
	if !strings.Contains(line, "level=INFO") || !strings.Contains(line, "root="+e.root) {
		t.Errorf("log line of the root back: %q", line)
	}
	e.waitApplied()
	e.allFound(files)
}
