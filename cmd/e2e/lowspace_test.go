//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// Free space under the index falls below --min-free-space while staying
// well above what Pebble needs: sifd's own check puts index writes on hold
// before any write fails (the gentle path, as opposed to TestFaultDiskFull
// where Pebble's writes fail). Queries go on being answered from the old
// state; once the filler is removed, the kept paths are replayed (not a
// reconcile of the root) and the index ends equal to the disk.
func TestFaultLowSpaceHeld(t *testing.T) {
	mustRoot(t)
	e := newEnv(t)
	mnt := filepath.Join(e.dir, "dbfs")
	mountTmpfs(t, mnt, "64m")
	e.db = filepath.Join(mnt, "db")
	const minFree = 32 << 20
	old := e.corpus("a", 30, 1000)
	e.start("--settle-delay", "50ms", "--min-free-space", fmt.Sprint(minFree))
	before := e.status()
	if before.State != "ready" {
		t.Fatalf("state before the filler: %q (%s)", before.State, before.Reason)
	}

	// Leave 16 MiB free: half the minimum, and far more than Pebble needs
	// for the few writes below, so none of them can fail for want of room.
	free := statfsFree(t, mnt)
	const left = 16 << 20
	if free < left+minFree {
		t.Fatalf("the tmpfs has %d bytes free after the first scan, want at least %d", free, left+minFree)
	}
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, free-left), 0o600); err != nil {
		t.Fatalf("writing the filler: %v", err)
	}
	t.Logf("free under the index: %d bytes, min-free-space %d", statfsFree(t, mnt), minFree)
	// The fault loop finds the disk short of room within a poll, without
	// any write. (A write checks at most every 100 ms, so one made at once
	// could still slip past: the changes are made once the hold shows.)
	st := e.until(20*time.Second, "writes on hold", func(st *ipc.Status) bool { return st.State == "degraded" })

	// Changes of every kind: a new file, an edit, a deletion, a rename.
	var pick []string
	for p := range old {
		pick = append(pick, p)
		if len(pick) == 3 {
			break
		}
	}
	edited, deleted, renamedFrom := pick[0], pick[1], pick[2]
	editedOld := old[edited]
	editedNew := words(1999, 8000)
	if err := os.WriteFile(edited, editedNew, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(deleted); err != nil {
		t.Fatal(err)
	}
	renamedTo := filepath.Join(e.root, "a", "renamed.txt")
	if err := os.Rename(renamedFrom, renamedTo); err != nil {
		t.Fatal(err)
	}
	added := e.corpus("b", 5, 1100)

	t.Logf("status while low on space: %s: %s", st.State, st.Reason)
	if !strings.Contains(st.Reason, "no space left on device") {
		t.Errorf("reason %q does not say no space left on device", st.Reason)
	}
	if strings.Contains(st.Reason, "reconcile") {
		t.Errorf("reason %q: a reconcile is planned, but nothing failed", st.Reason)
	}
	if r := e.sifctl("status"); !strings.Contains(r.stdout, "degraded: no space left on device") {
		t.Errorf("sifctl status does not show the degraded state:\n%s", r.stdout)
	}
	// Let every change reach the hold (settle delay, then a worker): nine
	// paths, the rename's two included.
	st = e.until(20*time.Second, "every change kept", func(st *ipc.Status) bool { return waiting(st) >= 9 })
	t.Logf("while on hold: %s", st.Reason)

	// Queries are answered from the index as it was (--fast: the index's
	// estimates, no check against the files as they are now): the edited
	// file's old content is found, the deleted and renamed files under
	// their old paths, the new files not at all.
	if got := e.topFast(e.query("q-edited-old", editedOld)); got != edited {
		t.Errorf("old content of the edited file while on hold: top match %q, want %s", got, edited)
	}
	if got := e.topFast(e.query("q-deleted", old[deleted])); got != deleted {
		t.Errorf("deleted file while on hold: top match %q, want %s", got, deleted)
	}
	if got := e.topFast(e.query("q-renamed", old[renamedFrom])); got != renamedFrom {
		t.Errorf("renamed file while on hold: top match %q, want its old path %s", got, renamedFrom)
	}
	// The check reads the files as they are: a deleted file is not named.
	if got := e.topMatch(e.query("q-deleted", old[deleted])); got == deleted {
		t.Errorf("deleted file while on hold: listed by a checked query")
	}
	for p, b := range added {
		if got := e.topMatch(e.query("q-added", b)); got != "" {
			t.Errorf("file %s created while on hold is answered already: %q", p, got)
		}
	}
	deletedOld := old[deleted]
	// sifctl wait does not claim that changes on hold were applied.
	if r := e.sifctl("wait", "--timeout", "1s"); r.code != 1 {
		t.Errorf("sifctl wait while changes are on hold: exit %d, want 1 (timeout)\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A try while still short of room backs off.
	// (On a slow machine the back-off may have doubled more than once
	// before this looks.)
	st = e.until(20*time.Second, "a retry backing off", func(st *ipc.Status) bool {
		m := backoffRE.FindStringSubmatch(st.Reason)
		if m == nil {
			return false
		}
		d, err := time.ParseDuration(m[1])
		return err == nil && d >= 2*time.Second
	})
	t.Logf("after a failed retry: %s", st.Reason)
	held := e.status()
	if held.Index.Files != before.Index.Files {
		t.Errorf("the index holds %d files while on hold, had %d", held.Index.Files, before.Index.Files)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	e.until(30*time.Second, "writes resumed", func(st *ipc.Status) bool { return st.State == "ready" })
	// Once writes resume, sifctl wait covers the replay of the kept paths.
	e.waitApplied()

	delete(old, edited)
	delete(old, deleted)
	delete(old, renamedFrom)
	old[renamedTo] = e.mustRead(renamedTo)
	e.allFound(old)
	e.allFound(added)
	e.allFound(map[string][]byte{edited: editedNew})
	if got := e.topMatch(e.query("q-deleted-after", deletedOld)); got != "" {
		t.Errorf("content of the deleted file after the replay: top match %q, want none", got)
	}
	after := e.status()
	if want := before.Index.Files + uint64(len(added)) - 1; after.Index.Files != want {
		t.Errorf("index files after the replay: %d, want %d", after.Index.Files, want)
	}

	// Replayed, not reconciled: no new scan of the root, no unchanged file
	// looked at again, and the log says so.
	if after.Roots[0].Scans != before.Roots[0].Scans {
		t.Errorf("root scans %d after the replay, %d before: the root was reconciled", after.Roots[0].Scans, before.Roots[0].Scans)
	}
	if d := after.Counters.Unchanged - before.Counters.Unchanged; d >= uint64(len(old))-1 {
		t.Errorf("%d unchanged files looked at again: a reconcile, not a replay of the kept paths", d)
	}
	logs := e.logs.String()
	line := lineWith(logs, "index writes resumed")
	if line == "" {
		t.Fatalf("no \"index writes resumed\" in the log")
	}
	t.Logf("log: %s", line)
	if !strings.Contains(line, "reconcile=false") || strings.Contains(line, "waiting=0 ") {
		t.Errorf("resume line %q: want the kept paths replayed, no reconcile", line)
	}
	// Pebble never failed a write: the hold came from sifd's own check.
	if hold := lineWith(logs, "index writes on hold"); !strings.Contains(hold, "kept free") {
		t.Errorf("the hold did not come from the free-space check: %q", hold)
	}
	if strings.Contains(logs, "pebble failed") || strings.Contains(logs, "reopen") {
		t.Errorf("Pebble failed a write:\n%s", logs)
	}
	e.stop()
	e.checkClean()
}

func (e *env) mustRead(path string) []byte {
	e.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

var backoffRE = regexp.MustCompile(`retrying every (\S+);`)

var waitingRE = regexp.MustCompile(`(\d+) changes waiting`)

// waiting returns the number of changes a degraded status says wait, or
// -1.
func waiting(st *ipc.Status) int {
	m := waitingRE.FindStringSubmatch(st.Reason)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// statfsFree returns the bytes available on the filesystem holding dir.
func statfsFree(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Bavail * uint64(st.Bsize)
}

// lineWith returns the first line of logs holding s, or "".
func lineWith(logs, s string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
