//go:build unix

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// TestScanSkipsTroublesomeFiles: fifos, sockets, devices, symlinks (also in a
// loop), unreadable files and directories, files above the size limit and
// non-UTF-8 names neither stop the scan nor hang it; each is counted, and
// the daemon answers queries afterwards.
func TestScanSkipsTroublesomeFiles(t *testing.T) {
	e := newEnv(t)
	good := e.write("good.txt", words(10, 20000))
	e.write("good-edit.txt", edit(11, words(10, 20000), 0.2))

	if err := syscall.Mkfifo(filepath.Join(e.root, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(e.root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	special := 2
	if os.Geteuid() == 0 {
		// /dev/null's numbers: a character device only root may create.
		if err := syscall.Mknod(filepath.Join(e.root, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
			special++
		}
	}
	os.Symlink(".", filepath.Join(e.root, "loop"))
	os.Symlink(good, filepath.Join(e.root, "link-to-good"))
	os.Symlink("/nonexistent", filepath.Join(e.root, "dangling"))

	secret := e.write("secret/unreadable.txt", words(12, 5000))
	os.Chmod(secret, 0)
	lockedDir := filepath.Join(e.root, "locked")
	e.write("locked/inside.txt", words(13, 5000))
	os.Chmod(lockedDir, 0)
	t.Cleanup(func() { os.Chmod(lockedDir, 0o755) })

	huge := filepath.Join(e.root, "huge.bin")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(8 << 30) // sparse: no disk used, and sifd must not read it
	f.Close()

	weird := string([]byte{'n', 'a', 'm', 'e', 0xff, 0xfe, '.', 't', 'x', 't'})
	weirdContent := words(14, 20000)
	weirdPath := e.write(weird, weirdContent)
	weirdCopy := e.write("z-copy-"+weird, weirdContent) // sorts after weird

	start := time.Now()
	e.start()
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("scan took %v: did something block?", d)
	}
	st := e.status()
	c := st.Counters
	if int(c.Special) != special {
		t.Errorf("special = %d, want %d (fifo, socket, device)", c.Special, special)
	}
	if c.Symlinks != 3 {
		t.Errorf("symlinks = %d, want 3", c.Symlinks)
	}
	if c.Unreadable != 2 {
		t.Errorf("unreadable = %d, want 2 (a file and a directory); last errors %v", c.Unreadable, st.LastError)
	}
	if c.TooLarge != 1 {
		t.Errorf("too_large = %d, want 1", c.TooLarge)
	}
	if c.Indexed != 4 || st.Index.Files != 4 {
		t.Errorf("indexed %d, index holds %d files; want 4 (good, good-edit, two non-UTF-8 names)", c.Indexed, st.Index.Files)
	}
	for _, want := range []string{"unreadable.txt", "locked", "huge.bin"} {
		if !strings.Contains(strings.Join(st.LastError, "\n"), want) {
			t.Errorf("last errors do not name %s: %v", want, st.LastError)
		}
	}

	// The non-UTF-8 name round-trips exactly through path_raw.
	q := filepath.Join(e.dir, "q.txt")
	os.WriteFile(q, weirdContent, 0o644)
	r, out := e.similar(q)
	if r.code != 0 || len(out[0].Matches) != 2 {
		t.Fatalf("query for the non-UTF-8 files: exit %d %+v %s", r.code, out, r.stderr)
	}
	m := out[0].Matches[0]
	raw, err := base64.StdEncoding.DecodeString(m.PathRaw)
	if err != nil || string(raw) != weirdPath {
		t.Errorf("path_raw %q decodes to %q, want %q", m.PathRaw, raw, weirdPath)
	}
	// Text output quotes it as ls does, on one line; -0 prints it raw.
	h := e.sifctl("similar", q)
	if quoted := "'" + filepath.Dir(weirdPath) + "/name'$'\\377\\376''.txt'"; !strings.Contains(h.stdout, "  "+quoted+"  ") {
		t.Errorf("human output does not print the name quoted (%s):\n%q", quoted, h.stdout)
	}
	if z := e.sifctl("similar", "-0", q); !strings.Contains(z.stdout, weirdPath+"\x00") {
		t.Errorf("similar -0 does not print the exact name:\n%q", z.stdout)
	}
	// Dupes and groups carry exact names too.
	dr := e.sifctl("dupes", "--json")
	var d ipc.DupesResponse
	if err := json.Unmarshal([]byte(dr.stdout), &d); err != nil || len(d.Sets) != 1 ||
		d.Sets[0].Files[0].Exact() != weirdPath || d.Sets[0].Files[1].Exact() != weirdCopy {
		t.Errorf("dupes of non-UTF-8 names: %v %s", err, dr.stdout)
	}
	// And the daemon is still fine.
	if r, _ := e.similar(good); r.code != 0 {
		t.Errorf("query after the troublesome scan: exit %d %s", r.code, r.stderr)
	}
}

// TestRestartIsIncremental: a restart reads only new and changed files,
// removes the records of vanished ones, and moves those of a directory
// renamed while sifd was down without reading its files. A file rewritten
// with its mtime set back is found by its ctime.
func TestRestartIsIncremental(t *testing.T) {
	e := newEnv(t)
	const n = 40
	for i := range n {
		e.write(fmt.Sprintf("d%d/f%d.txt", i%4, i), words(uint64(100+i), 3000))
	}
	e.start()
	if st := e.status(); st.Counters.Indexed != n {
		t.Fatalf("first scan indexed %d, want %d", st.Counters.Indexed, n)
	}
	e.stop()

	gone := filepath.Join(e.root, "d1/f1.txt")
	goneContent, _ := os.ReadFile(gone)
	os.Remove(gone)
	changed := filepath.Join(e.root, "d2/f2.txt")
	os.WriteFile(changed, words(999, 3000), 0o644)
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(changed, later, later)
	e.write("new/added.txt", words(1000, 3000))
	setBack := filepath.Join(e.root, "d3/f3.txt")
	st0, _ := os.Stat(setBack)
	b, _ := os.ReadFile(setBack)
	b[0] ^= 1 // same size
	os.WriteFile(setBack, b, 0o644)
	os.Chtimes(setBack, st0.ModTime(), st0.ModTime())
	if err := os.Rename(filepath.Join(e.root, "d0"), filepath.Join(e.root, "d0.moved")); err != nil {
		t.Fatal(err)
	}

	e.start()
	st := e.status()
	c := st.Counters
	if c.Unchanged != n-3-n/4 || c.Indexed != 3 || c.Removed != 1 || c.Renamed != n/4 || st.Index.Files != n {
		t.Errorf("restart: unchanged %d indexed %d removed %d renamed %d files %d; want %d, 3, 1, %d, %d",
			c.Unchanged, c.Indexed, c.Removed, c.Renamed, st.Index.Files, n-3-n/4, n/4, n)
	}
	q := filepath.Join(e.dir, "gone-content.txt")
	os.WriteFile(q, goneContent, 0o644)
	if r, out := e.similar(q); r.code != 1 || len(out[0].Matches) != 0 {
		t.Errorf("the removed file is still found: exit %d %+v", r.code, out)
	}
	e.stop()
}

// TestKillDuringScan: sifd killed with SIGKILL in the middle of indexing
// leaves an index that passes `sifd check`, and a restart completes it.
func TestKillDuringScan(t *testing.T) {
	e := newEnv(t)
	const n = 3000
	for i := range n {
		e.write(fmt.Sprintf("d%02d/f%d.txt", i%50, i), words(uint64(i), 4000+i%3000))
	}
	e.startNoWait("--workers", "2")
	e.midScan(200, "killed")
	e.kill()

	r := run(t, sifdBin, "check", "--db", e.db)
	if r.code != 0 || !strings.Contains(r.stdout, "ok:") {
		t.Fatalf("check after SIGKILL: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	e.start()
	st := e.status()
	if st.Index.Files != n {
		t.Errorf("after restart the index holds %d files, want %d", st.Index.Files, n)
	}
	// The files read before the kill, the first walked among them, are
	// not read again; their postings, which the first scan may have left
	// pending (written many at a time), were written by the restart's
	// Open: an edited copy of each finds it as similar, not only as
	// identical.
	for _, i := range []int{0, 50, 100} {
		e.foundSimilar(filepath.Join(e.root, fmt.Sprintf("d%02d/f%d.txt", i%50, i)), words(uint64(i), 4000+i%3000))
	}
	e.stop()
	r = run(t, sifdBin, "check", "--db", e.db)
	if r.code != 0 {
		t.Fatalf("check after restart: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// midScan waits until the first scan, started with startNoWait, has
// indexed more than n files and is still going, to be what.
func (e *env) midScan(n uint64, what string) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := statusOnce(e)
		if err == nil && st.Counters.Indexed > n && st.State == "scanning" {
			return
		}
		if err == nil && st.State == "ready" {
			e.t.Fatalf("the scan finished before it could be %s; make the tree larger", what)
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no progress: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// foundSimilar fails unless path, whose content is body, is the top match
// of an edited copy of body (its first three quarters, then new text)
// asked from outside the root: found through its postings, as a similar
// file, not only as an identical one.
func (e *env) foundSimilar(path string, body []byte) {
	e.t.Helper()
	q := filepath.Join(e.dir, "edited-"+filepath.Base(path))
	cut := len(body) * 3 / 4
	if err := os.WriteFile(q, append(body[:cut:cut], words(99999, 1000)...), 0o644); err != nil {
		e.t.Fatal(err)
	}
	r, out := e.similar(q)
	if r.code != 0 || len(out) != 1 || len(out[0].Matches) == 0 || out[0].Matches[0].Path != path {
		e.t.Errorf("similar to an edited copy of %s: exit %d, %+v", path, r.code, out)
	}
}
