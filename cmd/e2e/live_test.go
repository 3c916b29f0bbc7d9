//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// waitApplied runs sifctl wait and fails the test if it does not succeed.
func (e *env) waitApplied() ipc.WaitResponse {
	e.t.Helper()
	r := e.sifctl("wait", "--json", "--timeout", "60s")
	if r.code != 0 {
		e.t.Fatalf("sifctl wait: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	var w ipc.WaitResponse
	if err := json.Unmarshal([]byte(r.stdout), &w); err != nil {
		e.t.Fatalf("sifctl wait --json: %v\n%s", err, r.stdout)
	}
	return w
}

// topMatch returns the best match of query, or "" if there is none.
func (e *env) topMatch(query string) string {
	e.t.Helper()
	_, out := e.similar(query)
	if len(out) != 1 || len(out[0].Matches) == 0 {
		return ""
	}
	return out[0].Matches[0].Path
}

func (e *env) indexed(path string) bool {
	e.t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		e.t.Fatal(err)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	// A query never lists its own path: ask with a copy.
	_, out := e.similar(e.query("q-indexed", content))
	for _, m := range out[0].Matches {
		if m.Path == path && m.Size == st.Size() && m.MtimeNs == st.ModTime().UnixNano() {
			return true
		}
	}
	return false
}

// A query file outside the root, with content, to ask about.
func (e *env) query(name string, content []byte) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// Changes made while sifd runs reach the index: creation, edit, editor
// save, rename, move of a directory, deletion. Moves are recognised by
// inode and not read again.
func TestLiveChanges(t *testing.T) {
	e := newEnv(t)
	e.write("keep.txt", words(1, 20000))
	e.start("--settle-delay", "30ms")

	a := words(2, 30000)
	pa := e.write("a.txt", a)
	if w := e.waitApplied(); w.Cookies != 1 {
		t.Errorf("wait used %d cookies, want 1 (rescanned %v)", w.Cookies, w.Rescanned)
	}
	if got := e.topMatch(e.query("qa", a)); got != pa {
		t.Fatalf("new file: top match %q, want %s", got, pa)
	}

	// Edit in place: the index holds the new version.
	a2 := edit(3, a, 0.3)
	os.WriteFile(pa, a2, 0o644)
	e.waitApplied()
	if !e.indexed(pa) {
		t.Errorf("edited file: index does not hold its new version")
	}

	// An editor's save: write a temporary file, rename it over.
	before := e.status().Counters.Indexed
	a3 := edit(4, a2, 0.1)
	tmp := filepath.Join(e.root, ".a.txt.swp")
	os.WriteFile(tmp, a3, 0o644)
	os.Rename(tmp, pa)
	e.waitApplied()
	if !e.indexed(pa) {
		t.Errorf("saved file: index does not hold its new version")
	}
	if n := e.status().Counters.Indexed - before; n != 1 {
		t.Errorf("an editor's save cost %d reads, want 1", n)
	}

	// Rename, and move a whole directory: no read.
	e.write("dir/sub/b.txt", words(5, 30000))
	e.write("dir/c.txt", words(6, 30000))
	e.waitApplied()
	st := e.status().Counters
	pb := filepath.Join(e.root, "a-renamed.txt")
	os.Rename(pa, pb)
	os.Rename(filepath.Join(e.root, "dir"), filepath.Join(e.root, "moved"))
	e.waitApplied()
	st2 := e.status().Counters
	if st2.Indexed != st.Indexed || st2.Renamed-st.Renamed != 3 {
		t.Errorf("rename of a file and of a directory holding 2: %d reads, %d renamed; want 0 and 3",
			st2.Indexed-st.Indexed, st2.Renamed-st.Renamed)
	}
	if got := e.topMatch(e.query("qa3", a3)); got != pb {
		t.Errorf("renamed file: top match %q, want %s", got, pb)
	}
	if got := e.topMatch(e.query("qb", words(5, 30000))); got != filepath.Join(e.root, "moved", "sub", "b.txt") {
		t.Errorf("file in a moved directory: top match %q", got)
	}

	// Deletion of a file and of a directory.
	os.Remove(pb)
	os.RemoveAll(filepath.Join(e.root, "moved"))
	e.waitApplied()
	if got := e.topMatch(e.query("qa3", a3)); got != "" {
		t.Errorf("deleted file still matches: %q", got)
	}
	if st := e.status(); st.Index.Files != 1 {
		t.Errorf("after deletions the index holds %d files, want 1", st.Index.Files)
	}
	for _, r := range e.status().Roots {
		if r.State != ipc.RootWatching {
			t.Errorf("root %s: state %q, want %q", r.Path, r.State, ipc.RootWatching)
		}
	}
}

// Exclusions and size limits apply to scans and to live changes.
func TestExcludeAndSizeLimits(t *testing.T) {
	e := newEnv(t)
	e.write(".git/objects/x", words(1, 5000))
	e.write("src/main.txt", words(2, 5000))
	e.write("src/.main.txt.swp", words(3, 5000))
	e.write("tiny.txt", []byte("tiny"))
	e.start("--settle-delay", "20ms", "--exclude", ".git/", "--exclude", "*.swp", "--min-size", "100")
	e.write(".git/objects/y", words(4, 5000))
	e.write("node.swp", words(5, 5000))
	e.write("src/new.txt", words(6, 5000))
	e.waitApplied()
	e.stop()
	r := run(t, sifdBin, "dump", "--db", e.db)
	var paths []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		paths = append(paths, strings.TrimPrefix(strings.Fields(l)[0], `"`+e.root+"/"))
	}
	want := []string{`src/main.txt"`, `src/new.txt"`}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("indexed %v, want %v", paths, want)
	}
}

// sifctl roots add and remove change the roots at run time, and the change
// outlives a restart.
func TestRootsAddRemove(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(1, 20000))
	other := filepath.Join(e.dir, "other")
	os.Mkdir(other, 0o777)
	os.Chmod(other, 0o777)
	ob := words(2, 20000)
	os.WriteFile(filepath.Join(other, "b.txt"), ob, 0o644)
	e.start("--settle-delay", "20ms")

	if r := e.sifctl("roots", "add", other); r.code != 0 {
		t.Fatalf("roots add: exit %d: %s", r.code, r.stderr)
	}
	e.waitApplied()
	if got := e.topMatch(e.query("qb", ob)); got != filepath.Join(other, "b.txt") {
		t.Fatalf("file of an added root: top match %q", got)
	}
	// Live changes in the added root are watched.
	oc := words(3, 20000)
	os.WriteFile(filepath.Join(other, "c.txt"), oc, 0o644)
	e.waitApplied()
	if got := e.topMatch(e.query("qc", oc)); got != filepath.Join(other, "c.txt") {
		t.Errorf("file created in an added root: top match %q", got)
	}
	if r := e.sifctl("roots", "add", filepath.Join(e.root)); r.code != 2 || !strings.Contains(r.stderr, "already") {
		t.Errorf("adding a root twice: exit %d, stderr %q", r.code, r.stderr)
	}

	// The added root survives a restart.
	e.stop()
	e.start("--settle-delay", "20ms")
	r := e.sifctl("roots", "--json")
	if !strings.Contains(r.stdout, other) {
		t.Fatalf("after restart, roots do not list %s:\n%s", other, r.stdout)
	}

	// Removing a configured root persists too, and drops its files.
	if r := e.sifctl("roots", "remove", e.root); r.code != 0 {
		t.Fatalf("roots remove: exit %d: %s", r.code, r.stderr)
	}
	e.waitApplied()
	if got := e.topMatch(e.query("qa", words(1, 20000))); got != "" {
		t.Errorf("file of a removed root still matches: %q", got)
	}
	e.stop()
	e.start("--settle-delay", "20ms")
	st := e.status()
	if len(st.Roots) != 1 || st.Roots[0].Path != other || st.Index.Files != 2 {
		t.Errorf("after restart: roots %v, %d files; want only %s with 2 files", st.Roots, st.Index.Files, other)
	}
	if r := e.sifctl("roots", "remove", filepath.Join(e.dir, "nope")); r.code != 2 || !strings.Contains(r.stderr, "not a root") {
		t.Errorf("removing a non-root: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Without watching, sifctl wait rescans, and sifctl rescan queues a
// reconcile that finds changes.
func TestNoWatchRescan(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(1, 20000))
	e.start("--no-watch")
	b := words(2, 20000)
	pb := e.write("sub/b.txt", b)
	w := e.waitApplied()
	if w.Cookies != 0 || len(w.Rescanned) != 1 {
		t.Errorf("wait without watching: %+v, want a rescan of the root", w)
	}
	if got := e.topMatch(e.query("qb", b)); got != pb {
		t.Errorf("file found by the wait's rescan: top match %q", got)
	}
	st := e.status()
	if st.Roots[0].State != ipc.RootPolling {
		t.Errorf("root state %q, want %q", st.Roots[0].State, ipc.RootPolling)
	}
	os.Remove(pb)
	if r := e.sifctl("rescan", filepath.Join(e.root, "sub")); r.code != 0 || !strings.Contains(r.stdout, "queued 1") {
		t.Errorf("rescan DIR: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	e.waitApplied()
	if got := e.topMatch(e.query("qb", b)); got != "" {
		t.Errorf("deleted file still matches after rescan: %q", got)
	}
	if r := e.sifctl("rescan", e.dir); r.code != 2 || !strings.Contains(r.stderr, "not under any root") {
		t.Errorf("rescan outside the roots: exit %d, stderr %q", r.code, r.stderr)
	}
}

// SIGHUP reloads the configuration file: new exclusions apply at once; an
// invalid file is refused and the running configuration stays.
func TestReload(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(1, 20000))
	e.write("b.log", words(2, 20000))
	cfg := filepath.Join(e.dir, "sifd.toml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(cfg, 0o644)
	}
	write("settle_delay = \"20ms\"\n")
	e.start("--config", cfg)
	if st := e.status(); st.Index.Files != 2 {
		t.Fatalf("%d files indexed, want 2", st.Index.Files)
	}

	write("settle_delay = \"20ms\"\nexclude = [\"*.log\"]\n")
	e.daemon.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(30 * time.Second)
	for e.status().Index.Files != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("after SIGHUP with exclude *.log, still %d files\n%s", e.status().Index.Files, e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	write("exclude = [\"[\"]\n")
	e.daemon.Process.Signal(syscall.SIGHUP)
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(strings.Join(e.status().LastError, "\n"), "reload") {
		if time.Now().After(deadline) {
			t.Fatalf("an invalid configuration on SIGHUP left no error in the status\n%s", e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Still running, with the previous exclusions.
	e.write("c.log", words(3, 20000))
	e.waitApplied()
	if st := e.status(); st.Index.Files != 1 {
		t.Errorf("after a refused reload: %d files, want 1 (c.log excluded)", st.Index.Files)
	}
}
