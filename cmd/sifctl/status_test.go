package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

func TestPrintStatus(t *testing.T) {
	eta := 85.4
	st := &ipc.Status{
		Version: "1.2", PID: 7, Started: time.Now(), State: "scanning", UncleanStart: true,
		Roots: []ipc.RootStatus{
			{Path: "/srv/big", State: ipc.RootScanning, FilesSeen: 5000, FilesDone: 1200, BytesSeen: 5 << 30, BytesDone: 1 << 30,
				BytesPerSec: 45.3e6, ETASecs: &eta, WalkDone: true, Watched: 12, FS: "ext4", Source: "config"},
			{Path: "/srv/new", State: ipc.RootScanning, FilesSeen: 10, FilesDone: 2},
			{Path: "/mnt/nfs", State: ipc.RootPolling, Reason: "nfs has no change events", Scans: 2, FilesSeen: 40,
				ScanSecs: 1.5, ScanFinish: "2025-01-02T03:04:05Z", Watched: 0},
			{Path: "/srv/part", State: ipc.RootDegraded, Reason: "out of inotify watches", Watched: 8190, Unwatched: 3},
		},
		RemovedRoots: []ipc.FilePath{{Path: "/srv/old"}},
		Forgetting:   []ipc.ForgetStatus{{Dir: ipc.FilePath{Path: "/srv/gone"}, Files: 48000, Bytes: 3 << 30}},
		Queue:        ipc.QueueStatus{Settling: 3, Live: 1, Scan: 120, Scans: 2, Busy: 4},
		Counters:     ipc.Counters{Renamed: 5, TooSmall: 6, Excluded: 7, Events: 8, Overflows: 9},
	}
	var out bytes.Buffer
	printStatus(&globals{stdout: &out}, st)
	got := out.String()
	for _, want := range []string{
		"sifd 1.2 (pid 7), scanning, up 0s\n",
		"  note:    previous run did not shut down cleanly; first scan re-read recent changes\n",
		"  root /srv/big: scanning\n    scan: 1200/5000 files, 1.0 GiB/5.0 GiB, 45.3 MB/s, ETA 1m25s; 0 read (0 B) in 0.0s\n",
		"    watched dirs: 12; filesystem ext4; from the configuration (file or --root)\n",
		"  root /srv/old: not in effect: configured, but removed with sifctl roots remove (sifctl roots add puts it back)\n",
		"  root /srv/gone: removed; forgetting its 48000 files (3.0 GiB), counted out of the index above and answered no more\n",
		"  root /srv/new: scanning\n    scan: 2/10 files, 0 B/0 B, still finding files;",
		"  root /mnt/nfs: polling (nfs has no change events)\n    last scan: 40 files seen (0 B), 0 read (0 B) in 1.5s, finished 2025-01-02T03:04:05Z\n",
		"  root /srv/part: degraded (out of inotify watches)\n    watched dirs: 8190, 3 subtrees could not be watched\n",
		"  queue: 3 settling, 1 live, 120 from scans, 2 directory scans; 4 workers busy\n",
		"5 renamed", "7 excluded", "6 too small",
		"  events: 8 received, 9 overflows",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "ETA") != 1 {
		t.Errorf("ETA shown for a root without eta_seconds:\n%s", got)
	}
	st.UncleanStart = false
	out.Reset()
	printStatus(&globals{stdout: &out}, st)
	if strings.Contains(out.String(), "did not shut down cleanly") {
		t.Errorf("unclean-start note after a clean start:\n%s", out.String())
	}
}
