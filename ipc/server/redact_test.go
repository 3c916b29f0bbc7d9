package server

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// fakeView is a caller's view that can list the directories in it and
// nothing else, and records what it was asked.
type fakeView struct {
	can   map[string]bool
	asked []string
}

func (v *fakeView) CanList(dir string) bool {
	v.asked = append(v.asked, dir)
	return v.can[dir]
}

// rootWithCounts is a root's status with every field set, counts included.
func rootWithCounts(path string) ipc.RootStatus {
	eta := 12.5
	return ipc.RootStatus{
		Path: path, State: ipc.RootScanning, Reason: "first scan", FS: "ext4", Source: "config",
		Watched: 40, Unwatched: 2,
		FilesSeen: 1000, BytesSeen: 1 << 30, FilesDone: 600, BytesDone: 1 << 29, FilesRead: 300, BytesRead: 1 << 28,
		WalkDone: true, ScanSecs: 3.5, BytesPerSec: 1 << 27, ETASecs: &eta, Scans: 4,
		LastError: path + "/secret.txt: permission denied", ScanFinish: "2026-01-02T03:04:05Z",
		Denied: &ipc.DeniedStatus{Count: 3, Paths: []string{path + "/private"}},
	}
}

// redactedRoot is what a caller who can list the root may see of
// rootWithCounts(path): no counts of files, directories or bytes, no
// error line.
func redactedRoot(path string) ipc.RootStatus {
	r := rootWithCounts(path)
	return ipc.RootStatus{
		Path: r.Path, State: r.State, Reason: r.Reason, FS: r.FS, Source: r.Source,
		WalkDone: r.WalkDone, ScanSecs: r.ScanSecs, ETASecs: r.ETASecs, Scans: r.Scans, ScanFinish: r.ScanFinish,
	}
}

// A caller who does not see every file is told of the roots it can list
// and no other, and of those not how many files or bytes they hold: such
// counts include files it cannot read.
func TestRedactRoots(t *testing.T) {
	roots := []ipc.RootStatus{rootWithCounts("/srv/open"), rootWithCounts("/srv/closed"), rootWithCounts("/home/also-open")}
	v := &fakeView{can: map[string]bool{"/srv/open": true, "/home/also-open": true}}
	got := redactRoots(roots, v)
	want := []ipc.RootStatus{redactedRoot("/srv/open"), redactedRoot("/home/also-open")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("redacted roots:\n got %s\nwant %s", jsonOf(got), jsonOf(want))
	}
	if !reflect.DeepEqual(v.asked, []string{"/srv/open", "/srv/closed", "/home/also-open"}) {
		t.Errorf("CanList asked of %q, want of every root", v.asked)
	}
	if len(roots) != 3 || roots[0].FilesSeen != 1000 || roots[1].Path != "/srv/closed" {
		t.Errorf("redactRoots changed its argument: %+v", roots[0])
	}
	if got := redactRoots(roots, &fakeView{}); got == nil || len(got) != 0 {
		t.Errorf("a caller who can list no root: %s, want an empty list", jsonOf(got))
	}
}

// A status for a caller who does not see every file keeps the daemon's
// state and the listable roots, and leaves out whatever names or counts
// files: the db, the counters, the index's totals, the roots' counts, the
// error lines, the files still changing, the removed roots it cannot list,
// the removed roots still being forgotten (with their counts).
func TestRedactStatus(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := ipc.Status{
		Version: "1.2.3", PID: 42, Started: at, State: "degraded", Reason: "no space left on device",
		DB: "/var/lib/sifd/index", Socket: "/run/sifd/sock", Params: "k=5",
		Roots:         []ipc.RootStatus{rootWithCounts("/srv/closed"), rootWithCounts("/srv/open")},
		RemovedRoots:  []ipc.FilePath{ipc.NewFilePath("/srv/old-open"), ipc.NewFilePath("/srv/old-closed")},
		Queue:         ipc.QueueStatus{Live: 3, Scan: 4},
		Counters:      ipc.Counters{Indexed: 7, Removed: 2},
		Index:         ipc.IndexStats{Files: 9, Bytes: 900},
		LastError:     []string{"/srv/closed/secret.txt: permission denied"},
		UncleanStart:  true,
		IndexRebuilt:  &ipc.IndexRebuild{Reason: "damaged: /var/lib/sifd/index/000001.sst", MovedTo: "/var/lib/sifd/index.corrupt-1", At: at},
		StillChanging: []string{"/srv/closed/log.txt"},
		Forgetting:    []ipc.ForgetStatus{{Dir: ipc.NewFilePath("/srv/gone"), Files: 5, Bytes: 500}},
		LowSpace:      &ipc.LowSpace{FreeBytes: 1 << 20, MinFreeBytes: 1 << 30, Setting: "min_free_space"},
	}
	v := &fakeView{can: map[string]bool{"/srv/open": true, "/srv/old-open": true}}
	got := redactStatus(st, v)
	want := ipc.Status{
		Version: "1.2.3", PID: 42, Started: at, State: "degraded", Reason: "no space left on device",
		Socket: "/run/sifd/sock", Params: "k=5",
		Roots:        []ipc.RootStatus{redactedRoot("/srv/open")},
		RemovedRoots: []ipc.FilePath{ipc.NewFilePath("/srv/old-open")},
		Queue:        ipc.QueueStatus{Live: 3, Scan: 4},
		UncleanStart: true,
		Redacted:     true,
		IndexRebuilt: &ipc.IndexRebuild{At: at},
		LowSpace:     st.LowSpace,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("redacted status:\n got %s\nwant %s", jsonOf(got), jsonOf(want))
	}
	if len(st.RemovedRoots) != 2 || st.IndexRebuilt.Reason == "" {
		t.Errorf("redactStatus changed its argument: %+v", st)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
