package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// restartRun is one run of sifd to ready on the benchmark tree.
type restartRun struct {
	ReadySecs float64 `json:"ready_seconds"`
	// From sifd's status once ready.
	Indexed   uint64 `json:"indexed"`
	Unchanged uint64 `json:"unchanged"`
	BytesRead uint64 `json:"bytes_read"` // file content read by the scans, summed over the roots
	// From /proc/PID/io just before the daemon is stopped.
	IO        procIO  `json:"proc_io"`
	PeakRSSMB float64 `json:"peak_rss_mb"`
}

// restartResult compares restarts on an unchanged tree with the first scan.
type restartResult struct {
	Files      int          `json:"files"`
	Dirs       int          `json:"dirs"`
	Bytes      int64        `json:"bytes"`
	CreateSecs float64      `json:"create_seconds"`
	First      restartRun   `json:"first_scan"`
	Restarts   []restartRun `json:"restarts"`
	// WalkSecs is the median of bare walks of the tree with an lstat of
	// every file, in sifbench, one just before each restart: the least a
	// metadata walk costs here, under the same load.
	WalkSecs   float64   `json:"bare_walk_seconds"`
	Walks      []float64 `json:"bare_walks_seconds"`
	MedianSecs float64   `json:"restart_median_seconds"`
	RatioFirst float64   `json:"restart_over_first_scan"`
	RatioWalk  float64   `json:"restart_over_bare_walk"`
	Unexpected []string  `json:"unexpected,omitempty"`
}

// benchRestart creates a tree of small files, indexes it once, and then
// restarts sifd on it three times, each time timing the run to a ready
// index and checking that nothing was read again. With cf.cpuProfile or
// cf.memProfile it restarts sifd once more, untimed, with --pprof, and
// saves its CPU profile over the restart and its heap profile once ready.
func benchRestart(ctx context.Context, c *common, lf *liveFlags, cf *corpusFlags) (*restartResult, error) {
	n := lf.files
	if n <= 0 {
		n = 100_000
	}
	sifd, _, work, err := buildLive(c)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(work, "root")
	res := &restartResult{Files: n, Dirs: max(1, n/100)}
	t0 := time.Now()
	if _, res.Bytes, err = populate(root, n, res.Dirs, 200, 4000, 3); err != nil {
		return nil, err
	}
	res.CreateSecs = since(t0)
	fmt.Fprintf(os.Stderr, "sifbench: %d files, %.1f MB in %d directories created in %.1f s; first scan\n", n, mb(res.Bytes), res.Dirs, res.CreateSecs)

	// run starts sifd on the tree, waits for ready, reads its status and
	// I/O, and stops it cleanly.
	run := func() (restartRun, error) {
		var rr restartRun
		d, err := startDaemon(ctx, sifd, root, work)
		if err != nil {
			return rr, err
		}
		rr.ReadySecs = d.ready.Seconds()
		st, err := ipc.NewClient(d.socket).Status(ctx)
		if err != nil {
			d.stop()
			return rr, err
		}
		rr.Indexed, rr.Unchanged = st.Counters.Indexed, st.Counters.Unchanged
		for _, r := range st.Roots {
			rr.BytesRead += r.BytesRead
		}
		rr.IO, err = readProcIO(d.cmd.Process.Pid)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sifbench: %v\n", err)
		}
		kb, err := d.stop()
		rr.PeakRSSMB = float64(kb) / 1024
		return rr, err
	}
	if res.First, err = run(); err != nil {
		return nil, err
	}
	if res.First.Indexed != uint64(n) {
		res.Unexpected = append(res.Unexpected, fmt.Sprintf("first scan: counters.indexed = %d, want %d", res.First.Indexed, n))
	}
	var secs []float64
	for i := range 3 {
		// The page cache holds the tree, as it does for the restarts.
		t1 := time.Now()
		walked := len(regularFiles(root, 0, 1<<62))
		res.Walks = append(res.Walks, since(t1))
		if walked != n {
			return nil, fmt.Errorf("bare walk found %d files, want %d", walked, n)
		}
		fmt.Fprintf(os.Stderr, "sifbench: restart %d\n", i+1)
		rr, err := run()
		if err != nil {
			return nil, err
		}
		if rr.Indexed != 0 || rr.Unchanged != uint64(n) || rr.BytesRead != 0 {
			res.Unexpected = append(res.Unexpected, fmt.Sprintf("restart %d: counters.indexed = %d (want 0), counters.unchanged = %d (want %d), bytes_read = %d (want 0)",
				i+1, rr.Indexed, rr.Unchanged, n, rr.BytesRead))
		}
		res.Restarts = append(res.Restarts, rr)
		secs = append(secs, rr.ReadySecs)
	}
	res.MedianSecs = median(secs)
	res.WalkSecs = median(res.Walks)
	if cf.cpuProfile != "" || cf.memProfile != "" {
		fmt.Fprintf(os.Stderr, "sifbench: profiled restart\n")
		if err := profileScan(ctx, sifd, root, work, res.MedianSecs, cf); err != nil {
			return nil, err
		}
	}
	res.RatioFirst = res.MedianSecs / res.First.ReadySecs
	res.RatioWalk = res.MedianSecs / res.WalkSecs
	if !c.json {
		fmt.Printf("restart: %d files of 200-4000 bytes (%.1f MB) in %d directories, page cache warm; %d cores\n",
			n, mb(res.Bytes), res.Dirs, runtime.NumCPU())
		rows := [][]string{{"run", "to ready s", "indexed", "unchanged", "status bytes_read", "/proc read_bytes", "/proc rchar MB", "peak RSS MB"}}
		row := func(name string, r restartRun) []string {
			return []string{name, f2(r.ReadySecs), strconv.FormatUint(r.Indexed, 10), strconv.FormatUint(r.Unchanged, 10),
				strconv.FormatUint(r.BytesRead, 10), strconv.FormatInt(r.IO.ReadBytes, 10), f1(mb(r.IO.Rchar)), f0(r.PeakRSSMB)}
		}
		rows = append(rows, row("first scan (fresh index)", res.First))
		for i, r := range res.Restarts {
			rows = append(rows, row(fmt.Sprintf("restart %d", i+1), r))
		}
		fmt.Print(table(rows))
		fmt.Printf("restart median %.2f s of %s = %.3f x the first scan; a bare walk + lstat of the tree in sifbench, just before each restart: median %.2f s of %s (restart = %.2f x)\n",
			res.MedianSecs, fmtSecs(secs), res.RatioFirst, res.WalkSecs, fmtSecs(res.Walks), res.RatioWalk)
		for _, u := range res.Unexpected {
			fmt.Printf("UNEXPECTED: %s\n", u)
		}
	}
	return res, nil
}
