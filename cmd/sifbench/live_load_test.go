package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

func TestFindPhase(t *testing.T) {
	for _, name := range []string{"first-scan", "reconcile", "compaction"} {
		p, err := findPhase(name)
		if err != nil || p.name != name {
			t.Errorf("findPhase(%q) = %v, %v", name, p, err)
		}
	}
	if loadPhases[0].name != "first-scan" {
		t.Errorf("the first phase, the default, is %q, want first-scan", loadPhases[0].name)
	}
	if _, err := findPhase("scan"); err == nil {
		t.Error(`findPhase("scan"): no error`)
	}
}

func TestSettled(t *testing.T) {
	ready := &ipc.Status{State: "ready"}
	if !settled(ready) {
		t.Error("a ready daemon with nothing queued is not settled")
	}
	for name, st := range map[string]*ipc.Status{
		"scanning":   {State: "scanning"},
		"compacting": {State: "ready", Index: ipc.IndexStats{Compacting: true}},
		"settling":   {State: "ready", Queue: ipc.QueueStatus{Settling: 1}},
		"live":       {State: "ready", Queue: ipc.QueueStatus{Live: 1}},
		"scan":       {State: "ready", Queue: ipc.QueueStatus{Scan: 1}},
		"scans":      {State: "ready", Queue: ipc.QueueStatus{Scans: 1}},
		"busy":       {State: "ready", Queue: ipc.QueueStatus{Busy: 1}},
	} {
		if settled(st) {
			t.Errorf("%s: settled", name)
		}
	}
}

func TestTouchTree(t *testing.T) {
	root := t.TempDir()
	paths := []string{filepath.Join(root, "a"), filepath.Join(root, "d", "b")}
	for i, p := range paths {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte{byte(i), 'x'}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	when := time.Now().Add(-time.Hour)
	if err := touchTree(root, when); err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(when) {
			t.Errorf("%s: mtime %v, want %v", p, fi.ModTime(), when)
		}
		if b, _ := os.ReadFile(p); string(b) != string([]byte{byte(i), 'x'}) {
			t.Errorf("%s: holds %q after touchTree", p, b)
		}
	}
}
