//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// Each fault sifd must survive, through the real binaries: a damaged or
// deleted index, a full disk under the index, a root that goes missing,
// a file that never stops changing. Disk-full and unmount tests mount a
// small tmpfs and need root (as CI runs); as another user they are
// skipped, saying so.

// until polls cond every 50ms for up to d and fails with what.
func (e *env) until(d time.Duration, what string, cond func(*ipc.Status) bool) *ipc.Status {
	e.t.Helper()
	deadline := time.Now().Add(d)
	var st *ipc.Status
	for time.Now().Before(deadline) {
		select {
		case <-e.waited:
			e.t.Fatalf("sifd exited while waiting for %s: %v", what, e.exit)
		default:
		}
		// A daemon that restarts itself in a new process (ErrRestart)
		// does not answer for a moment: that is not the end of the wait.
		cur, err := e.tryStatus()
		if err == nil {
			st = cur
			if cond(st) {
				return st
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st == nil {
		e.t.Fatalf("no %s after %v; sifctl status never answered", what, d)
	}
	e.t.Fatalf("no %s after %v; status: state %q reason %q roots %+v", what, d, st.State, st.Reason, st.Roots)
	return nil
}

// checkClean runs sifd check on the stopped daemon's index.
func (e *env) checkClean() {
	e.t.Helper()
	if r := run(e.t, sifdBin, "check", "--db", e.db); r.code != 0 {
		e.t.Fatalf("sifd check: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// corpus writes n files of distinct text into the root and returns their
// contents by path.
func (e *env) corpus(prefix string, n int, seed uint64) map[string][]byte {
	files := make(map[string][]byte)
	for i := range n {
		b := words(seed+uint64(i), 8000)
		files[e.write(fmt.Sprintf("%s/f%02d.txt", prefix, i), b)] = b
	}
	return files
}

// allFound fails unless each file is the top match of a query with its
// content.
func (e *env) allFound(files map[string][]byte) {
	e.t.Helper()
	i := 0
	for p, b := range files {
		i++
		if got := e.topMatch(e.query(fmt.Sprintf("q%d", i), b)); got != p {
			e.t.Errorf("query with the content of %s: top match %q", p, got)
		}
	}
}

// fillDisk fills the filesystem of dir with a file, until a write fails
// for want of room, and returns the file's path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break // ENOSPC: the filesystem is full
		}
	}
	f.Close()
	return filler
}

func mustRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs (CI runs as root)")
	}
}

// mountTmpfs mounts a tmpfs of size at dir, world-writable, unmounted at
// the end of the test.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0777"); err != nil {
		t.Fatalf("mount -t tmpfs -o size=%s tmpfs %s: %v (running as root, so the test cannot go on without it)", size, dir, err)
	}
	t.Cleanup(func() { unmount(t, dir) })
}

func unmount(t *testing.T, dir string) {
	for range 50 {
		if err := syscall.Unmount(dir, 0); err == nil || err == syscall.EINVAL {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL {
		t.Errorf("umount %s: %v", dir, err)
	}
}

// A table damaged while sifd was stopped: found when the index is opened
// (its totals are counted from every record), by the verification pass
// after start, or by the first read, the index is moved aside to
// DB.corrupt-TIME and rebuilt; answers are right again and the new index
// passes sifd check.
func TestFaultDamagedTable(t *testing.T) {
	e := newEnv(t)
	files := e.corpus("d", 40, 100)
	e.start()
	e.stop()
	tables, _ := filepath.Glob(filepath.Join(e.db, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table in the index after a compacted first scan")
	}
	for _, name := range tables {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		copy(b[len(b)/2:], bytes.Repeat([]byte{0xa5}, 256))
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.start()
	st := e.until(30*time.Second, "index rebuild", func(st *ipc.Status) bool { return st.IndexRebuilt != nil })
	t.Logf("index_rebuilt: %+v", *st.IndexRebuilt)
	if !strings.HasPrefix(st.IndexRebuilt.MovedTo, e.db+".corrupt-") {
		t.Errorf("moved to %q, want %s.corrupt-TIME", st.IndexRebuilt.MovedTo, e.db)
	}
	if _, err := os.Stat(st.IndexRebuilt.MovedTo); err != nil {
		t.Errorf("the damaged index is not where the status says: %v", err)
	}
	e.waitApplied()
	e.allFound(files)
	// Logged once, at open ("moved aside and is rebuilt") or at run time
	// ("moved aside and rebuilt").
	if n := len(regexp.MustCompile(`moved aside and (is )?rebuilt`).FindAllString(e.logs.String(), -1)); n != 1 {
		t.Errorf("the rebuild was logged %d times, want once", n)
	}
	e.stop()
	e.checkClean()
}

// A MANIFEST that is not one: the index cannot be opened; it is moved
// aside at start and rebuilt, and the roots added with sifctl roots carry
// over.
func TestFaultBadManifest(t *testing.T) {
	e := newEnv(t)
	files := e.corpus("m", 10, 200)
	other := filepath.Join(e.dir, "other")
	os.Mkdir(other, 0o777)
	os.Chmod(other, 0o777)
	ob := words(300, 8000)
	os.WriteFile(filepath.Join(other, "o.txt"), ob, 0o644)
	e.start()
	if r := e.sifctl("roots", "add", other); r.code != 0 {
		t.Fatalf("roots add: %s", r.stderr)
	}
	e.waitApplied()
	e.stop()
	manifests, _ := filepath.Glob(filepath.Join(e.db, "MANIFEST-*"))
	if len(manifests) == 0 {
		t.Fatal("no MANIFEST")
	}
	for _, m := range manifests {
		os.WriteFile(m, []byte("not a manifest at all, just some words"), 0o644)
	}
	e.start()
	st := e.status()
	if st.IndexRebuilt == nil || !strings.Contains(st.IndexRebuilt.Reason, "manifest") {
		t.Fatalf("status after a bad MANIFEST: index_rebuilt %+v", st.IndexRebuilt)
	}
	t.Logf("index_rebuilt: %+v", *st.IndexRebuilt)
	if len(st.Roots) != 2 {
		t.Errorf("roots after the rebuild: %+v, want the added one too", st.Roots)
	}
	e.allFound(files)
	if got := e.topMatch(e.query("qo", ob)); got != filepath.Join(other, "o.txt") {
		t.Errorf("file of the added root: top match %q", got)
	}
	e.stop()
	e.checkClean()
}

// The index directory deleted under a running sifd: noticed within a few
// seconds, a new index is made in its place and filled by a full scan.
func TestFaultIndexDeleted(t *testing.T) {
	e := newEnv(t)
	files := e.corpus("x", 20, 400)
	e.start("--settle-delay", "50ms")
	// The daemon may write a new table while the directory is being
	// removed (rm -rf then fails with "directory not empty"); remove it
	// again, as a user would.
	for i := 0; ; i++ {
		err := os.RemoveAll(e.db)
		if err == nil {
			break
		}
		if i == 20 {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Deleted during a compaction, Pebble may hold its commit lock for
	// good: then the index cannot be closed, and after its wait (10 s)
	// sifd restarts in a new process, which finishes the rebuild and says
	// so just the same.
	st := e.until(40*time.Second, "index rebuild", func(st *ipc.Status) bool { return st.IndexRebuilt != nil })
	t.Logf("index_rebuilt: %+v", *st.IndexRebuilt)
	if r := st.IndexRebuilt.Reason; !strings.Contains(r, "deleted") && !strings.Contains(r, "emptied") {
		t.Errorf("index_rebuilt reason %q does not say the index directory was deleted (or emptied, seen halfway)", r)
	}
	e.waitApplied()
	e.allFound(files)
	// Changes go on being applied.
	nb := words(499, 8000)
	np := e.write("x/new.txt", nb)
	e.waitApplied()
	if got := e.topMatch(e.query("qn", nb)); got != np {
		t.Errorf("file created after the rebuild: top match %q", got)
	}
	e.stop()
	e.checkClean()
}

// A full disk under the index: sifd keeps answering, shows degraded with
// "no space left on device", and once space is freed applies what
// waited by itself; sifd check is clean afterwards.
func TestFaultDiskFull(t *testing.T) {
	mustRoot(t)
	e := newEnv(t)
	mnt := filepath.Join(e.dir, "dbfs")
	mountTmpfs(t, mnt, "8m")
	e.db = filepath.Join(mnt, "db")
	old := e.corpus("a", 10, 500)
	e.start("--settle-delay", "50ms", "--min-free-space", "1048576")

	filler := fillDisk(t, mnt)

	added := e.corpus("b", 5, 600)
	st := e.until(20*time.Second, "degraded state", func(st *ipc.Status) bool { return st.State == "degraded" })
	t.Logf("status while full: %s: %s", st.State, st.Reason)
	if !strings.Contains(st.Reason, "no space left on device") {
		t.Errorf("reason %q does not say no space left on device", st.Reason)
	}
	// Queries are answered from what the index holds.
	e.allFound(old)
	if r := e.sifctl("status"); !strings.Contains(r.stdout, "degraded: no space left on device") {
		t.Errorf("sifctl status does not show the degraded state:\n%s", r.stdout)
	}

	os.Remove(filler)
	e.until(30*time.Second, "recovery", func(st *ipc.Status) bool { return st.State == "ready" })
	e.waitApplied()
	e.allFound(added)
	e.allFound(old)
	e.stop()
	e.checkClean()
}

// A disk that fills during the first scan, while the postings of the new
// contents read so far wait to be written many at a time: sifd shows
// degraded, and once space is freed every file is indexed and found as a
// similar file (through its postings), those read before the disk filled
// too; sifd check is clean. When the disk filled under a write of
// Pebble's log, Pebble is stuck for good in this process: sifd starts
// itself afresh (the same PID) and reconciles, instead of hanging.
func TestFaultDiskFullDuringFirstScan(t *testing.T) {
	mustRoot(t)
	e := newEnv(t)
	mnt := filepath.Join(e.dir, "dbfs")
	mountTmpfs(t, mnt, "32m")
	e.db = filepath.Join(mnt, "db")
	const n = 6000
	path := func(i int) string { return filepath.Join(e.root, fmt.Sprintf("d%02d/f%d.txt", i%50, i)) }
	body := func(i int) []byte { return words(uint64(i), 4000+i%3000) }
	for i := range n {
		e.write(fmt.Sprintf("d%02d/f%d.txt", i%50, i), body(i))
	}
	e.startNoWait("--workers", "1", "--min-free-space", "1048576")
	e.midScan(200, "met by a full disk")

	filler := fillDisk(t, mnt)
	st := e.until(20*time.Second, "degraded state", func(st *ipc.Status) bool { return st.State == "degraded" })
	t.Logf("status while full: %s (%d files indexed): %s", st.State, st.Counters.Indexed, st.Reason)
	if st.Counters.Indexed >= n {
		t.Fatalf("every file was indexed before the disk filled; make the tree larger")
	}

	os.Remove(filler)
	// The socket may go away for a moment while sifd starts afresh.
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err := statusOnce(e)
		if err == nil && st.State == "ready" {
			break
		}
		select {
		case <-e.waited:
			t.Fatalf("sifd exited: %v", e.exit)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after 90 s: %+v, %v", st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(e.logs.String(), "restarting sifd in a new process") {
		t.Logf("Pebble's log failed: sifd started afresh")
	}
	e.waitApplied()
	if st := e.status(); st.Index.Files != n {
		t.Errorf("after recovery the index holds %d files, want %d", st.Index.Files, n)
	}
	for _, i := range []int{0, 50, 100, n / 2, n - 1} {
		e.foundSimilar(path(i), body(i))
	}
	e.stop()
	e.checkClean()
}

// A root renamed away is missing: its files stay in the index but are not
// answered; renamed back, it is reconciled without reading its unchanged
// files again.
func TestFaultRootRenamedAway(t *testing.T) {
	e := newEnv(t)
	files := e.corpus("r", 10, 700)
	e.start("--settle-delay", "50ms")
	before := e.status().Index.Files
	away := e.root + ".away"
	if err := os.Rename(e.root, away); err != nil {
		t.Fatal(err)
	}
	st := e.until(20*time.Second, "missing root", func(st *ipc.Status) bool { return st.Roots[0].State == ipc.RootMissing })
	t.Logf("root while away: %s (%s)", st.Roots[0].State, st.Roots[0].Reason)
	if st.Index.Files != before {
		t.Errorf("the index holds %d files while the root is away, had %d", st.Index.Files, before)
	}
	i := 0
	for _, b := range files {
		i++
		if got := e.topMatch(e.query(fmt.Sprintf("qa%d", i), b)); got != "" {
			t.Errorf("a file of the missing root is answered: %q", got)
		}
	}
	scans := st.Roots[0].Scans
	if err := os.Rename(away, e.root); err != nil {
		t.Fatal(err)
	}
	st = e.until(20*time.Second, "root back and reconciled", func(st *ipc.Status) bool {
		r := st.Roots[0]
		return r.State == ipc.RootWatching && r.Scans > scans
	})
	r := st.Roots[0]
	t.Logf("reconcile after return: %d files seen, %d read", r.FilesSeen, r.FilesRead)
	if r.FilesRead != 0 || r.FilesSeen != uint64(len(files)) {
		t.Errorf("reconcile after the root came back: %d files seen, %d read; want %d seen, 0 read", r.FilesSeen, r.FilesRead, len(files))
	}
	e.allFound(files)
	// Watching works again.
	nb := words(799, 8000)
	np := e.write("r/new.txt", nb)
	e.waitApplied()
	if got := e.topMatch(e.query("qn", nb)); got != np {
		t.Errorf("file created after the root came back: top match %q", got)
	}
	e.stop()
	e.checkClean()
}

// A root on a tmpfs unmounted under sifd: missing, not answered; mounted
// again with files, it is reconciled and answered.
func TestFaultRootUnmounted(t *testing.T) {
	mustRoot(t)
	e := newEnv(t)
	os.Remove(e.root)
	mountTmpfs(t, e.root, "4m")
	files := e.corpus("u", 5, 900)
	e.start("--settle-delay", "50ms")
	unmount(t, e.root)
	st := e.until(20*time.Second, "missing root", func(st *ipc.Status) bool { return st.Roots[0].State == ipc.RootMissing })
	t.Logf("root after umount: %s (%s)", st.Roots[0].State, st.Roots[0].Reason)
	i := 0
	for _, b := range files {
		i++
		if got := e.topMatch(e.query(fmt.Sprintf("qu%d", i), b)); got != "" {
			t.Errorf("a file of the unmounted root is answered: %q", got)
		}
	}
	mountTmpfs(t, e.root, "4m")
	for p, b := range files {
		os.MkdirAll(filepath.Dir(p), 0o777)
		os.WriteFile(p, b, 0o644)
	}
	e.until(20*time.Second, "root back", func(st *ipc.Status) bool { return st.Roots[0].State == ipc.RootWatching })
	e.waitApplied()
	e.allFound(files)
	e.stop()
	e.checkClean()
}

// cpuTicks returns the user and system CPU time of pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// A file appended every 10ms for 10s costs bounded CPU: it is read at
// most about once per max settle delay, counted, and named in the status.
func TestFaultFileNeverQuiet(t *testing.T) {
	e := newEnv(t)
	e.corpus("q", 3, 1000)
	e.start("--settle-delay", "100ms", "--max-settle-delay", "1s")
	p := e.write("q/log.txt", words(1100, 4000))
	e.waitApplied()
	st0 := e.status()
	pid := e.daemon.Process.Pid
	cpu0 := cpuTicks(t, pid)
	t0 := time.Now()

	var appends atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			fmt.Fprintf(f, "line %d of a log that never stops\n", i)
			appends.Add(1)
		}
	}()
	time.Sleep(10 * time.Second)
	st := e.status()
	close(stop)
	<-done
	wall := time.Since(t0)
	cpu := time.Duration(cpuTicks(t, pid)-cpu0) * time.Second / 100

	reads := (st.Counters.Indexed - st0.Counters.Indexed) + (st.Counters.ChangedDuringRead - st0.Counters.ChangedDuringRead)
	t.Logf("%d appends in %v: %d reads (%d indexed, %d found changing), %d events, CPU %v (%.1f%% of a core); still changing: %v",
		appends.Load(), wall.Round(time.Millisecond), reads, st.Counters.Indexed-st0.Counters.Indexed,
		st.Counters.ChangedDuringRead-st0.Counters.ChangedDuringRead, st.Counters.Events-st0.Counters.Events,
		cpu, 100*cpu.Seconds()/wall.Seconds(), st.StillChanging)
	// At most one read per max settle delay (1s), plus retries of reads
	// that found it changing, each after a settle delay: generous bound.
	if max := int64(wall/time.Second)*3 + 5; int64(reads) > max {
		t.Errorf("%d reads in %v, want at most %d", reads, wall, max)
	}
	if reads == 0 {
		t.Error("the file was never read while it changed")
	}
	if limit := wall / 2; cpu > limit {
		t.Errorf("CPU %v over %v, want under %v", cpu, wall, limit)
	}
	found := false
	for _, c := range st.StillChanging {
		found = found || c == p
	}
	if !found {
		t.Errorf("status still_changing %v does not name %s", st.StillChanging, p)
	}
	if r := e.sifctl("status"); !strings.Contains(r.stdout, "still changing: "+p) {
		t.Errorf("sifctl status does not name the file:\n%s", r.stdout)
	}
	// Once quiet, its last version is indexed.
	e.waitApplied()
	b, _ := os.ReadFile(p)
	if got := e.topMatch(e.query("qlog", b)); got != p {
		t.Errorf("after it stopped changing: top match %q", got)
	}
}
