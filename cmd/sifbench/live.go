package main

// The live benchmarks run sifd as a user would, on trees sifbench writes
// itself, and measure it from the outside while files change (freshness,
// churn) or when it restarts on an unchanged tree (restart). Their
// process figures come from Linux's /proc; elsewhere they read as zero.

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sif-dev/sif/daemon/config"
)

// liveFlags are the flags of the live benchmarks.
type liveFlags struct {
	size    string        // freshness: size of the edited file
	settle  time.Duration // freshness, churn: sifd's --settle-delay
	files   int           // restart, churn: files in the tree; 0 means the benchmark's default
	seconds float64       // churn: length of each phase
}

// register adds the live benchmarks' flags to fs.
func (lf *liveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&lf.size, "size", "1MB", "freshness: size of the edited file; load: size of the tree, default 1GiB (units B, KB, MB, GB, KiB, MiB, GiB..., as sifd's sizes)")
	fs.DurationVar(&lf.settle, "settle", 500*time.Millisecond, "freshness, churn: sifd's --settle-delay")
	fs.IntVar(&lf.files, "files", 0, "restart, churn, million: files in the tree (default 100000 for restart, 20000 for churn, 1000000 for million); fleet: files in all hosts (default 1000000)")
	fs.Float64Var(&lf.seconds, "seconds", 20, "churn: seconds of edits at each rate")
}

// buildLive builds sifd and sifctl into c's work directory, as
// buildBinaries does, and returns that directory with its symlinks
// resolved: sifd reports the paths under a root so, and a live benchmark
// makes its root there.
func buildLive(c *common) (sifd, sifctl, work string, err error) {
	if sifd, sifctl, err = buildBinaries(c.workDir); err != nil {
		return "", "", "", err
	}
	if work, err = filepath.EvalSymlinks(c.workDir); err != nil {
		return "", "", "", err
	}
	return sifd, sifctl, work, nil
}

// parseSize reads --size: a positive size in config.ParseSize's syntax,
// such as 1MB, 512KiB, 1.5GiB or 4096.
func parseSize(s string) (int64, error) {
	n, err := config.ParseSize(s)
	if err == nil && n <= 0 {
		err = fmt.Errorf("%q: want a positive size", s)
	}
	return n, err
}

// randomText returns n bytes of random lowercase words in lines of about
// 70 characters. sifd takes it for text, and two such texts share no
// fingerprints, so each version of a file resembles no other.
func randomText(r *rand.Rand, n int) []byte {
	b := make([]byte, 0, n+16)
	col := 0
	for len(b) < n {
		// One 64-bit draw gives up to 12 letters of 5 bits each; the
		// letters past 'z' are folded back, a bias that does not matter here.
		w := 2 + r.IntN(8)
		x := r.Uint64()
		for range w {
			b = append(b, 'a'+byte(x&31)%26)
			x >>= 5
		}
		col += w + 1
		if col > 70 {
			b = append(b, '\n')
			col = 0
		} else {
			b = append(b, ' ')
		}
	}
	return b[:n]
}

// treeDir names the i-th directory of a benchmark tree: two levels of 32
// directories each, so a tree of 1000 directories has no directory with
// more than 32 entries besides its files.
func treeDir(root string, i int) string {
	return filepath.Join(root, fmt.Sprintf("d%02d", i/32), fmt.Sprintf("e%02d", i%32))
}

// populate writes files random text files of lo to hi bytes into dirs
// directories under root, from a deterministic seed, and returns their
// paths and total size. It reports progress on stderr for large trees.
func populate(root string, files, dirs, lo, hi int, seed uint64) ([]string, int64, error) {
	r := rand.New(rand.NewPCG(seed, uint64(files)))
	dirs = max(1, dirs)
	for i := range dirs {
		if err := os.MkdirAll(treeDir(root, i), 0o755); err != nil {
			return nil, 0, err
		}
	}
	paths := make([]string, 0, files)
	var total int64
	start := time.Now()
	for i := range files {
		p := filepath.Join(treeDir(root, i%dirs), fmt.Sprintf("f%06d.txt", i))
		b := randomText(r, lo+r.IntN(hi-lo+1))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, 0, err
		}
		paths = append(paths, p)
		total += int64(len(b))
		if files >= 10_000 && (i+1)%10_000 == 0 {
			fmt.Fprintf(os.Stderr, "sifbench: created %d/%d files (%.0f s)\n", i+1, files, since(start))
		}
	}
	return paths, total, nil
}

// procIO is what /proc/PID/io says a process read.
type procIO struct {
	// ReadBytes counts the bytes the process caused to be fetched from
	// storage: reads served by the page cache do not count, so a file
	// re-read from a warm cache leaves it at 0.
	ReadBytes int64 `json:"read_bytes"`
	// Rchar counts every byte returned by read(2) and pread(2), from the
	// page cache or not, from any file: it includes Pebble reading its own
	// tables and log, which a restart must do, as well as any file content.
	Rchar int64 `json:"rchar"`
}

// readProcIO reads /proc/PID/io.
func readProcIO(pid int) (procIO, error) {
	var io procIO
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return io, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "read_bytes":
			io.ReadBytes = n
		case "rchar":
			io.Rchar = n
		}
	}
	return io, nil
}

// cpuSeconds returns the CPU time a process has used, user and system,
// from fields 14 and 15 (utime, stime) of /proc/PID/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields from the last ')'. Field 3 (state) is then the first.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("cannot parse /proc/PID/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("cannot parse /proc/PID/stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("cannot parse /proc/PID/stat")
	}
	return float64(utime+stime) / clockTicks(), nil
}

var clkTck float64

// clockTicks returns the kernel's clock ticks per second, in which
// /proc/PID/stat counts CPU time: getconf CLK_TCK, else 100, the value of
// USER_HZ on every Linux architecture Go supports.
func clockTicks() float64 {
	if clkTck == 0 {
		clkTck = 100
		if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
				clkTck = float64(n)
			}
		}
	}
	return clkTck
}

// procStatusKB reads a field given in kB, such as "VmRSS" or "VmHWM", from
// /proc/PID/status; 0 if it cannot.
func procStatusKB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// pollPeak reads the peak resident set size (VmHWM) of the running
// process pid every 10 ms until the returned stop is called, and stop
// returns the highest read, in KiB (0 without /proc). It stands for the
// ru_maxrss of the process once it exits, which on Linux is never below
// the RSS of the process that started it (sifbench's own): the kernel
// keeps the high-water mark of the address space a child leaves at exec,
// and os/exec's child shares its parent's until then. VmHWM is the
// running image's own; a peak in the last 10 ms before exit is missed.
func pollPeak(pid int) (stop func() int64) {
	var peak atomic.Int64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			if kb := procStatusKB(pid, "VmHWM"); kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	return func() int64 {
		once.Do(func() { close(done); <-finished })
		return peak.Load()
	}
}

// latencyStats summarises latencies in milliseconds.
type latencyStats struct {
	N        int     `json:"n"`
	MedianMs float64 `json:"median_ms"`
	P90Ms    float64 `json:"p90_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
}

func summarize(xs []float64) latencyStats {
	return latencyStats{N: len(xs), MedianMs: median(xs), P90Ms: percentile(xs, 0.9),
		P99Ms: percentile(xs, 0.99), MaxMs: percentile(xs, 1)}
}

func f0(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }
func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
