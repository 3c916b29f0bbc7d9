package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// churnPhase is sifd under one rate of edits.
type churnPhase struct {
	Target   float64 `json:"target_per_second"` // 0 for the idle baseline
	Edits    int     `json:"edits"`
	Achieved float64 `json:"achieved_per_second"`
	Secs     float64 `json:"seconds"`
	// LagSecs is how long sifctl wait took after the last edit: the time
	// for the daemon to catch up, settle delay included.
	LagSecs float64 `json:"lag_seconds"`
	// CPUPct is the daemon's CPU time during the edits, in percent of one
	// core; CPUPerEditMs its CPU time per edit over the edits and the
	// catch-up.
	CPUPct       float64 `json:"cpu_percent"`
	CPUPerEditMs float64 `json:"cpu_ms_per_edit,omitempty"`
	// RSSMaxMB is the largest VmRSS sampled every 200 ms over the edits
	// and the catch-up; HWMMB the process's VmHWM after it.
	RSSMaxMB  float64 `json:"rss_max_mb"`
	HWMMB     float64 `json:"vm_hwm_mb"`
	Indexed   uint64  `json:"indexed_delta"`
	Removed   uint64  `json:"removed_delta"`
	Renamed   uint64  `json:"renamed_delta"`
	Events    uint64  `json:"events_delta"`
	Overflows uint64  `json:"overflows_delta"`
	KeptUp    bool    `json:"kept_up"`
	Note      string  `json:"note,omitempty"`
}

type churnResult struct {
	Files    int          `json:"files"`
	SettleMs float64      `json:"settle_delay_ms"`
	Seconds  float64      `json:"seconds_per_rate"`
	LagBound float64      `json:"lag_bound_seconds"`
	Idle     churnPhase   `json:"idle"`
	Phases   []churnPhase `json:"phases"`
	// Sustained is the highest rate reached with the lag under LagBound.
	Sustained float64 `json:"sustained_per_second"`
	// TreeFiles and IndexFiles count the files in the tree and in the
	// index after the last phase: they must be equal.
	TreeFiles  int    `json:"tree_files"`
	IndexFiles uint64 `json:"index_files"`
}

// churnTree is the benchmark's tree and the edits made to it.
type churnTree struct {
	root  string
	dirs  int
	files []string
	next  int // for names of created and renamed files
	r     *rand.Rand
}

// edit makes one change: 85 % rewrite a random existing file with new
// random text of 1-8 KB, 5 % create such a file, 5 % delete one, 5 %
// rename one into another directory. Creates and deletes balance, so the
// tree keeps its size.
func (t *churnTree) edit() error {
	newName := func() string {
		t.next++
		return filepath.Join(treeDir(t.root, t.r.IntN(t.dirs)), fmt.Sprintf("c%07d.txt", t.next))
	}
	i := t.r.IntN(len(t.files))
	switch x := t.r.IntN(100); {
	case x < 85:
		return os.WriteFile(t.files[i], randomText(t.r, 1024+t.r.IntN(7*1024+1)), 0o644)
	case x < 90:
		p := newName()
		t.files = append(t.files, p)
		return os.WriteFile(p, randomText(t.r, 1024+t.r.IntN(7*1024+1)), 0o644)
	case x < 95:
		p := t.files[i]
		t.files[i] = t.files[len(t.files)-1]
		t.files = t.files[:len(t.files)-1]
		return os.Remove(p)
	default:
		p := newName()
		if err := os.Rename(t.files[i], p); err != nil {
			return err
		}
		t.files[i] = p
		return nil
	}
}

// benchChurn edits a tree sifd watches at a ladder of rates, doubling from
// 50 edits/s, and measures after each phase how long the daemon takes to
// catch up, with its CPU and memory during the phase. The ladder stops
// when the catch-up exceeds twice the settle delay plus a second, or when
// sifbench cannot make edits at the rate.
func benchChurn(ctx context.Context, c *common, lf *liveFlags) (*churnResult, error) {
	n := lf.files
	if n <= 0 {
		n = 20_000
	}
	sifd, sifctl, work, err := buildLive(c)
	if err != nil {
		return nil, err
	}
	t := &churnTree{root: filepath.Join(work, "root"), dirs: max(1, n/100), r: rand.New(rand.NewPCG(4, uint64(n)))}
	if t.files, _, err = populate(t.root, n, t.dirs, 1024, 8*1024, 4); err != nil {
		return nil, err
	}
	d, err := startDaemon(ctx, sifd, t.root, work, "--settle-delay", lf.settle.String())
	if err != nil {
		return nil, err
	}
	defer d.stop()
	fmt.Fprintf(os.Stderr, "sifbench: first scan of %d files in %.1f s\n", n, d.ready.Seconds())
	pid := d.cmd.Process.Pid
	client := ipc.NewClient(d.socket)
	dur := time.Duration(lf.seconds * float64(time.Second))
	res := &churnResult{Files: n, SettleMs: ms(lf.settle), Seconds: lf.seconds, LagBound: (2*lf.settle + time.Second).Seconds()}

	// phase makes edits at rate per second for dur (none for rate 0), then
	// times sifctl wait, and measures the daemon meanwhile.
	phase := func(rate float64) (churnPhase, error) {
		p := churnPhase{Target: rate}
		before, err := client.Status(ctx)
		if err != nil {
			return p, err
		}
		cpu0, err := cpuSeconds(pid)
		if err != nil {
			return p, err
		}
		// Sample the daemon's RSS every 200 ms until the catch-up is over.
		var rssMax int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				rssMax = max(rssMax, procStatusKB(pid, "VmRSS"))
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
		start := time.Now()
		end := start.Add(dur)
		if rate == 0 {
			time.Sleep(min(dur, 5*time.Second))
		} else {
			// Edit k is due at start + k/rate; an edit late for its slot is
			// made at once, so the generator catches up if it can.
			for now := start; now.Before(end); now = time.Now() {
				due := start.Add(time.Duration(float64(p.Edits) / rate * float64(time.Second)))
				if !due.Before(end) {
					break
				}
				if w := due.Sub(now); w > 0 {
					time.Sleep(w)
				}
				if err := t.edit(); err != nil {
					close(stop)
					wg.Wait()
					return p, err
				}
				p.Edits++
				if ctx.Err() != nil {
					break
				}
			}
		}
		p.Secs = since(start)
		p.Achieved = float64(p.Edits) / p.Secs
		cpu1, _ := cpuSeconds(pid)

		t1 := time.Now()
		cmd := exec.CommandContext(ctx, sifctl, "--socket", d.socket, "wait", "--timeout", "120s")
		cmd.Stderr = os.Stderr
		werr := cmd.Run()
		p.LagSecs = since(t1)
		cpu2, _ := cpuSeconds(pid)
		close(stop)
		wg.Wait()

		p.CPUPct = 100 * (cpu1 - cpu0) / p.Secs
		if p.Edits > 0 {
			p.CPUPerEditMs = 1000 * (cpu2 - cpu0) / float64(p.Edits)
		}
		p.RSSMaxMB = float64(rssMax) / 1024
		p.HWMMB = float64(procStatusKB(pid, "VmHWM")) / 1024
		after, err := client.Status(ctx)
		if err != nil {
			return p, err
		}
		p.Indexed = after.Counters.Indexed - before.Counters.Indexed
		p.Removed = after.Counters.Removed - before.Counters.Removed
		p.Renamed = after.Counters.Renamed - before.Counters.Renamed
		p.Events = after.Counters.Events - before.Counters.Events
		p.Overflows = after.Counters.Overflows - before.Counters.Overflows
		var ee *exec.ExitError
		switch {
		case werr == nil:
		case errors.As(werr, &ee) && ee.ExitCode() == 1:
			p.Note = "sifctl wait timed out after 120 s"
		default:
			return p, fmt.Errorf("sifctl wait: %v", werr)
		}
		p.KeptUp = werr == nil && p.LagSecs <= res.LagBound && (rate == 0 || p.Achieved >= 0.9*rate)
		if rate > 0 && p.Achieved < 0.9*rate {
			p.Note = "sifbench could not make edits at this rate"
		}
		return p, nil
	}

	// The idle baseline: no edits for up to 5 s.
	if res.Idle, err = phase(0); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "sifbench: idle: cpu %.1f%%, rss %.0f MB, wait %.3f s\n", res.Idle.CPUPct, res.Idle.RSSMaxMB, res.Idle.LagSecs)
	for rate := 50.0; rate <= 102_400 && ctx.Err() == nil; rate *= 2 {
		p, err := phase(rate)
		if err != nil {
			return nil, err
		}
		res.Phases = append(res.Phases, p)
		fmt.Fprintf(os.Stderr, "sifbench: %.0f edits/s: achieved %.0f, lag %.2f s, cpu %.0f%%, rss %.0f MB, indexed %d, overflows %d %s\n",
			rate, p.Achieved, p.LagSecs, p.CPUPct, p.RSSMaxMB, p.Indexed, p.Overflows, p.Note)
		if !p.KeptUp {
			break
		}
		res.Sustained = p.Target
	}
	// Every phase ended with a wait, so the index must hold the tree.
	st, err := client.Status(ctx)
	if err != nil {
		return nil, err
	}
	res.TreeFiles, res.IndexFiles = len(t.files), st.Index.Files
	if !c.json {
		fmt.Printf("churn: %d files of 1-8 KB in %d directories; %.0f s per rate; edits 85%% rewrite, 5%% create, 5%% delete, 5%% rename; sifd --settle-delay %s; %d cores\n",
			n, t.dirs, lf.seconds, lf.settle, runtime.NumCPU())
		rows := [][]string{{"target/s", "achieved/s", "lag s", "cpu %", "cpu ms/edit", "rss max MB", "VmHWM MB", "indexed", "removed", "renamed", "events", "overflows", "kept up"}}
		for _, p := range append([]churnPhase{res.Idle}, res.Phases...) {
			target := f0(p.Target)
			if p.Target == 0 {
				target = "idle"
			}
			kept := strconv.FormatBool(p.KeptUp)
			if p.Note != "" {
				kept += " (" + p.Note + ")"
			}
			rows = append(rows, []string{target, f0(p.Achieved), f2(p.LagSecs), f0(p.CPUPct), f2(p.CPUPerEditMs), f0(p.RSSMaxMB), f0(p.HWMMB),
				strconv.FormatUint(p.Indexed, 10), strconv.FormatUint(p.Removed, 10), strconv.FormatUint(p.Renamed, 10),
				strconv.FormatUint(p.Events, 10), strconv.FormatUint(p.Overflows, 10), kept})
		}
		fmt.Print(table(rows))
		fmt.Printf("sustained: %.0f edits/s with sifctl wait under %.1f s (2 x settle delay + 1 s) after %.0f s of edits\n", res.Sustained, res.LagBound, lf.seconds)
		fmt.Printf("after the last phase: %d files in the tree, %d in the index\n", res.TreeFiles, res.IndexFiles)
		if uint64(res.TreeFiles) != res.IndexFiles {
			fmt.Printf("UNEXPECTED: the index does not hold the tree's files\n")
		}
	}
	return res, nil
}
