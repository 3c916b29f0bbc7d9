package filestat

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestCtime: where the system says (Linux, macOS, FreeBSD, NetBSD), Ctime
// is the status change time of the file, which a chmod moves on to now;
// elsewhere it is 0.
func TestCtime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The mtime set far back leaves the ctime at now: Ctime must not be
	// the mtime.
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Minute).UnixNano()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	got := Ctime(fi)
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd", "netbsd":
		if after := time.Now().Add(time.Minute).UnixNano(); got < before || got > after {
			t.Errorf("Ctime = %v, want about now (%v); mtime %v", time.Unix(0, got), time.Now(), fi.ModTime())
		}
	default:
		if got != 0 {
			t.Errorf("Ctime = %d on %s, want 0", got, runtime.GOOS)
		}
	}
}
