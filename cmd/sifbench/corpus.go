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
	done   chan error
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
	r.cmd.Stderr = os.Stderr
	r.start = time.Now()
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { r.done <- r.cmd.Wait() }()
	return r, nil
}

// waitReady polls the daemon's status every 5 ms until its first scan is
// done, and records the time to ready and the peak RSS so far. The daemon
// is killed if it fails.
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
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.peakKB = vmHWM(r.cmd.Process.Pid)
	return nil
}

// stop sends SIGTERM and waits; it returns the peak RSS in KiB seen by the
// kernel over the whole life of the process.
func (r *daemonRun) stop() (int64, error) {
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
	if kb := maxRSSKB(r.cmd.ProcessState); kb > 0 {
		return kb, nil
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
	PeakRSSMB   float64   `json:"peak_rss_mb"`
	Restart     float64   `json:"restart_seconds"`
}

// benchCorpus indexes a copy of the corpus from a warm page cache with the
// real sifd, three times on a fresh index, then once more on the existing
// index (a restart that reads nothing).
func benchCorpus(ctx context.Context, c *common) (*corpusResult, error) {
	sifd, _, err := buildBinaries(c.workDir)
	if err != nil {
		return nil, err
	}
	corpus := filepath.Join(c.workDir, "corpus")
	files, size, err := copyTree(c.src, corpus)
	if err != nil {
		return nil, err
	}
	res := &corpusResult{Corpus: c.src, Files: files, Bytes: size}
	var peak int64
	for i := range 3 {
		if err := warm(corpus); err != nil {
			return nil, err
		}
		work := filepath.Join(c.workDir, fmt.Sprintf("run%d", i))
		os.MkdirAll(work, 0o755)
		d, err := startDaemon(ctx, sifd, corpus, work)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, d.ready.Seconds())
		kb, err := d.stop()
		if err != nil {
			return nil, err
		}
		peak = max(peak, kb)
		res.IndexBytes = dirSize(d.db)
		if i == 2 {
			d, err := startDaemon(ctx, sifd, corpus, work)
			if err != nil {
				return nil, err
			}
			res.Restart = d.ready.Seconds()
			if _, err := d.stop(); err != nil {
				return nil, err
			}
		}
	}
	res.MedianSecs = median(res.Runs)
	res.MBps = mb(size) / res.MedianSecs
	res.FilesPerSec = float64(files) / res.MedianSecs
	res.IndexShare = 100 * float64(res.IndexBytes) / float64(size)
	res.PeakRSSMB = float64(peak) / 1024
	if !c.json {
		fmt.Printf("corpus %s: %d files, %.1f MB (copied, page cache warm)\n", c.src, files, mb(size))
		fmt.Printf("sifd run to ready, fresh index, %d cores: runs %v s, median %.2f s = %.0f MB/s, %.0f files/s\n",
			runtime.NumCPU(), fmtSecs(res.Runs), res.MedianSecs, res.MBps, res.FilesPerSec)
		fmt.Printf("restart on the unchanged tree: %.2f s\n", res.Restart)
		fmt.Printf("index on disk after clean shutdown: %.2f MB = %.2f%% of the corpus\n", mb(res.IndexBytes), res.IndexShare)
		fmt.Printf("sifd peak RSS (max over runs): %.0f MB\n", res.PeakRSSMB)
	}
	return res, nil
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
