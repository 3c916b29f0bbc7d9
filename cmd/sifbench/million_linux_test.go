package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestMillionRun runs the million benchmark on a small tree through the
// real sifd and sifctl (built from this repository) and checks what it
// reports: every file indexed, nothing read again at the restart, dupes
// equal to the planned identical copies, groups found among the
// near-copies, queries answered, and the figures measured, not zero.
func TestMillionRun(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(t.TempDir(), "tree")
	prof := filepath.Join(t.TempDir(), "prof")
	// buildBinaries builds ./cmd/sifd and ./cmd/sifctl from the
	// repository root, as sifbench runs.
	t.Chdir("../..")
	c := &common{workDir: work, n: 40, json: true}
	lf := &liveFlags{files: 3000}
	lo := &loadFlags{dir: dir, profile: prof}
	res, err := benchMillion(context.Background(), c, lf, lo, 21)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range res.Unexpected {
		t.Error(u)
	}
	if res.IndexedFiles != 3000 || res.RestartUnchanged != 3000 || res.RestartIndexed != 0 {
		t.Errorf("indexed %d, then at the restart %d read again and %d unchanged; want 3000, 0, 3000",
			res.IndexedFiles, res.RestartIndexed, res.RestartUnchanged)
	}
	if res.CreateSecs <= 0 || res.Bytes < 3000*mSmallLo || res.Copies == 0 || res.NearCopies == 0 {
		t.Errorf("tree: written in %v s, %d bytes, %d copies, %d near-copies", res.CreateSecs, res.Bytes, res.Copies, res.NearCopies)
	}
	if res.ReadySecs <= 0 || res.RestartSecs <= 0 || res.ScanPeakMB <= 0 || res.QueriesPeakMB < res.ScanPeakMB || res.LifePeakMB < res.QueriesPeakMB || res.IndexBytes <= 0 {
		t.Errorf("scan: ready %v s, restart %v s, peak %v MB (life %v MB), index %d bytes", res.ReadySecs, res.RestartSecs, res.ScanPeakMB, res.LifePeakMB, res.IndexBytes)
	}
	if res.ScanDiskPeak <= 0 || res.DiskPeak < res.ScanDiskPeak {
		t.Errorf("index's peak on disk: %d bytes to ready, %d until compacted", res.ScanDiskPeak, res.DiskPeak)
	}
	if res.Queries != 40 || res.InDaemon.N != 40 || res.InDaemon.P99Ms <= 0 || res.Client.MedianMs < res.InDaemon.MedianMs {
		t.Errorf("queries: %d, in daemon %+v, client %+v", res.Queries, res.InDaemon, res.Client)
	}
	if res.WithKin == 0 || res.KinFound < res.WithKin/2 {
		t.Errorf("%d of %d queries whose file has copies or near-copies were answered", res.KinFound, res.WithKin)
	}
	for name, m := range map[string]millionCmd{"groups": res.Groups, "dupes": res.Dupes} {
		if m.Secs <= 0 || m.SifdMB <= 0 || m.SifctlMB <= 0 || m.OutMB <= 0 || m.Sets == 0 || m.Files < 2*m.Sets {
			t.Errorf("%s: %+v", name, m)
		}
	}
	if len(res.Goals) != 6 {
		t.Errorf("goals: %+v", res.Goals)
	}
	for _, g := range res.Goals[:3] {
		// A few thousand files are far below the budget.
		if !g.Met {
			t.Errorf("goal %s: %s, missed on 3000 files", g.What, g.Got)
		}
	}
	for _, name := range []string{"heap-ready.pprof", "heap-groups.pprof", "heap-dupes.pprof",
		"queries-profile.pprof", "queries-trace.pprof", "queries-block.pprof", "queries-mutex.pprof"} {
		if fi, err := os.Stat(filepath.Join(prof, name)); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: %v", name, err)
		}
	}
	// A second run reuses the tree.
	c.workDir = t.TempDir()
	lo.profile = ""
	c.n = 5
	res2, err := benchMillion(context.Background(), c, lf, lo, 21)
	if err != nil {
		t.Fatal(err)
	}
	if res2.CreateSecs != 0 || res2.Bytes != res.Bytes || res2.Dupes.Sets != res.Dupes.Sets {
		t.Errorf("second run: written in %v s, %d bytes, %d dupe sets; want reused, %d bytes, %d sets", res2.CreateSecs, res2.Bytes, res2.Dupes.Sets, res.Bytes, res.Dupes.Sets)
	}
}
