package daemon

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sif-dev/sif/daemon/config"
)

// On a filesystem where the default free space kept would be more than a
// quarter of it, a quarter is kept instead, and the log says so; a
// minimum that was set is kept as set, and a large filesystem keeps the
// default.
func TestMinFreeOnSmallFilesystem(t *testing.T) {
	var total atomic.Uint64
	old := statTotal
	statTotal = func(string) (uint64, error) { return total.Load(), nil }
	t.Cleanup(func() { statTotal = old })
	for _, tc := range []struct {
		total uint64
		set   int64
		want  uint64
	}{
		{90e6, 0, 90e6 / 4},
		{90e6, config.DefaultMinFreeSpace, config.DefaultMinFreeSpace},
		{90e6, 1 << 20, 1 << 20},
		{90e6, -1, 0},
		{1 << 40, 0, config.DefaultMinFreeSpace},
		{4 * config.DefaultMinFreeSpace, 0, config.DefaultMinFreeSpace},
	} {
		total.Store(tc.total)
		d, logs := startDaemon(t, Config{Roots: []string{t.TempDir()}, MinFreeSpace: tc.set})
		if d.faults.minFree != tc.want {
			t.Errorf("filesystem of %d bytes, min free space %d: keeps %d, want %d", tc.total, tc.set, d.faults.minFree, tc.want)
		}
		line := lineOf(logs.String(), "the index's filesystem is small")
		if scaled := tc.set == 0 && tc.want != config.DefaultMinFreeSpace; scaled != (line != "") || scaled && !strings.Contains(line, "--min-free-space") {
			t.Errorf("filesystem of %d bytes, min free space %d: log line %q", tc.total, tc.set, line)
		}
	}
}

// While writes are held for want of room, the status says how much is
// free, how much is kept, and what sets it, in its reason and its fields.
func TestLowSpaceStatus(t *testing.T) {
	var full atomic.Bool
	old := statFree
	statFree = func(dir string) (uint64, error) {
		if full.Load() {
			return 4096, nil
		}
		return old(dir)
	}
	t.Cleanup(func() { statFree = old })
	d, _ := startDaemon(t, Config{Roots: []string{t.TempDir()}, MinFreeSpace: 1 << 20})
	if st := d.Status(); st.LowSpace != nil {
		t.Errorf("low space shown with room to spare: %+v", st.LowSpace)
	}
	full.Store(true)
	deadline := time.Now().Add(3 * faultPoll)
	st := d.Status()
	for st.State != "degraded" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		st = d.Status()
	}
	ls := st.LowSpace
	if st.State != "degraded" || ls == nil || ls.FreeBytes != 4096 || ls.MinFreeBytes != 1<<20 || !strings.Contains(ls.Setting, "--min-free-space") || !strings.Contains(ls.Setting, "min_free_space") {
		t.Fatalf("status while low on space: %s, %+v", st.State, ls)
	}
	for _, want := range []string{"no space left on device", "4.0 KiB free under the index, below the 1.0 MiB kept free", "--min-free-space"} {
		if !strings.Contains(st.Reason, want) {
			t.Errorf("reason %q does not say %q", st.Reason, want)
		}
	}
	full.Store(false)
}

// lineOf returns the first line of logs holding s, or "".
func lineOf(logs, s string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
