package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// daemonRun is one run of the real sifd over a corpus.
type daemonRun struct {
	cmd    *exec.Cmd
	socket string
	db     string
	start  time.Time
	ready  time.Duration
	peakKB int64
	// scanSecs is the first scan's own time, as the daemon reports it
	// (its roots' scan_seconds, the longest): from the walk's start to
	// its end, without the process's start and the index's creation.
	scanSecs float64
	done     chan error
}

// startDaemon starts sifd on root and waits until its first scan is done.
func startDaemon(ctx context.Context, sifd, root, work string, extra ...string) (*daemonRun, error) {
	r, err := launchDaemon(sifd, root, work, extra...)
	if err != nil {
		return nil, err
	}
	if err := r.waitReady(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// launchDaemon starts sifd on root with its index and socket in work, and
// returns at once.
func launchDaemon(sifd, root, work string, extra ...string) (*daemonRun, error) {
	r := &daemonRun{socket: filepath.Join(work, "s.sock"), db: filepath.Join(work, "db"), done: make(chan error, 1)}
	args := append([]string{"run", "--root", root, "--db", r.db, "--socket", r.socket, "--log-level", "warn"}, extra...)
	r.cmd = exec.Command(sifd, args...)
	// The daemon in the process started, not under a supervisor of its
	// own: its pid's CPU time and peak RSS are the daemon's.
	r.cmd.Env = append(os.Environ(), "SIFD_SUPERVISE=0")
	r.cmd.Stderr = os.Stderr
	r.start = time.Now()
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { r.done <- r.cmd.Wait() }()
	return r, nil
}

// cpuUntilIdle returns the CPU seconds process pid has used once it has
// stopped using any: no more than a clock tick in 300 ms.
func cpuUntilIdle(ctx context.Context, pid int) (float64, error) {
	last, err := cpuSeconds(pid)
	if err != nil {
		return 0, err
	}
	for range 200 { // a minute at most
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
		now, err := cpuSeconds(pid)
		if err != nil {
			return 0, err
		}
		if now-last <= 1.5/clockTicks() {
			return now, nil
		}
		last = now
	}
	return last, nil
}

// waitCompacted polls the daemon's status every 20 ms until it is not
// compacting the index after its first scan, so that the index's size is
// the one a user sees once the daemon has settled.
func (r *daemonRun) waitCompacted(ctx context.Context) error {
	return r.waitStatus(ctx, func(st *ipc.Status) bool { return !st.Index.Compacting })
}

// waitStatus polls the daemon's status every 20 ms until until is true of
// it.
func (r *daemonRun) waitStatus(ctx context.Context, until func(*ipc.Status) bool) error {
	c := ipc.NewClient(r.socket)
	for {
		st, err := c.Status(ctx)
		if err != nil {
			return err
		}
		if until(st) {
			return nil
		}
		select {
		case err := <-r.done:
			return fmt.Errorf("sifd exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitReady waits until the daemon's first scan is done, and records the
// time to ready and the peak RSS so far: it polls the status every 5 ms
// until the socket answers, then waits in one request (as sifctl wait
// does), so that polling does not load the daemon it times. The daemon is
// killed if it fails.
func (r *daemonRun) waitReady(ctx context.Context) error {
	c := ipc.NewClient(r.socket)
	for {
		select {
		case err := <-r.done:
			return fmt.Errorf("sifd exited: %v", err)
		case <-ctx.Done():
			r.cmd.Process.Kill()
			return ctx.Err()
		default:
		}
		st, err := c.Status(ctx)
		if err == nil && st.State == "ready" {
			r.ready = time.Since(r.start)
			for _, root := range st.Roots {
				r.scanSecs = max(r.scanSecs, root.ScanSecs)
			}
			break
		}
		if err == nil {
			if _, err := c.Wait(ctx, ipc.MaxWait); err == nil {
				continue
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.notePeak()
	return nil
}

// notePeak reads the daemon's VmHWM and returns the highest read so far,
// in KiB. A read is not monotonic: the kernel reports the larger of its
// recorded high-water mark, updated only when pages are unmapped, and the
// current RSS, itself summed from per-CPU counters that lag; so a later
// read can be a little lower than an earlier one although the true peak
// cannot fall. Each figure is the running maximum of the reads.
func (r *daemonRun) notePeak() int64 {
	r.peakKB = max(r.peakKB, vmHWM(r.cmd.Process.Pid))
	return r.peakKB
}

// stop sends SIGTERM and waits; it returns the peak RSS in KiB seen by the
// kernel over the whole life of the process.
// The peak is VmHWM, read until sifd exits (see pollPeak); where /proc
// has none, ru_maxrss.
func (r *daemonRun) stop() (int64, error) {
	peak := pollPeak(r.cmd.Process.Pid)
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		if err != nil {
			return 0, fmt.Errorf("sifd: %v", err)
		}
	case <-time.After(60 * time.Second):
		r.cmd.Process.Kill()
		return 0, fmt.Errorf("sifd did not stop within 60s")
	}
	if kb := peak(); kb > 0 {
		return max(kb, r.peakKB), nil
	}
	if kb := maxRSSKB(r.cmd.ProcessState); kb > 0 {
		return max(kb, r.peakKB), nil
	}
	return r.peakKB, nil
}

// vmHWM reads a process's peak resident set size in KiB from /proc.
func vmHWM(pid int) int64 { return procStatusKB(pid, "VmHWM") }

type corpusResult struct {
	Corpus      string    `json:"corpus"`
	Files       int       `json:"files"`
	Bytes       int64     `json:"bytes"`
	Runs        []float64 `json:"ready_seconds"`
	MedianSecs  float64   `json:"median_seconds"`
	MBps        float64   `json:"mb_per_second"`
	FilesPerSec float64   `json:"files_per_second"`
	IndexBytes  int64     `json:"index_bytes"`
	IndexShare  float64   `json:"index_share_percent"`
	// IndexAllocated is the disk space allocated to the index after the
	// clean shutdown, IndexBytes that of its files' sizes. The peaks are
	// the largest seen over the runs with 2 workers, from sifd's start
	// through its first scan, the compaction after it and its shutdown
	// (watchDisk), with the write-ahead logs and tables of the peak of
	// file sizes; the shares are of the corpus's bytes.
	IndexAllocated      int64   `json:"index_allocated_bytes"`
	IndexPeakBytes      int64   `json:"index_peak_bytes"`
	IndexPeakShare      float64 `json:"index_peak_share_percent"`
	IndexPeakAllocated  int64   `json:"index_peak_allocated_bytes"`
	IndexPeakAllocShare float64 `json:"index_peak_allocated_share_percent"`
	IndexPeakLogs       int64   `json:"index_peak_log_bytes"`
	IndexPeakTables     int64   `json:"index_peak_table_bytes"`
	PeakRSSMB           float64 `json:"peak_rss_mb"`
	Restart             float64 `json:"restart_seconds"`

	// The table of issue 9: the floor, ssdeep, sifd and the sketcher on
	// the same tree in one run.
	// SHA256Runs are the wall times of sha256sum over every file in
	// SHA256Procs processes at once, as many as cores (sha256Floor), each
	// taken right before a timed run of sifd with 2 workers, so that both
	// meet the same load; ReadyOverSHA256 is the median time to ready over
	// their median (goal ≤ 1.5).
	SHA256Procs     int       `json:"sha256sum_processes"`
	SHA256Runs      []float64 `json:"sha256sum_seconds"`
	SHA256Secs      float64   `json:"sha256sum_median_seconds"`
	ReadyOverSHA256 float64   `json:"ready_over_sha256sum"`
	SsdeepSecs      float64   `json:"ssdeep_seconds,omitempty"`
	ReadyVsSsdeep   float64   `json:"ready_over_ssdeep,omitempty"`
	CPURuns         []float64 `json:"cpu_seconds"`
	CPUSecs         float64   `json:"cpu_median_seconds"`
	// CPUIdleRuns is the CPU until sifd is idle after ready: the first
	// scan's compaction counted too.
	CPUIdleRuns     []float64 `json:"cpu_until_idle_seconds"`
	CPUIdleSecs     float64   `json:"cpu_until_idle_median_seconds"`
	SketcherCPUSecs float64   `json:"sketcher_cpu_seconds"`
	SketcherMBps    float64   `json:"sketcher_mb_per_second"`
	CPUOverSketcher float64   `json:"cpu_over_sketcher"`

	SketcherNoSimiSecs float64 `json:"sketcher_no_simihash_cpu_seconds"`
	CPUOverNoSimi      float64 `json:"cpu_over_sketcher_no_simihash"`
	// Floor is the work no first scan can skip, done in sifbench without
	// an index; CPUOverFloor is sifd's CPU over its CPU.
	Floor        *floorResult `json:"floor"`
	CPUOverFloor float64      `json:"cpu_over_floor"`
	// ScanRuns and OneWorkerScanRuns are the scans' own times (the
	// daemon's scan_seconds) with 2 workers and with 1; ScanTwoOverOne is
	// the throughput of the scan with 2 over that with 1, start-up left
	// out.
	ScanRuns          []float64 `json:"scan_seconds"`
	OneWorkerScanRuns []float64 `json:"one_worker_scan_seconds"`
	ScanTwoOverOne    float64   `json:"scan_two_workers_speedup"`
	OneWorkerRuns     []float64 `json:"one_worker_ready_seconds"`
	OneWorkerSecs     float64   `json:"one_worker_median_seconds"`
	TwoOverOne        float64   `json:"two_workers_speedup"`

	// LoadAvg is /proc/loadavg once the runs are done.
	LoadAvg string `json:"load_average,omitempty"`

	// Baselines hold the same figures of other sifd binaries
	// (--baseline), run in turn with this one on the same tree.
	Baselines []*baselineResult `json:"baselines,omitempty"`
}

// baselineResult is what benchCorpus measures of the baseline sifd.
type baselineResult struct {
	Sifd          string    `json:"sifd"`
	Runs          []float64 `json:"ready_seconds"`
	MedianSecs    float64   `json:"median_seconds"`
	CPURuns       []float64 `json:"cpu_seconds"`
	CPUSecs       float64   `json:"cpu_median_seconds"`
	CPUIdleRuns   []float64 `json:"cpu_until_idle_seconds"`
	CPUIdleSecs   float64   `json:"cpu_until_idle_median_seconds"`
	OneWorkerRuns []float64 `json:"one_worker_ready_seconds"`
	OneWorkerSecs float64   `json:"one_worker_median_seconds"`
	TwoOverOne    float64   `json:"two_workers_speedup"`
	// The scans' own times, as corpusResult's.
	ScanRuns          []float64 `json:"scan_seconds"`
	OneWorkerScanRuns []float64 `json:"one_worker_scan_seconds"`
	ScanTwoOverOne    float64   `json:"scan_two_workers_speedup"`
}

// corpusFlags are the corpus benchmark's own flags.
type corpusFlags struct {
	runs       int
	modcache   string // modules of the Go module cache to index, "" for --src
	cpuProfile string
	memProfile string
	// baselines are other sifd binaries to time in turn with this
	// tree's, run for run, so that a change is weighed against what it
	// changes under the same load.
	baselines []string
}

// benchCorpus indexes a copy of the corpus from a warm page cache with the
// real sifd, cf.runs times on a fresh index with 2 workers and as many with
// 1, then once more on the existing index (a restart that reads nothing).
// Before it, in the same run, it times what the scan is measured against:
// sha256sum of every file in as many processes as cores (reading and
// hashing, the floor time to ready is weighed against; timed again right
// before each run of sifd with 2 workers),
// ssdeep -r (if installed), and the sketcher alone over every file, in
// this process. With cf.cpuProfile or cf.memProfile it runs sifd once more,
// untimed, with --pprof, and saves its CPU profile over the scan and its
// heap profile once ready (whose alloc_space covers the whole scan).
// With cf.baselines, every timed run of sifd is preceded by the same run
// of each baseline binary, and all are reported.
func benchCorpus(ctx context.Context, c *common, cf *corpusFlags) (*corpusResult, error) {
	sifd, _, err := buildBinaries(c.workDir)
	if err != nil {
		return nil, err
	}
	corpus := filepath.Join(c.workDir, "corpus")
	var files int
	var size int64
	name := c.src
	if cf.modcache != "" {
		name, files, size, err = copyModCache(cf.modcache, corpus)
	} else {
		files, size, err = copyTree(c.src, corpus)
	}
	if err != nil {
		return nil, err
	}
	res := &corpusResult{Corpus: name, Files: files, Bytes: size}
	if !c.json {
		fmt.Printf("corpus %s: %d files, %.1f MB (copied, page cache warm), %d cores\n", name, files, mb(size), runtime.NumCPU())
	}

	if err := warm(corpus); err != nil {
		return nil, err
	}
	res.SHA256Procs = runtime.NumCPU()
	sha, err := newSHA256Floor(corpus, res.SHA256Procs)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("ssdeep"); err == nil {
		t0 := time.Now()
		cmd := exec.CommandContext(ctx, "ssdeep", "-r", ".")
		cmd.Dir, cmd.Stderr = corpus, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("ssdeep -r: %w", err)
		}
		res.SsdeepSecs = since(t0)
	} else if !c.json {
		fmt.Println("ssdeep is not installed: its row is left out")
	}
	if res.SketcherCPUSecs, err = sketchTree(corpus, false); err != nil {
		return nil, err
	}
	if res.SketcherNoSimiSecs, err = sketchTree(corpus, true); err != nil {
		return nil, err
	}
	if res.Floor, err = measureFloor(corpus, cf.runs); err != nil {
		return nil, err
	}

	var (
		peak     int64
		diskPeak diskUse
	)
	// timedBin runs bin on a fresh index until it is ready, and returns
	// the CPU it took, and with 2 workers also the CPU until it is idle
	// again: the work a first scan leaves for after ready (compacting the
	// index) counted too. The runs of this sifd with 2 workers also watch
	// the index directory from the start to the clean shutdown, for the
	// peak of its disk use.
	timedBin := func(bin, tag string, workers, i int) (*daemonRun, float64, float64, error) {
		if err := warm(corpus); err != nil {
			return nil, 0, 0, err
		}
		work := filepath.Join(c.workDir, fmt.Sprintf("%srun%d-%d", tag, workers, i))
		os.MkdirAll(work, 0o755)
		d, err := launchDaemon(bin, corpus, work, "--workers", strconv.Itoa(workers))
		if err != nil {
			return nil, 0, 0, err
		}
		if tag == "" && workers == 2 {
			w := watchDisk(d.db)
			defer func() { diskPeak.keep(w.stop()) }()
		}
		if err := d.waitReady(ctx); err != nil {
			return nil, 0, 0, err
		}
		cpu, err := cpuSeconds(d.cmd.Process.Pid)
		var idle float64
		if err == nil && workers == 2 {
			if err = d.waitCompacted(ctx); err == nil { // the index size is taken from these runs
				idle, err = cpuUntilIdle(ctx, d.cmd.Process.Pid)
			}
		}
		if err != nil {
			d.stop()
			return nil, 0, 0, err
		}
		kb, err := d.stop()
		if err != nil {
			return nil, 0, 0, err
		}
		if tag == "" {
			peak = max(peak, kb)
		}
		return d, cpu, idle, nil
	}
	timed := func(workers, i int) (*daemonRun, float64, float64, error) { return timedBin(sifd, "", workers, i) }
	for _, b := range cf.baselines {
		res.Baselines = append(res.Baselines, &baselineResult{Sifd: b})
	}
	for i := range cf.runs {
		for j, base := range res.Baselines {
			tag := fmt.Sprintf("base%d-", j)
			d, _, _, err := timedBin(base.Sifd, tag, 1, i)
			if err != nil {
				return nil, fmt.Errorf("baseline %s: %w", base.Sifd, err)
			}
			base.OneWorkerRuns = append(base.OneWorkerRuns, d.ready.Seconds())
			base.OneWorkerScanRuns = append(base.OneWorkerScanRuns, d.scanSecs)
			d, cpu, idle, err := timedBin(base.Sifd, tag, 2, i)
			if err != nil {
				return nil, fmt.Errorf("baseline %s: %w", base.Sifd, err)
			}
			base.Runs = append(base.Runs, d.ready.Seconds())
			base.ScanRuns = append(base.ScanRuns, d.scanSecs)
			base.CPURuns = append(base.CPURuns, cpu)
			base.CPUIdleRuns = append(base.CPUIdleRuns, idle)
		}
		d, _, _, err := timed(1, i)
		if err != nil {
			return nil, err
		}
		res.OneWorkerRuns = append(res.OneWorkerRuns, d.ready.Seconds())
		res.OneWorkerScanRuns = append(res.OneWorkerScanRuns, d.scanSecs)
		secs, err := sha.time(ctx)
		if err != nil {
			return nil, err
		}
		res.SHA256Runs = append(res.SHA256Runs, secs)
		d, cpu, idle, err := timed(2, i)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, d.ready.Seconds())
		res.ScanRuns = append(res.ScanRuns, d.scanSecs)
		res.CPURuns = append(res.CPURuns, cpu)
		res.CPUIdleRuns = append(res.CPUIdleRuns, idle)
		u := diskUseOf(d.db)
		res.IndexBytes, res.IndexAllocated = u.Bytes, u.Allocated
	}
	last, err := startDaemon(ctx, sifd, corpus, filepath.Join(c.workDir, fmt.Sprintf("run2-%d", cf.runs-1)), "--workers", "2")
	if err != nil {
		return nil, err
	}
	res.Restart = last.ready.Seconds()
	if _, err := last.stop(); err != nil {
		return nil, err
	}

	res.MedianSecs = median(res.Runs)
	res.MBps = mb(size) / res.MedianSecs
	res.FilesPerSec = float64(files) / res.MedianSecs
	res.IndexShare = 100 * float64(res.IndexBytes) / float64(size)
	res.IndexPeakBytes, res.IndexPeakAllocated = diskPeak.Bytes, diskPeak.Allocated
	res.IndexPeakLogs, res.IndexPeakTables = diskPeak.Logs, diskPeak.Tables
	res.IndexPeakShare = 100 * float64(diskPeak.Bytes) / float64(size)
	res.IndexPeakAllocShare = 100 * float64(diskPeak.Allocated) / float64(size)
	res.SHA256Secs = median(res.SHA256Runs)
	res.ReadyOverSHA256 = res.MedianSecs / res.SHA256Secs
	res.PeakRSSMB = float64(peak) / 1024
	res.CPUSecs = median(res.CPURuns)
	res.CPUIdleSecs = median(res.CPUIdleRuns)
	res.OneWorkerSecs = median(res.OneWorkerRuns)
	res.TwoOverOne = res.OneWorkerSecs / res.MedianSecs
	if m := median(res.ScanRuns); m > 0 {
		res.ScanTwoOverOne = median(res.OneWorkerScanRuns) / m
	}
	res.SketcherMBps = mb(size) / res.SketcherCPUSecs
	res.CPUOverSketcher = res.CPUSecs / res.SketcherCPUSecs
	res.CPUOverNoSimi = res.CPUSecs / res.SketcherNoSimiSecs
	res.CPUOverFloor = res.CPUSecs / res.Floor.CPUSecs
	if res.SsdeepSecs > 0 {
		res.ReadyVsSsdeep = res.MedianSecs / res.SsdeepSecs
	}
	res.LoadAvg = loadAverage()
	for _, base := range res.Baselines {
		base.MedianSecs = median(base.Runs)
		base.CPUSecs = median(base.CPURuns)
		base.CPUIdleSecs = median(base.CPUIdleRuns)
		base.OneWorkerSecs = median(base.OneWorkerRuns)
		base.TwoOverOne = base.OneWorkerSecs / base.MedianSecs
		if m := median(base.ScanRuns); m > 0 {
			base.ScanTwoOverOne = median(base.OneWorkerScanRuns) / m
		}
	}

	if cf.cpuProfile != "" || cf.memProfile != "" {
		if err := profileScan(ctx, sifd, corpus, filepath.Join(c.workDir, "profiled"), res.MedianSecs, cf); err != nil {
			return nil, err
		}
	}
	if !c.json {
		printCorpus(res, cf.runs)
	}
	return res, nil
}

// printCorpus prints the table of issue 9 and the index's figures.
func printCorpus(r *corpusResult, runs int) {
	secs := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) + " s" }
	ratio := func(x float64, of string) string { return strconv.FormatFloat(x, 'f', 2, 64) + "× " + of }
	rows := [][]string{
		{"", "time", ""},
		{fmt.Sprintf("sha256sum of every file, %d processes at once", r.SHA256Procs), secs(r.SHA256Secs),
			fmt.Sprintf("median of %s; reading and hashing: the floor", fmtSecs(r.SHA256Runs))},
	}
	if r.SsdeepSecs > 0 {
		rows = append(rows, []string{"ssdeep -r (one core, no index)", secs(r.SsdeepSecs), ""})
	}
	ready := []string{"sifd run to ready, fresh index, 2 workers", secs(r.MedianSecs),
		fmt.Sprintf("median of %s; %.0f MB/s, %.0f files/s", fmtSecs(r.Runs), r.MBps, r.FilesPerSec)}
	ready[2] = ratio(r.ReadyOverSHA256, "the sha256sum floor (goal ≤ 1.5); ") + ready[2]
	if r.SsdeepSecs > 0 {
		ready[2] = ratio(r.ReadyVsSsdeep, "ssdeep (goal ≤ 0.5), ") + ready[2]
	}
	rows = append(rows, ready,
		[]string{"CPU spent by sifd for it", secs(r.CPUSecs), fmt.Sprintf("median of %s; %s (goal ≤ 1.5)", fmtSecs(r.CPURuns), ratio(r.CPUOverSketcher, "the sketcher"))},
		[]string{"CPU until sifd is idle again", secs(r.CPUIdleSecs), fmt.Sprintf("median of %s; the compaction after ready counted too", fmtSecs(r.CPUIdleRuns))},
		[]string{"the sketcher alone over every file, in process", secs(r.SketcherCPUSecs), fmt.Sprintf("CPU; %.0f MB/s", r.SketcherMBps)},
		[]string{"the same without SimiHash, as sifd runs it", secs(r.SketcherNoSimiSecs), fmt.Sprintf("CPU; %.0f MB/s; sifd's CPU is %s", mb(r.Bytes)/r.SketcherNoSimiSecs, ratio(r.CPUOverNoSimi, "it"))},
		[]string{"the floor: walk, read and SHA-256 every file, sketch each distinct content once; no index",
			secs(r.Floor.CPUSecs), fmt.Sprintf("CPU, 1 worker, median; %s; sifd's CPU is %s", ratio(r.Floor.CPUSecs/r.SketcherCPUSecs, "the sketcher"), ratio(r.CPUOverFloor, "it"))},
		[]string{"sifd run to ready, 1 worker", secs(r.OneWorkerSecs), fmt.Sprintf("median of %s; 2 workers are %s (goal ≥ 1.7)", fmtSecs(r.OneWorkerRuns), ratio(r.TwoOverOne, "as fast"))},
		[]string{"the scan alone (scan_seconds), 1 and 2 workers", secs(median(r.OneWorkerScanRuns)) + ", " + secs(median(r.ScanRuns)),
			fmt.Sprintf("medians, start-up left out; 2 workers give %.2f× the throughput (goal ≥ 1.7)", r.ScanTwoOverOne)},
		[]string{"the floor with 1 and 2 workers", secs(r.Floor.OneSecs) + ", " + secs(r.Floor.TwoSecs), fmt.Sprintf("medians; 2 workers are %s: this machine's own speed-up", ratio(r.Floor.TwoOverOne, "as fast"))},
		[]string{"restart on the unchanged tree", secs(r.Restart), ""},
	)
	fmt.Print(table(rows))
	for _, b := range r.Baselines {
		fmt.Printf("baseline %s, run in turn with this sifd:\n", b.Sifd)
		fmt.Print(table([][]string{
			{"", "baseline", "this sifd", "this / baseline"},
			{"to ready, 2 workers (median)", secs(b.MedianSecs) + " " + fmtSecs(b.Runs), secs(r.MedianSecs), f2(r.MedianSecs / b.MedianSecs)},
			{"CPU for it (median)", secs(b.CPUSecs) + " " + fmtSecs(b.CPURuns), secs(r.CPUSecs), f2(r.CPUSecs / b.CPUSecs)},
			{"CPU until idle (median)", secs(b.CPUIdleSecs) + " " + fmtSecs(b.CPUIdleRuns), secs(r.CPUIdleSecs), f2(r.CPUIdleSecs / b.CPUIdleSecs)},
			{"to ready, 1 worker (median)", secs(b.OneWorkerSecs) + " " + fmtSecs(b.OneWorkerRuns), secs(r.OneWorkerSecs), f2(r.OneWorkerSecs / b.OneWorkerSecs)},
			{"2 workers as fast as 1", f2(b.TwoOverOne) + "×", f2(r.TwoOverOne) + "×", ""},
			{"the scan alone, 1 and 2 workers (medians)", secs(median(b.OneWorkerScanRuns)) + ", " + secs(median(b.ScanRuns)),
				secs(median(r.OneWorkerScanRuns)) + ", " + secs(median(r.ScanRuns)), ""},
			{"2 workers' throughput over 1's, the scan alone", f2(b.ScanTwoOverOne) + "×", f2(r.ScanTwoOverOne) + "×", ""},
		}))
	}
	fmt.Print(table([][]string{
		{"index directory", "file sizes", "allocated on disk"},
		{"after clean shutdown", fmt.Sprintf("%.2f MB = %.2f%%", mb(r.IndexBytes), r.IndexShare),
			fmt.Sprintf("%.2f MB = %.2f%%", mb(r.IndexAllocated), 100*float64(r.IndexAllocated)/float64(r.Bytes))},
		{"peak from start to shutdown (max over runs)", fmt.Sprintf("%.2f MB = %.2f%%", mb(r.IndexPeakBytes), r.IndexPeakShare),
			fmt.Sprintf("%.2f MB = %.2f%%", mb(r.IndexPeakAllocated), r.IndexPeakAllocShare)},
	}))
	fmt.Printf("(shares of the corpus's %.1f MB; at the peak, write-ahead logs %.2f MB, tables %.2f MB; load average after the runs: %s)\n",
		mb(r.Bytes), mb(r.IndexPeakLogs), mb(r.IndexPeakTables), r.LoadAvg)
	fmt.Printf("sifd peak RSS (max over runs): %.0f MB\n", r.PeakRSSMB)
}

func fmtSecs(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, strconv.FormatFloat(x, 'f', 2, 64))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

type latencyResult struct {
	Queries        int     `json:"queries"`
	E2EMedianMs    float64 `json:"end_to_end_median_ms"`
	E2EP99Ms       float64 `json:"end_to_end_p99_ms"`
	ClientMedianMs float64 `json:"client_median_ms"`
	ClientP99Ms    float64 `json:"client_p99_ms"`
	DaemonMedianMs float64 `json:"daemon_median_ms"`
	DaemonP99Ms    float64 `json:"daemon_p99_ms"`
	MeanMatches    float64 `json:"mean_matches"`
}

// benchLatency times `sifctl similar` over n query files from the corpus:
// end to end (process start included), through the Go client, and inside
// the daemon.
func benchLatency(ctx context.Context, c *common) (*latencyResult, error) {
	sifd, sifctl, err := buildBinaries(c.workDir)
	if err != nil {
		return nil, err
	}
	corpus := filepath.Join(c.workDir, "corpus")
	if _, _, err := copyTree(c.src, corpus); err != nil {
		return nil, err
	}
	d, err := startDaemon(ctx, sifd, corpus, c.workDir)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	queries := pick(regularFiles(corpus, 10_000, 100_000), c.n)
	client := ipc.NewClient(d.socket)
	info, err := client.Info(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range queries[:min(5, len(queries))] { // warm up
		exec.Command(sifctl, "--socket", d.socket, "similar", q).Run()
	}
	var e2e, cl, dm []float64
	matches := 0
	for _, q := range queries {
		t0 := time.Now()
		cmd := exec.Command(sifctl, "--socket", d.socket, "similar", "--json", q)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				return nil, fmt.Errorf("sifctl similar %s: %v", q, err)
			}
		}
		e2e = append(e2e, ms(time.Since(t0)))
		var line struct {
			Matches []json.RawMessage `json:"matches"`
		}
		json.Unmarshal(out.Bytes(), &line)
		matches += len(line.Matches)

		t1 := time.Now()
		sk, err := ipc.SketchFile(q, info.Params)
		if err != nil {
			return nil, err
		}
		resp, err := client.Similar(ctx, ipc.NewSimilarRequest(q, sk))
		if err != nil {
			return nil, err
		}
		cl = append(cl, ms(time.Since(t1)))
		dm = append(dm, float64(resp.ElapsedNs)/1e6)
	}
	r := &latencyResult{
		Queries:     len(queries),
		E2EMedianMs: median(e2e), E2EP99Ms: percentile(e2e, 0.99),
		ClientMedianMs: median(cl), ClientP99Ms: percentile(cl, 0.99),
		DaemonMedianMs: median(dm), DaemonP99Ms: percentile(dm, 0.99),
		MeanMatches: float64(matches) / float64(len(queries)),
	}
	if !c.json {
		fmt.Printf("%d queries (files of 10-100 KB from %s), %.1f matches on average\n", r.Queries, c.src, r.MeanMatches)
		fmt.Print(table([][]string{
			{"", "median ms", "p99 ms"},
			{"sifctl similar, end to end (process start included)", f2(r.E2EMedianMs), f2(r.E2EP99Ms)},
			{"Go client: fingerprint + request", f2(r.ClientMedianMs), f2(r.ClientP99Ms)},
			{"inside the daemon", f3(r.DaemonMedianMs), f3(r.DaemonP99Ms)},
		}))
	}
	return r, nil
}

// pick returns n items spread evenly over xs.
func pick(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, xs[i*len(xs)/n])
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
func f2(x float64) string        { return strconv.FormatFloat(x, 'f', 2, 64) }
func f3(x float64) string        { return strconv.FormatFloat(x, 'f', 3, 64) }
