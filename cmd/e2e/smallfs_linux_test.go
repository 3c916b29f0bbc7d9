//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// An index on a small filesystem (96 MiB, 40 MiB of it taken by other
// files): the default free space kept under the index, 64 MiB, would hold
// every write from the start and index nothing. It is scaled down to a
// quarter of the filesystem, which the log says; and once the free space
// does fall below that, sifctl status (text and --json) says how much is
// free, how much is kept and what sets it.
func TestSmallIndexFilesystem(t *testing.T) {
	mustRoot(t)
	e := newEnv(t)
	mnt := filepath.Join(e.dir, "dbfs")
	mountTmpfs(t, mnt, "96m")
	e.db = filepath.Join(mnt, "db")
	other := filepath.Join(mnt, "other")
	if err := os.WriteFile(other, make([]byte, 40<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	files := e.corpus("s", 40, 2000)
	e.startNoWait("--settle-delay", "50ms")
	e.awaitSocket()
	st := e.until(60*time.Second, "the first scan over", func(st *ipc.Status) bool { return st.State != "scanning" })
	if st.State != "ready" || st.Index.Files != uint64(len(files)) {
		t.Fatalf("after the first scan with %d bytes free: %s (%s), %d files indexed of %d",
			statfsFree(t, mnt), st.State, st.Reason, st.Index.Files, len(files))
	}
	var total syscallStatfs
	total.of(t, mnt)
	quarter := total.size / 4
	line := lineWith(e.logs.String(), "the index's filesystem is small")
	if !strings.Contains(line, "min_free_space=\""+humanSize(quarter)+"\"") || !strings.Contains(line, "--min-free-space") {
		t.Errorf("log line of the scaled minimum (want %s): %q", humanSize(quarter), line)
	}
	e.allFound(files)

	// Leave half the minimum free: writes wait, and the status says why.
	free := statfsFree(t, mnt)
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, free-quarter/2), 0o600); err != nil {
		t.Fatalf("writing the filler: %v", err)
	}
	st = e.until(20*time.Second, "writes on hold", func(st *ipc.Status) bool { return st.State == "degraded" })
	ls := st.LowSpace
	if ls == nil || ls.MinFreeBytes != quarter || ls.FreeBytes >= quarter || !strings.Contains(ls.Setting, "--min-free-space") || !strings.Contains(ls.Setting, "min_free_space") {
		t.Errorf("low_space in sifctl status --json: %+v; want %d kept free, less free, and what sets it", ls, quarter)
	}
	text := e.sifctl("status").stdout
	for _, want := range []string{
		"degraded: no space left on device",
		fmt.Sprintf("below the %s kept free (change it with sifd run --min-free-space BYTES, or min_free_space in the configuration file)", humanSize(quarter)),
		" free under the index",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("sifctl status does not say %q:\n%s", want, text)
		}
	}
	nb := words(2999, 8000)
	np := e.write("s/new.txt", nb)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	e.until(30*time.Second, "writes resumed", func(st *ipc.Status) bool { return st.State == "ready" && st.LowSpace == nil })
	e.waitApplied()
	files[np] = nb
	e.allFound(files)
	e.stop()
	e.checkClean()
}

// syscallStatfs is the size of a filesystem.
type syscallStatfs struct{ size uint64 }

func (s *syscallStatfs) of(t *testing.T, dir string) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	s.size = st.Blocks * uint64(st.Bsize)
}

// humanSize is sifd's way of writing a size (daemon.humanBytes).
func humanSize(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
