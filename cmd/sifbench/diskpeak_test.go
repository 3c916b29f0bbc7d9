package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestWatchDisk: the peak is that of files written and removed while the
// watch runs, not only what is left when it stops.
func TestWatchDisk(t *testing.T) {
	dir := t.TempDir()
	w := watchDisk(dir)
	a, b := filepath.Join(dir, "000002.log"), filepath.Join(dir, "000003.sst")
	if err := os.WriteFile(a, make([]byte, 3000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * diskPeakEvery)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * diskPeakEvery)
	if p := w.peak(); p.Bytes != 8000 {
		t.Errorf("peak so far %+v, want 8000 bytes", p)
	}
	peak := w.stop()
	if peak.Bytes != 8000 || peak.Logs != 3000 || peak.Tables != 5000 {
		t.Errorf("peak %+v, want 8000 bytes (a and b at once), 3000 of logs and 5000 of tables", peak)
	}
	if now := diskUseOf(dir); now.Bytes != 5000 {
		t.Errorf("after the watch: %d bytes, want 5000", now.Bytes)
	}
}

// TestSplitBySize: every file goes to one list, and the lists' sizes are
// even where the files allow.
func TestSplitBySize(t *testing.T) {
	files := []sizedFile{{"a", 1000}, {"b", 2000}, {"c", 3000}, {"d", 4000}, {"e", 0}}
	got := splitBySize(files, 2)
	want := [][]string{{"d", "a", "e"}, {"c", "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitBySize = %q, want %q", got, want)
	}
	if got := splitBySize(files[:1], 3); !reflect.DeepEqual(got, [][]string{{"a"}, nil, nil}) {
		t.Errorf("one file in 3: %q", got)
	}
}

// TestSHA256Floor: sha256sum runs over the tree in the processes asked
// for, and is timed.
func TestSHA256Floor(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"a", "b", "c/d", "c/e"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, 1000*(i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := newSHA256Floor(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.lists) != 3 {
		t.Fatalf("%d lists, want 3", len(f.lists))
	}
	if secs, err := f.time(t.Context()); err != nil || secs <= 0 {
		t.Errorf("time = %v, %v; want a positive time", secs, err)
	}
	os.Remove(filepath.Join(dir, "c", "e"))
	if _, err := f.time(t.Context()); err == nil {
		t.Error("a listed file removed: no error")
	}
}
