package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// millionGoalRSSMB is the peak resident set size sifd is held to on a
// million files, in its first scan and during groups (issue 9, §4).
const millionGoalRSSMB = 250

// millionGoalP99Ms is the in-daemon p99 of similar held on a million files,
// both while the index is compacted after the first scan and once it is
// (issue 25).
const millionGoalP99Ms = 20

// millionProfileSecs is how long --profile profiles the daemon from the
// start of the queries right after ready: longer than a thousand queries
// take, most of them while the compaction after the first scan runs.
const millionProfileSecs = 10

// millionResult is the million benchmark's outcome.
type millionResult struct {
	Tree       string  `json:"tree"`
	Seed       uint64  `json:"seed"`
	Files      int     `json:"files"`
	Dirs       int     `json:"dirs"`
	MaxDepth   int     `json:"max_depth"`
	Bytes      int64   `json:"bytes"`
	Copies     int     `json:"identical_copies"`
	NearCopies int     `json:"near_copies"`
	CreateSecs float64 `json:"create_seconds,omitempty"` // 0 when the tree was reused
	Cores      int     `json:"cores"`

	// The first scan, on a fresh index with a warm page cache.
	ReadySecs    float64 `json:"first_scan_ready_seconds"`
	ScanCPUSecs  float64 `json:"first_scan_sifd_cpu_seconds"`
	ScanPeakMB   float64 `json:"first_scan_peak_rss_mb"` // VmHWM once ready
	IndexedFiles uint64  `json:"index_files"`            // the index's file count once ready
	// ScanDiskPeak and DiskPeak are the largest sizes of the index's
	// directory seen from the daemon's start to ready, and to the end of
	// the compaction after the first scan.
	ScanDiskPeak int64 `json:"first_scan_index_peak_bytes"`
	DiskPeak     int64 `json:"compacted_index_peak_bytes"`

	// Queries on the ready index: sifctl similar's request (fingerprints,
	// the query's bytes for the check, threshold 25 %) through the Go client.
	Queries     int          `json:"queries"`
	InDaemon    latencyStats `json:"query_in_daemon"`
	Client      latencyStats `json:"query_client"` // reading and fingerprinting the file, then the request
	MeanMatches float64      `json:"query_mean_matches"`
	// WithKin counts the queries whose file has a copy or a near-copy in
	// the tree, and KinFound those of them answered with at least one match.
	WithKin  int `json:"queries_with_kin"`
	KinFound int `json:"queries_with_kin_answered"`
	// SettledInDaemon and SettledClient are the same queries asked again
	// once the daemon has compacted the index after its first scan: the
	// ones above run while it compacts.
	SettledInDaemon latencyStats `json:"query_in_daemon_settled"`
	SettledClient   latencyStats `json:"query_client_settled"`
	// Slowest and SettledSlowest are the queries of the two rounds that
	// took longest in the daemon, slowest first: what the p99 is made of.
	Slowest        []slowQuery `json:"slowest_queries"`
	SettledSlowest []slowQuery `json:"slowest_queries_settled"`

	QueriesPeakMB float64 `json:"queries_peak_rss_mb"`      // VmHWM after the queries
	LifePeakMB    float64 `json:"first_daemon_peak_rss_mb"` // over the first daemon's life: scan, queries and shutdown
	IndexBytes    int64   `json:"index_bytes"`              // after a clean shutdown
	IndexShare    float64 `json:"index_share_percent"`

	RestartSecs      float64 `json:"restart_ready_seconds"`
	RestartCPUSecs   float64 `json:"restart_sifd_cpu_seconds"`
	RestartIndexed   uint64  `json:"restart_indexed"`
	RestartUnchanged uint64  `json:"restart_unchanged"`
	RestartPeakMB    float64 `json:"restart_peak_rss_mb"` // VmHWM once ready

	Groups millionCmd `json:"groups"`
	Dupes  millionCmd `json:"dupes"`

	LoadAvg    []string `json:"load_average,omitempty"` // before the first scan, before groups, at the end
	Goals      []goal   `json:"goals"`
	Unexpected []string `json:"unexpected,omitempty"`
}

// millionCmd is one run of sifctl groups or dupes against the restarted
// daemon.
type millionCmd struct {
	Secs     float64 `json:"seconds"`
	CPUSecs  float64 `json:"sifd_cpu_seconds"`
	SifdMB   float64 `json:"sifd_peak_rss_mb"` // over the command, see sifdPeak
	SifctlMB float64 `json:"sifctl_peak_rss_mb"`
	OutMB    float64 `json:"output_mb"` // sifctl's --json output
	Sets     int     `json:"sets"`      // groups or sets of identical files
	Files    int     `json:"files"`     // files listed in them (groups: references and members)
	// PeakFrom says how the daemon's peak was read: "VmHWM" (reset before
	// the command through /proc/PID/clear_refs) or "VmRSS sampled every
	// 10 ms" where the reset is refused.
	PeakFrom string `json:"sifd_peak_from"`
}

// benchMillion writes (or reuses, with --dir) a synthetic file server of
// --files files and measures sifd on it: the first scan, the index's size,
// similar queries, a restart, then sifctl groups and dupes.
func benchMillion(ctx context.Context, c *common, lf *liveFlags, lo *loadFlags, seed uint64) (*millionResult, error) {
	n := lf.files
	if n <= 0 {
		n = 1_000_000
	}
	if c.n <= 0 {
		return nil, fmt.Errorf("--n %d: want at least one query", c.n)
	}
	sifd, sifctl, work, err := buildLive(c)
	if err != nil {
		return nil, err
	}
	dir := lo.dir
	if dir == "" {
		dir = filepath.Join(work, "million")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	t := planMillion(n, seed)
	res := &millionResult{Seed: seed, Files: n, Dirs: len(t.Dirs), Cores: runtime.NumCPU()}
	for i, f := range t.Files {
		switch f.Kind {
		case mCopy:
			res.Copies++
		case mNear:
			res.NearCopies++
		}
		res.MaxDepth = max(res.MaxDepth, int(t.Depth[t.Files[i].Dir]))
	}
	if res.Tree, res.Bytes, res.CreateSecs, err = millionTreeDir(dir, t); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "sifbench: tree %s: %d files, %.1f MB in %d directories; warming the page cache\n", res.Tree, n, mb(res.Bytes), res.Dirs)
	if err := warm(res.Tree); err != nil {
		return nil, err
	}
	var pprofAddr string
	var extra []string
	if lo.profile != "" {
		if err := os.MkdirAll(lo.profile, 0o755); err != nil {
			return nil, err
		}
		if pprofAddr, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		extra = append(extra, "--pprof", pprofAddr)
	}

	// The first scan, on a fresh index.
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	fmt.Fprintf(os.Stderr, "sifbench: first scan\n")
	w := filepath.Join(work, "index")
	if err := os.MkdirAll(w, 0o755); err != nil {
		return nil, err
	}
	d, err := launchDaemon(sifd, res.Tree, w, extra...)
	if err != nil {
		return nil, err
	}
	disk := watchDisk(d.db)
	defer disk.stop()
	stopProgress := reportProgress(ctx, d.socket, n)
	err = d.waitReady(ctx)
	stopProgress()
	if err != nil {
		return nil, err
	}
	res.ScanDiskPeak = disk.peak().Bytes
	res.ReadySecs = d.ready.Seconds()
	res.ScanCPUSecs, _ = cpuSeconds(d.cmd.Process.Pid)
	res.ScanPeakMB = float64(d.peakKB) / 1024
	client := ipc.NewClient(d.socket)
	st, err := client.Status(ctx)
	if err != nil {
		d.stop()
		return nil, err
	}
	res.IndexedFiles = st.Index.Files
	if st.Index.Files != uint64(n) {
		res.Unexpected = append(res.Unexpected, fmt.Sprintf("first scan: the index holds %d files, want %d (counters %+v)", st.Index.Files, n, st.Counters))
	}
	if lo.profile != "" {
		if err := fetchProfile(ctx, pprofAddr, "heap", filepath.Join(lo.profile, "heap-ready.pprof")); err != nil {
			fmt.Fprintf(os.Stderr, "sifbench: %v\n", err)
		}
	}
	fmt.Fprintf(os.Stderr, "sifbench: ready in %.1f s; %d queries\n", res.ReadySecs, c.n)
	waitProfiles := func() {}
	if lo.profile != "" {
		waitProfiles = profileQueries(ctx, pprofAddr, lo.profile)
	}
	err = millionQueries(ctx, client, t, res, c.n, seed)
	if err != nil {
		d.stop()
		return nil, err
	}
	res.QueriesPeakMB = float64(d.notePeak()) / 1024
	waitProfiles()
	if err := d.waitCompacted(ctx); err != nil {
		d.stop()
		return nil, err
	}
	res.DiskPeak = disk.stop().Bytes
	fmt.Fprintf(os.Stderr, "sifbench: compacted; the %d queries again\n", c.n)
	settled := &millionResult{Tree: res.Tree}
	if err := millionQueries(ctx, client, t, settled, c.n, seed); err != nil {
		d.stop()
		return nil, err
	}
	res.SettledInDaemon, res.SettledClient = settled.InDaemon, settled.Client
	res.SettledSlowest = settled.Slowest
	kb, err := d.stop()
	if err != nil {
		return nil, err
	}
	res.LifePeakMB = float64(kb) / 1024
	res.IndexBytes = dirSize(d.db)
	res.IndexShare = 100 * float64(res.IndexBytes) / float64(res.Bytes)

	// The restart on the unchanged tree, then groups and dupes on it.
	fmt.Fprintf(os.Stderr, "sifbench: restart\n")
	if d, err = startDaemon(ctx, sifd, res.Tree, w, extra...); err != nil {
		return nil, err
	}
	res.RestartSecs = d.ready.Seconds()
	res.RestartPeakMB = float64(d.peakKB) / 1024
	res.RestartCPUSecs, _ = cpuSeconds(d.cmd.Process.Pid)
	if st, err = ipc.NewClient(d.socket).Status(ctx); err != nil {
		d.stop()
		return nil, err
	}
	res.RestartIndexed, res.RestartUnchanged = st.Counters.Indexed, st.Counters.Unchanged
	if st.Counters.Indexed != 0 || st.Counters.Unchanged != uint64(n) {
		res.Unexpected = append(res.Unexpected, fmt.Sprintf("restart: counters.indexed = %d (want 0), counters.unchanged = %d (want %d)",
			st.Counters.Indexed, st.Counters.Unchanged, n))
	}
	// Once the work after ready is done, so that the peaks are the commands'.
	waitIdle(d.cmd.Process.Pid, 60*time.Second)
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	fmt.Fprintf(os.Stderr, "sifbench: restart ready in %.1f s; sifctl groups\n", res.RestartSecs)
	heapTo := func(command string) string {
		if lo.profile == "" {
			return ""
		}
		return filepath.Join(lo.profile, "heap-"+command+".pprof")
	}
	res.Groups, err = runSifctl(ctx, d, sifctl, pprofAddr, heapTo("groups"), "groups")
	if err != nil {
		d.stop()
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "sifbench: groups in %.1f s; sifctl dupes\n", res.Groups.Secs)
	if res.Dupes, err = runSifctl(ctx, d, sifctl, pprofAddr, heapTo("dupes"), "dupes"); err != nil {
		d.stop()
		return nil, err
	}
	if _, err := d.stop(); err != nil {
		return nil, err
	}
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	millionCheck(t, res)
	millionGoals(res)
	if !c.json {
		printMillion(res)
	}
	return res, nil
}

// reportProgress prints the daemon's indexed count on stderr every 30 s
// until the returned function is called.
func reportProgress(ctx context.Context, socket string, files int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		c := ipc.NewClient(socket)
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-time.After(30 * time.Second):
			}
			if st, err := c.Status(ctx); err == nil {
				fmt.Fprintf(os.Stderr, "sifbench: %s, %d of %d files indexed (%.0f s)\n", st.State, st.Counters.Indexed, files, since(start))
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// profileQueries takes, through sifd's --pprof listener at addr, its CPU
// profile, execution trace and block and mutex profiles over the
// millionProfileSecs from the start of the queries right after ready, into
// dir; the returned function waits for them. The trace shows what a slow
// query waited for: the processor, the compaction's or the collector's
// work, or a lock.
func profileQueries(ctx context.Context, addr, dir string) (wait func()) {
	var wg sync.WaitGroup
	for _, name := range []string{"profile", "trace", "block", "mutex"} {
		wg.Go(func() {
			to := filepath.Join(dir, "queries-"+name+".pprof")
			if err := fetchProfile(ctx, addr, fmt.Sprintf("%s?seconds=%d", name, millionProfileSecs), to); err != nil {
				fmt.Fprintf(os.Stderr, "sifbench: %v\n", err)
			}
		})
	}
	return wg.Wait
}

// slowQuery is one of the slowest queries of a round, as its answer
// describes it.
type slowQuery struct {
	Path         string  `json:"path"`
	Size         int64   `json:"size"`
	InDaemonMs   float64 `json:"in_daemon_ms"`
	Fingerprints int     `json:"fingerprints"`
	Candidates   int     `json:"candidates"`
	Checked      int     `json:"checked"`
	Matches      int     `json:"matches"`
	Template     bool    `json:"template,omitempty"`
}

// String is the slow query on a line of the report.
func (q slowQuery) String() string {
	s := fmt.Sprintf("%.1f ms: %d B, %d fingerprints, %d candidates, %d checked, %d matches", q.InDaemonMs, q.Size, q.Fingerprints, q.Candidates, q.Checked, q.Matches)
	if q.Template {
		s += ", template"
	}
	return s
}

// slowestKept is how many of the slowest queries of a round the report
// names.
const slowestKept = 5

// millionQueries asks the ready daemon about q files of the tree drawn
// from seed, as sifctl similar asks (the file's fingerprints and its bytes
// for the check, threshold 25 %), and records the latencies in res.
func millionQueries(ctx context.Context, client *ipc.Client, t *millionTree, res *millionResult, q int, seed uint64) error {
	info, err := client.Info(ctx)
	if err != nil {
		return err
	}
	// kin[o] counts the files made from new file o, itself included.
	kin := make(map[int32]int32, len(t.Files))
	for _, f := range t.Files {
		kin[f.Origin]++
	}
	r := rand.New(rand.NewPCG(seed, 0x71))
	threshold := 25.0
	var inDaemon, cl []float64
	var slow []slowQuery
	matches := 0
	for k := range q + 5 { // the first 5 warm up
		i := r.IntN(len(t.Files))
		p := filepath.Join(res.Tree, t.rel(i))
		t0 := time.Now()
		sk, data, err := ipc.QueryFile(p, info.Params, ipc.ReadOptions{})
		if err != nil {
			return err
		}
		req := ipc.NewSimilarRequest(p, sk)
		req.Attach(data)
		req.Threshold = &threshold
		resp, err := client.Similar(ctx, req)
		if err != nil {
			return fmt.Errorf("similar %s: %w", p, err)
		}
		if k < 5 {
			continue
		}
		cl = append(cl, ms(time.Since(t0)))
		inDaemon = append(inDaemon, float64(resp.ElapsedNs)/1e6)
		slow = append(slow, slowQuery{Path: p, Size: sk.Summary.Size, InDaemonMs: float64(resp.ElapsedNs) / 1e6,
			Fingerprints: resp.Fingerprints, Candidates: resp.Candidates, Checked: resp.Checked, Matches: len(resp.Matches), Template: resp.Template})
		matches += len(resp.Matches)
		if kin[t.Files[i].Origin] > 1 {
			res.WithKin++
			if len(resp.Matches) > 0 {
				res.KinFound++
			}
		}
	}
	res.Queries = q
	res.InDaemon, res.Client = summarize(inDaemon), summarize(cl)
	slices.SortFunc(slow, func(a, b slowQuery) int { return cmp.Compare(b.InDaemonMs, a.InDaemonMs) })
	res.Slowest = slow[:min(len(slow), slowestKept)]
	res.MeanMatches = float64(matches) / float64(q)
	return nil
}

// runSifctl runs sifctl CMD --json against the daemon d and measures it:
// its time, its output, its own peak RSS and the daemon's over it. With
// heapTo set, the daemon's heap profile (through its --pprof listener at
// pprofAddr) is taken every second while the command runs, and the one
// taken at the highest resident set size is kept there; for a command
// done within the second, one taken after it (whose alloc_space still
// counts what the command allocated). A heap profile shows the live heap
// as of the daemon's last garbage collection: a command that allocates
// less than the collector's target shows the heap its predecessor left.
func runSifctl(ctx context.Context, d *daemonRun, sifctl, pprofAddr, heapTo, command string) (millionCmd, error) {
	var m millionCmd
	pid := d.cmd.Process.Pid
	reset := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	m.PeakFrom = "VmHWM"
	if !reset {
		m.PeakFrom = "VmRSS sampled every 10 ms"
	}
	done := make(chan struct{})
	var sampled int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			sampled = max(sampled, procStatusKB(pid, "VmRSS"))
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	if heapTo != "" {
		wg.Go(func() {
			var best int64
			tmp := heapTo + ".tmp"
			defer os.Remove(tmp)
			for {
				stop := false
				select {
				case <-done:
					if best > 0 {
						return
					}
					stop = true
				case <-time.After(time.Second):
				}
				rss := procStatusKB(pid, "VmRSS")
				if err := fetchProfile(ctx, pprofAddr, "heap", tmp); err != nil {
					fmt.Fprintf(os.Stderr, "sifbench: %v\n", err)
				} else if rss > best {
					best = rss
					os.Rename(tmp, heapTo)
				}
				if stop {
					return
				}
			}
		})
	}
	cmd := exec.CommandContext(ctx, sifctl, "--socket", d.socket, command, "--json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return m, err
	}
	cmd.Stderr = os.Stderr
	cpu0, _ := cpuSeconds(pid)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return m, err
	}
	ctlPeak := pollPeak(cmd.Process.Pid)
	cr := &countReader{r: out}
	var decoded struct {
		Groups []struct {
			Members []struct{} `json:"members"`
		} `json:"groups"`
		Sets []struct {
			Files []struct{} `json:"files"`
		} `json:"sets"`
	}
	decErr := json.NewDecoder(cr).Decode(&decoded)
	io.Copy(io.Discard, cr)
	err = cmd.Wait()
	m.Secs = since(t0)
	cpu1, _ := cpuSeconds(pid)
	m.CPUSecs = cpu1 - cpu0
	close(done)
	wg.Wait()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: nothing found
		return m, fmt.Errorf("sifctl %s: %w", command, err)
	}
	if decErr != nil {
		return m, fmt.Errorf("sifctl %s --json: %w", command, decErr)
	}
	m.SifdMB = float64(sampled) / 1024
	if reset {
		m.SifdMB = float64(max(sampled, vmHWM(pid))) / 1024
	}
	m.SifctlMB = float64(ctlPeak()) / 1024
	if m.SifctlMB == 0 {
		m.SifctlMB = float64(maxRSSKB(cmd.ProcessState)) / 1024
	}
	m.OutMB = mb(cr.n)
	for _, g := range decoded.Groups {
		m.Sets++
		m.Files += 1 + len(g.Members)
	}
	for _, s := range decoded.Sets {
		m.Sets++
		m.Files += len(s.Files)
	}
	return m, nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// fetchProfile saves sifd's profile name (heap, goroutine...) from its
// --pprof listener at addr into path.
func fetchProfile(ctx context.Context, addr, name, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/"+name, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s profile: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s profile: %s", name, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s profile: %w", name, err)
	}
	return os.WriteFile(path, b, 0o644)
}

// millionCheck compares what groups and dupes found with the plan: every
// new file with identical copies is one set of dupes.
func millionCheck(t *millionTree, res *millionResult) {
	copies := map[int32]int{}
	for _, f := range t.Files {
		if f.Kind == mCopy {
			copies[f.Origin]++
		}
	}
	files := 0
	for _, k := range copies {
		files += k + 1
	}
	if res.Dupes.Sets != len(copies) || res.Dupes.Files != files {
		res.Unexpected = append(res.Unexpected, fmt.Sprintf("dupes: %d sets of %d files, want %d sets of %d files as planned",
			res.Dupes.Sets, res.Dupes.Files, len(copies), files))
	}
	if res.NearCopies > 0 && res.Groups.Sets == 0 {
		res.Unexpected = append(res.Unexpected, fmt.Sprintf("groups: none, in a tree with %d near-copies", res.NearCopies))
	}
}

// millionGoals holds the results to issues 9's and 25's goals.
func millionGoals(res *millionResult) {
	restartGoal := 2 * float64(res.Files) / 100_000
	res.Goals = []goal{
		{fmt.Sprintf("first scan: sifd peak RSS <= %d MB", millionGoalRSSMB), f0(res.ScanPeakMB) + " MB", res.ScanPeakMB <= millionGoalRSSMB},
		{fmt.Sprintf("first scan and queries: sifd peak RSS <= %d MB", millionGoalRSSMB), f0(res.QueriesPeakMB) + " MB", res.QueriesPeakMB <= millionGoalRSSMB},
		{fmt.Sprintf("groups: sifd peak RSS <= %d MB (memory bounded)", millionGoalRSSMB), f0(res.Groups.SifdMB) + " MB", res.Groups.SifdMB <= millionGoalRSSMB},
		{fmt.Sprintf("similar right after ready (while compacting): in-daemon p99 <= %d ms", millionGoalP99Ms), f1(res.InDaemon.P99Ms) + " ms", res.InDaemon.P99Ms <= millionGoalP99Ms},
		{fmt.Sprintf("similar once compacted: in-daemon p99 <= %d ms", millionGoalP99Ms), f1(res.SettledInDaemon.P99Ms) + " ms", res.SettledInDaemon.P99Ms <= millionGoalP99Ms},
		{fmt.Sprintf("restart <= 2 s per 100,000 unchanged files (%.1f s)", restartGoal), f1(res.RestartSecs) + " s", res.RestartSecs <= restartGoal},
	}
}

func printMillion(res *millionResult) {
	reused := "reused"
	if res.CreateSecs > 0 {
		reused = fmt.Sprintf("written in %.0f s", res.CreateSecs)
	}
	fmt.Printf("million: %s (seed %d, %s): %d files, %.2f GB, %d directories (deepest %d), %d identical copies, %d near-copies; page cache warm; %d cores\n",
		res.Tree, res.Seed, reused, res.Files, float64(res.Bytes)/1e9, res.Dirs, res.MaxDepth, res.Copies, res.NearCopies, res.Cores)
	lat := func(l latencyStats) string { return f2(l.MedianMs) + " / " + f2(l.P99Ms) + " ms" }
	rows := [][]string{
		{"", "figure", ""},
		{"first scan: to ready", f1(res.ReadySecs) + " s", fmt.Sprintf("%.0f files/s, %.0f MB/s; sifd CPU %.0f s", float64(res.Files)/res.ReadySecs, mb(res.Bytes)/res.ReadySecs, res.ScanCPUSecs)},
		{"first scan: sifd peak RSS", f0(res.ScanPeakMB) + " MB", fmt.Sprintf("VmHWM at ready; %.0f MB after the queries, %.0f MB over the daemon's life", res.QueriesPeakMB, res.LifePeakMB)},
		{"index on disk after clean shutdown", f1(mb(res.IndexBytes)) + " MB", fmt.Sprintf("%.2f %% of the tree; %d files indexed", res.IndexShare, res.IndexedFiles)},
		{"index on disk at its peak, first scan / until compacted", f1(mb(res.ScanDiskPeak)) + " / " + f1(mb(res.DiskPeak)) + " MB", "the index directory's files summed every 15 ms, from the daemon's start to ready, and on to the end of the compaction after it"},
		{"similar right after ready, in the daemon", lat(res.InDaemon), fmt.Sprintf("p50 / p99; %d queries on files drawn from the tree, %.1f matches each, while the index is compacted", res.Queries, res.MeanMatches)},
		{"similar, Go client, p50 / p99", lat(res.Client), fmt.Sprintf("read + fingerprint + request; %d of %d queries with kin answered", res.KinFound, res.WithKin)},
		{"the same once compacted: in the daemon", lat(res.SettledInDaemon), "the same queries, once the compaction after the first scan is done (the ones above run during it)"},
		{"the same once compacted: Go client", lat(res.SettledClient), ""},
		{"restart on the unchanged tree", f1(res.RestartSecs) + " s", fmt.Sprintf("%d read again, %d unchanged; sifd CPU %.0f s, peak RSS %.0f MB", res.RestartIndexed, res.RestartUnchanged, res.RestartCPUSecs, res.RestartPeakMB)},
		{"sifctl groups --json", f1(res.Groups.Secs) + " s", fmt.Sprintf("%d groups of %d files, %.1f MB of output; sifd CPU %.0f s", res.Groups.Sets, res.Groups.Files, res.Groups.OutMB, res.Groups.CPUSecs)},
		{"sifd peak RSS during groups", f0(res.Groups.SifdMB) + " MB", fmt.Sprintf("%s; sifctl's own %.0f MB", res.Groups.PeakFrom, res.Groups.SifctlMB)},
		{"sifctl dupes --json", f1(res.Dupes.Secs) + " s", fmt.Sprintf("%d sets of %d files, %.1f MB of output; sifd CPU %.0f s", res.Dupes.Sets, res.Dupes.Files, res.Dupes.OutMB, res.Dupes.CPUSecs)},
		{"sifd peak RSS during dupes", f0(res.Dupes.SifdMB) + " MB", fmt.Sprintf("%s, from its RSS after groups; sifctl's own %.0f MB", res.Dupes.PeakFrom, res.Dupes.SifctlMB)},
	}
	fmt.Print(table(rows))
	for _, round := range []struct {
		name string
		qs   []slowQuery
	}{{"right after ready", res.Slowest}, {"once compacted", res.SettledSlowest}} {
		fmt.Printf("slowest queries %s, in the daemon:\n", round.name)
		for _, q := range round.qs {
			fmt.Printf("  %s\n", q)
		}
	}
	if len(res.LoadAvg) == 3 {
		fmt.Printf("machine load average (1, 5, 15 min): before the first scan %s; before groups %s; at the end %s\n", res.LoadAvg[0], res.LoadAvg[1], res.LoadAvg[2])
	}
	printGoals(res.Goals, res.Unexpected)
}
