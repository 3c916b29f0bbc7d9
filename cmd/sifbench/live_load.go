package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// loadFlags are the flags of the load benchmark.
type loadFlags struct {
	clients int
	dir     string        // tree kept or reused here
	think   time.Duration // mean pause of a client between two requests
	profile string        // directory for the loaded daemon's profiles, "" for none
	during  string        // the phase of sifd's life timed and loaded: a loadPhase's name
}

// loadPhase is a part of sifd's life the load benchmark times alone (T0)
// and with the clients asking all along (T1), as --during names it: the
// daemon's heavy work that queries must not wait for.
type loadPhase struct {
	name   string // --during
	what   string // the phase timed, for the report's first line
	column string // the table's header of its length
	work   string // the daemon's work in it, for the line of the CPU floor
}

// loadPhases are the phases --during takes, the default first.
var loadPhases = []loadPhase{
	{"first-scan", "sifd to ready on a fresh index", "to ready s", "scan"},
	{"reconcile", "sifd restarted to ready on an index of the tree after every file's mtime changed (its reconcile reads each again)", "restart to ready s", "reconcile"},
	{"compaction", "sifd from ready to the end of the compaction after its first scan on a fresh index", "ready to compacted s", "compaction"},
}

// findPhase returns the phase of loadPhases named name.
func findPhase(name string) (*loadPhase, error) {
	var names []string
	for i := range loadPhases {
		if loadPhases[i].name == name {
			return &loadPhases[i], nil
		}
		names = append(names, loadPhases[i].name)
	}
	return nil, fmt.Errorf("--during %q: want %s", name, strings.Join(names, ", "))
}

// loadRun is one run of sifd through the phase on the load tree.
type loadRun struct {
	// Secs is the phase's length: from start to ready for a first scan or
	// a reconcile (ReadySecs), from ready to the compaction's end for a
	// compaction.
	Secs      float64 `json:"phase_seconds"`
	ReadySecs float64 `json:"ready_seconds"`
	// ListenSecs is when the daemon first answered on its socket.
	ListenSecs float64 `json:"listening_seconds,omitempty"`
	CPUSecs    float64 `json:"sifd_cpu_seconds"` // sifd's user + system time over the phase
	PeakRSSMB  float64 `json:"peak_rss_mb"`      // VmHWM over the daemon's life
	Files      uint64  `json:"index_files"`
	// Unchanged counts the files the daemon found as indexed, not read
	// again (the status's counters.unchanged): none, in a reconcile after
	// every mtime changed.
	Unchanged uint64 `json:"unchanged_files"`
	// from and to are the phase's start and end, benchFrom and benchTo
	// sifbench's own CPU seconds then (benchFrom for a compaction only).
	from, to           time.Time
	benchFrom, benchTo float64
}

// loadKind is what one kind of request measured during the loaded run.
type loadKind struct {
	Done int `json:"done"` // answered
	// Daemon is the time spent inside the daemon as its answer says
	// (elapsed_ns: similar and groups only); E2E from the client's call to
	// its return, through the Go client.
	Daemon latencyStats `json:"in_daemon"`
	E2E    latencyStats `json:"end_to_end"`
	// Alone are the same, measured on the daemon of T0 once ready, with
	// one client asking one request at a time: what the kind costs without
	// the scan and the other clients.
	AloneDaemon latencyStats `json:"alone_in_daemon"`
	AloneE2E    latencyStats `json:"alone_end_to_end"`
	// AloneMeanMs is the mean time of one request alone: in the daemon
	// when the answer says, else end to end; AloneCPUMs the daemon's CPU
	// time per request over the requests of the kind alone.
	AloneMeanMs float64 `json:"alone_mean_ms"`
	AloneCPUMs  float64 `json:"alone_cpu_ms"`
	// AloneSlow counts the requests alone that took 50 ms or more.
	AloneSlow int `json:"alone_50ms_or_more"`
}

// loadResult is the load benchmark's outcome.
type loadResult struct {
	During     string  `json:"during"` // the phase timed: a loadPhase's name
	Tree       string  `json:"tree"`
	Files      int     `json:"files"`
	Bytes      int64   `json:"bytes"`
	CreateSecs float64 `json:"create_seconds,omitempty"`
	Clients    int     `json:"clients"`
	ThinkMs    float64 `json:"think_ms"`
	Queries    int     `json:"query_files"` // files whose fingerprints the clients send
	Cores      int     `json:"cores"`

	Unloaded loadRun `json:"unloaded"`
	Loaded   loadRun `json:"loaded"`
	Ratio    float64 `json:"t1_over_t0"`

	Kinds map[string]*loadKind `json:"by_kind"`
	// Requests counts the requests sent during the loaded run and Errors
	// those that failed, by kind of error ("busy" for 503 busy that the
	// client's retries did not absorb, else the error code or class).
	Requests int            `json:"requests"`
	Errors   map[string]int `json:"errors"`
	// Retried counts answered requests that took a second or more longer
	// end to end than inside the daemon: the Retry-After of a busy answer
	// the client absorbed by trying again.
	Retried   int     `json:"retried_after_busy"`
	ReqPerSec float64 `json:"requests_per_second"`
	BenchCPU  float64 `json:"sifbench_cpu_seconds"` // the clients' CPU (sifbench's own) during the loaded run
	// DemandCPU is what the requests answered during the loaded run cost
	// at their CPU cost alone (AloneCPUMs), in seconds; Floor the least T1
	// on Cores cores if the scan needs its CPU of T0, the requests
	// DemandCPU and the clients BenchCPU.
	DemandCPU float64 `json:"request_cpu_seconds_at_cost_alone"`
	Floor     float64 `json:"t1_floor_seconds"`
	// ScanYields counts the times the loaded run's scan waited for
	// queries being answered (the status's scan_yields).
	ScanYields uint64 `json:"scan_yields"`
	// LoadAvg is the machine's load average (/proc/loadavg) before T0,
	// after T0, before T1 and after T1: other work on the machine.
	LoadAvg []string `json:"load_average,omitempty"`
	// Notes qualify the figures, such as a phase too short to load much.
	Notes      []string `json:"notes,omitempty"`
	Goals      []goal   `json:"goals"`
	Unexpected []string `json:"unexpected,omitempty"`
}

// goal is one of the targets the loaded run is held to.
type goal struct {
	What string `json:"what"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

// printGoals prints each goal, met or MISSED, then each unexpected thing
// a run saw.
func printGoals(goals []goal, unexpected []string) {
	for _, g := range goals {
		mark := "met"
		if !g.Met {
			mark = "MISSED"
		}
		fmt.Printf("goal %s: %s, %s\n", g.What, g.Got, mark)
	}
	for _, u := range unexpected {
		fmt.Printf("UNEXPECTED: %s\n", u)
	}
}

// benchLoad runs sifd through the phase --during names on a tree of at
// least --size bytes twice, each time on a fresh index: once alone (T0),
// then with --clients clients asking it all along the phase (T1), and
// reports the phase's length, the clients' latencies and errors, and the
// daemon's CPU and memory.
func benchLoad(ctx context.Context, c *common, lf *liveFlags, lo *loadFlags) (*loadResult, error) {
	res, sifd, work, err := loadSetup(c, lf, lo)
	if err != nil {
		return nil, err
	}
	reqs, alone, err := loadUnloaded(ctx, res, sifd, work)
	if err != nil {
		return nil, err
	}
	samples, loadSecs, err := loadLoaded(ctx, res, lo, sifd, work, reqs)
	if err != nil {
		return nil, err
	}
	firstErr, errs := loadSum(res, samples, alone, loadSecs)
	if !c.json {
		loadReport(res, lo, loadSecs, firstErr, errs)
	}
	return res, nil
}

// loadSetup checks the flags, builds sifd and writes the load tree, or
// reuses the one in --dir, of at least --size bytes. It returns the
// result to fill in, with the tree and its size, the path of sifd and the
// working directory.
func loadSetup(c *common, lf *liveFlags, lo *loadFlags) (*loadResult, string, string, error) {
	size, err := parseSize(lf.size)
	if err != nil {
		return nil, "", "", fmt.Errorf("--size: %w", err)
	}
	if lo.clients <= 0 {
		return nil, "", "", fmt.Errorf("--clients %d: want at least 1", lo.clients)
	}
	if _, err := findPhase(lo.during); err != nil {
		return nil, "", "", err
	}
	sifd, _, work, err := buildLive(c)
	if err != nil {
		return nil, "", "", err
	}
	res := &loadResult{During: lo.during, Clients: lo.clients, ThinkMs: ms(lo.think), Cores: runtime.NumCPU(), Errors: map[string]int{}, Kinds: map[string]*loadKind{}}
	if res.Tree, res.CreateSecs, err = loadTree(c, lo.dir, work, size); err != nil {
		return nil, "", "", err
	}
	all := regularFiles(res.Tree, 0, 1<<62)
	res.Files = len(all)
	for _, p := range all {
		if fi, err := os.Stat(p); err == nil {
			res.Bytes += fi.Size()
		}
	}
	if res.Bytes < size {
		return nil, "", "", fmt.Errorf("the tree %s holds %d bytes, less than --size %d: remove it or give another --dir", res.Tree, res.Bytes, size)
	}
	fmt.Fprintf(os.Stderr, "sifbench: tree %s: %d files, %.1f MB\n", res.Tree, res.Files, mb(res.Bytes))
	return res, sifd, work, nil
}

// loadUnloaded is the unloaded run (T0): sifd through the phase alone on
// a fresh index, then each kind of request alone on the ready daemon
// (loadAlone).
// It fills in res.Unloaded and returns the queries the clients will send,
// the fingerprints of up to 1000 files of the tree, and what each kind
// took alone.
func loadUnloaded(ctx context.Context, res *loadResult, sifd, work string) ([]*ipc.SimilarRequest, map[string]*loadKind, error) {
	if err := warm(res.Tree); err != nil {
		return nil, nil, err
	}
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	fmt.Fprintf(os.Stderr, "sifbench: unloaded run\n")
	w0 := filepath.Join(work, "unloaded")
	os.MkdirAll(w0, 0o755)
	d, err := loadBegin(ctx, res.During, sifd, res.Tree, w0)
	if err != nil {
		return nil, nil, err
	}
	if err := loadEnd(ctx, res.During, d, &res.Unloaded); err != nil {
		return nil, nil, err
	}
	client := ipc.NewClient(d.socket)
	info, err := client.Info(ctx)
	if err != nil {
		d.stop()
		return nil, nil, err
	}

	// The queries: the fingerprints of up to 1000 files of the tree of at
	// most 8 MB, spread over it, made before the loaded run.
	var reqs []*ipc.SimilarRequest
	for _, p := range pick(regularFiles(res.Tree, 1, 8<<20), 1000) {
		sk, err := ipc.SketchFile(p, info.Params)
		if err != nil {
			d.stop()
			return nil, nil, err
		}
		reqs = append(reqs, ipc.NewSimilarRequest(p, sk))
	}
	res.Queries = len(reqs)
	if len(reqs) == 0 {
		d.stop()
		return nil, nil, fmt.Errorf("no file of the tree to query with")
	}
	// Each kind alone, on the ready daemon: every query once, and a few of
	// the others.
	// Once the daemon's work after ready (compactions) is done, so that
	// its CPU counts the requests.
	waitIdle(d.cmd.Process.Pid, 30*time.Second)
	alone := loadAlone(ctx, client, reqs, d.cmd.Process.Pid)
	kb, err := d.stop()
	if err != nil {
		return nil, nil, err
	}
	res.Unloaded.PeakRSSMB = float64(kb) / 1024
	os.RemoveAll(w0)
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	return reqs, alone, nil
}

// loadLoaded is the loaded run (T1): sifd through the phase on a fresh
// index with --clients clients (loadClient) asking it reqs and the rest
// from the moment it answers on its socket (at ready for a compaction)
// until the phase ends, and with --profile its profiles taken meanwhile. It fills in res.Loaded, res.BenchCPU and
// res.Ratio, and returns each client's samples and how long the clients
// ran, in seconds.
func loadLoaded(ctx context.Context, res *loadResult, lo *loadFlags, sifd, work string, reqs []*ipc.SimilarRequest) ([][]loadSample, float64, error) {
	if err := warm(res.Tree); err != nil {
		return nil, 0, err
	}
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	fmt.Fprintf(os.Stderr, "sifbench: loaded run, %d clients\n", lo.clients)
	w1 := filepath.Join(work, "loaded")
	os.MkdirAll(w1, 0o755)
	var (
		extra []string
		err   error
	)
	pprofAddr := ""
	if lo.profile != "" {
		if pprofAddr, err = freeLoopbackAddr(); err != nil {
			return nil, 0, err
		}
		extra = append(extra, "--pprof", pprofAddr)
	}
	d, err := loadBegin(ctx, res.During, sifd, res.Tree, w1, extra...)
	if err != nil {
		return nil, 0, err
	}
	// The clients start once the daemon answers on its socket, also when
	// the phase is the compaction after the first scan: they are then
	// asking all along when it starts, as on a server in use, rather than
	// all opening their connections at once at its start.
	if err := waitListening(ctx, d); err != nil {
		return nil, 0, err
	}
	res.Loaded.ListenSecs = time.Since(d.start).Seconds()
	cpuBench0, _ := cpuSeconds(os.Getpid())
	var stop atomic.Bool
	samples := make([][]loadSample, lo.clients)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range lo.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples[i] = loadClient(ctx, ipc.NewClient(d.socket), reqs, lo.think, uint64(i), &stop)
		}()
	}
	var profiles sync.WaitGroup
	if lo.profile != "" {
		// CPU over most of the phase as T0 took it, then the rest.
		secs := max(1, int(res.Unloaded.Secs*0.8))
		profiles.Go(func() {
			if err := takeProfiles(ctx, pprofAddr, lo.profile, secs); err != nil {
				fmt.Fprintf(os.Stderr, "sifbench: profiles: %v\n", err)
			}
		})
	}
	endErr := loadEnd(ctx, res.During, d, &res.Loaded)
	stop.Store(true)
	profiles.Wait()
	wg.Wait()
	loadSecs := time.Since(t0).Seconds()
	if res.During == "compaction" {
		samples = inPhase(samples, res.Loaded.from, res.Loaded.to)
		loadSecs = res.Loaded.to.Sub(res.Loaded.from).Seconds()
	}
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	if res.During == "compaction" {
		cpuBench0 = res.Loaded.benchFrom
	}
	res.BenchCPU = res.Loaded.benchTo - cpuBench0
	if endErr != nil {
		return nil, 0, endErr
	}
	if st, err := ipc.NewClient(d.socket).Status(ctx); err == nil {
		res.ScanYields = st.Counters.ScanYields
	}
	kb, err := d.stop()
	if err != nil {
		return nil, 0, err
	}
	res.Loaded.PeakRSSMB = float64(kb) / 1024
	os.RemoveAll(w1)
	res.Ratio = res.Loaded.Secs / res.Unloaded.Secs
	return samples, loadSecs, nil
}

// loadBegin launches sifd on tree with its index in w, for the phase
// during: on a fresh index for a first scan and for the compaction after
// it; for a reconcile, on the index a run before made of the tree
// (loadIndex). extra are sifd's flags for the run timed.
func loadBegin(ctx context.Context, during, sifd, tree, w string, extra ...string) (*daemonRun, error) {
	if during == "reconcile" {
		if err := loadIndex(ctx, sifd, tree, w); err != nil {
			return nil, err
		}
	}
	return launchDaemon(sifd, tree, w, extra...)
}

// loadEnd waits for the end of the phase during that d is in, and records
// in run its start and end, its length, sifd's CPU time over it and the
// index's files. A first scan and a reconcile start at launch and end at
// ready; a compaction starts at ready and ends when the status no longer
// says compacting.
func loadEnd(ctx context.Context, during string, d *daemonRun, run *loadRun) error {
	cpu0 := 0.0
	err := d.waitReady(ctx)
	run.from = d.start
	if err == nil && during == "compaction" {
		run.from = time.Now()
		run.benchFrom, _ = cpuSeconds(os.Getpid())
		cpu0, _ = cpuSeconds(d.cmd.Process.Pid)
		err = d.waitCompacted(ctx)
	}
	if err != nil {
		d.cmd.Process.Kill()
		return err
	}
	run.to = time.Now()
	run.benchTo, _ = cpuSeconds(os.Getpid())
	cpu, _ := cpuSeconds(d.cmd.Process.Pid)
	run.CPUSecs = cpu - cpu0
	run.ReadySecs = d.ready.Seconds()
	run.Secs = run.ReadySecs
	if during == "compaction" {
		run.Secs = run.to.Sub(run.from).Seconds()
	}
	if st, err := ipc.NewClient(d.socket).Status(ctx); err == nil {
		run.Files, run.Unchanged = st.Index.Files, st.Counters.Unchanged
	}
	return nil
}

// waitListening returns once d answers on its socket.
func waitListening(ctx context.Context, d *daemonRun) error {
	probe := ipc.NewClient(d.socket)
	for {
		if _, err := probe.Info(ctx); err == nil {
			return nil
		}
		select {
		case err := <-d.done:
			return fmt.Errorf("sifd exited before it listened: %v", err)
		case <-ctx.Done():
			d.cmd.Process.Kill()
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// loadIndex indexes tree into a fresh index in w, waits until sifd has
// settled, stops it cleanly, and sets every file's mtime to a new time,
// its bytes unchanged, so that the next run on the index reads each
// again: the reconcile after a restart at its heaviest.
func loadIndex(ctx context.Context, sifd, tree, w string) error {
	d, err := startDaemon(ctx, sifd, tree, w)
	if err != nil {
		return err
	}
	if err := d.waitStatus(ctx, settled); err != nil {
		d.cmd.Process.Kill()
		return err
	}
	if _, err := d.stop(); err != nil {
		return err
	}
	// An hour ago: a new time, and none a scan would take for a file
	// still being written.
	return touchTree(tree, time.Now().Add(-time.Hour))
}

// settled says whether the daemon of status st is done with its work:
// ready, not compacting, and no change or scan waiting or being read.
func settled(st *ipc.Status) bool {
	return st.State == "ready" && !st.Index.Compacting && st.Queue == ipc.QueueStatus{}
}

// touchTree sets the access and modification times of every regular file
// under root to t.
func touchTree(root string, t time.Time) error {
	for _, p := range regularFiles(root, 0, 1<<62) {
		if err := os.Chtimes(p, t, t); err != nil {
			return err
		}
	}
	return nil
}

// loadSum sums up the clients' samples and what each kind took alone into
// res: requests, errors, latencies by kind, the CPU floor of T1, what
// was unexpected and the goals. It returns the first message of each
// kind of error and the number of errors.
func loadSum(res *loadResult, samples [][]loadSample, alone map[string]*loadKind, loadSecs float64) (map[string]string, int) {
	daemon, e2e := map[string][]float64{}, map[string][]float64{}
	firstErr := map[string]string{}
	for _, ss := range samples {
		for _, s := range ss {
			res.Requests++
			if s.err != "" {
				res.Errors[s.err]++
				if firstErr[s.err] == "" {
					firstErr[s.err] = s.msg
				}
				continue
			}
			e2e[s.kind] = append(e2e[s.kind], s.e2eMs)
			if s.daemonMs >= 0 {
				daemon[s.kind] = append(daemon[s.kind], s.daemonMs)
				if s.e2eMs-s.daemonMs >= 1000 {
					res.Retried++
				}
			}
		}
	}
	for k, xs := range e2e {
		res.Kinds[k] = &loadKind{Done: len(xs), E2E: summarize(xs), Daemon: summarize(daemon[k])}
	}
	for k, a := range alone {
		if res.Kinds[k] == nil {
			res.Kinds[k] = &loadKind{}
		}
		res.Kinds[k].AloneDaemon, res.Kinds[k].AloneE2E = a.Daemon, a.E2E
		res.Kinds[k].AloneMeanMs, res.Kinds[k].AloneSlow, res.Kinds[k].AloneCPUMs = a.AloneMeanMs, a.AloneSlow, a.AloneCPUMs
	}
	for _, k := range res.Kinds {
		res.DemandCPU += float64(k.Done) * k.AloneCPUMs / 1000
	}
	res.Floor = (res.Unloaded.CPUSecs + res.DemandCPU + res.BenchCPU) / float64(res.Cores)
	res.Unexpected, res.Notes = loadChecks(res)
	res.ReqPerSec = float64(res.Requests) / loadSecs
	errs := 0
	for _, n := range res.Errors {
		errs += n
	}
	sim := res.Kinds["similar"]
	if sim == nil {
		sim = &loadKind{}
	}
	res.Goals = []goal{
		{"no errors", strconv.Itoa(errs), errs == 0},
		{"in-daemon p99 of similar < 50 ms", f1(sim.Daemon.P99Ms) + " ms", sim.Done > 0 && sim.Daemon.P99Ms < 50},
		{"end-to-end p99 of similar < 100 ms", f1(sim.E2E.P99Ms) + " ms", sim.Done > 0 && sim.E2E.P99Ms < 100},
		{"memory bounded: peak RSS T1 - T0 <= 128 MiB (the daemon's request-body budget)",
			f0(res.Loaded.PeakRSSMB-res.Unloaded.PeakRSSMB) + " MB", res.Loaded.PeakRSSMB-res.Unloaded.PeakRSSMB <= 128},
	}
	return firstErr, errs
}

// loadChecks returns what was unexpected in the two runs of res, and
// notes on its figures.
func loadChecks(res *loadResult) (unexpected, notes []string) {
	if res.Unloaded.Files != res.Loaded.Files {
		unexpected = append(unexpected, fmt.Sprintf("the loaded run indexed %d files, the unloaded one %d", res.Loaded.Files, res.Unloaded.Files))
	}
	if res.During == "reconcile" && res.Unloaded.Unchanged+res.Loaded.Unchanged > 0 {
		unexpected = append(unexpected, fmt.Sprintf("the reconciles found %d (T0) and %d (T1) files unchanged: want each read again", res.Unloaded.Unchanged, res.Loaded.Unchanged))
	}
	if res.During == "compaction" && res.Unloaded.Secs < 2 {
		notes = append(notes, fmt.Sprintf("the compaction took %.2f s alone, under 2 s: few requests fall in it, so its tail percentiles rest on a few requests", res.Unloaded.Secs))
	}
	return unexpected, notes
}

// loadReport prints res for a reader: the tree, the two runs, the
// clients' throughput and CPU, the latencies by kind, the errors and the
// goals. loadSecs is how long the clients ran; firstErr and errs are
// loadSum's.
func loadReport(res *loadResult, lo *loadFlags, loadSecs float64, firstErr map[string]string, errs int) {
	phase, _ := findPhase(res.During)
	fmt.Printf("load: %s, %d files, %.1f MB, page cache warm; %d cores; %s, alone (T0) and with %d clients (T1)\n",
		res.Tree, res.Files, mb(res.Bytes), res.Cores, phase.what, res.Clients)
	fmt.Printf("each client: its own connection, one request at a time, a pause of 0-%s between them (mean %s); similar with the fingerprints of %d files of the tree, 2%% status, 0.5%% dupes, 0.2%% groups\n",
		2*lo.think, lo.think, res.Queries)
	fmt.Print(table([][]string{
		{"", phase.column, "sifd CPU s", "peak RSS MB", "indexed files"},
		{"T0 alone", f2(res.Unloaded.Secs), f1(res.Unloaded.CPUSecs), f0(res.Unloaded.PeakRSSMB), strconv.FormatUint(res.Unloaded.Files, 10)},
		{fmt.Sprintf("T1 with %d clients", res.Clients), f2(res.Loaded.Secs), f1(res.Loaded.CPUSecs), f0(res.Loaded.PeakRSSMB), strconv.FormatUint(res.Loaded.Files, 10)},
	}))
	sent := "sent"
	if res.During == "compaction" {
		sent = fmt.Sprintf("asked all along; from ready (%.2f s after sifd) to the compaction's end they sent", res.Loaded.ReadySecs)
	}
	fmt.Printf("T1/T0 = %.2f, the %s's slowdown under load (queries go first); clients started %.2f s after sifd (when it answered), %s %d requests in %.1f s (%.0f/s), using %.1f s of CPU in sifbench; the scan waited for queries %d times\n",
		res.Ratio, phase.work, res.Loaded.ListenSecs, sent, res.Requests, loadSecs, res.ReqPerSec, res.BenchCPU, res.ScanYields)
	fmt.Printf("the requests answered, each at its CPU cost alone (shared groups answers cost less), take %.1f s of sifd CPU (%.2f cores over T1); with the %s's %.1f s of T0 and sifbench's %.1f s, T1 is at least %.1f s on %d cores (T1/T0 >= %.2f)\n",
		res.DemandCPU, res.DemandCPU/res.Loaded.Secs, phase.work, res.Unloaded.CPUSecs, res.BenchCPU, res.Floor, res.Cores, res.Floor/res.Unloaded.Secs)
	if len(res.LoadAvg) == 4 {
		fmt.Printf("machine load average (1, 5, 15 min): before T0 %s; after T0 %s; before T1 %s; after T1 %s\n", res.LoadAvg[0], res.LoadAvg[1], res.LoadAvg[2], res.LoadAvg[3])
	}
	if lo.profile != "" {
		fmt.Printf("profiles of the loaded daemon in %s (block and mutex profiling on: its figures are not for the record)\n", lo.profile)
	}
	fmt.Println("latencies in ms, p50 / p90 / p99 / max; alone: one request at a time on T0's daemon once ready")
	rows := [][]string{{"request", "done", "alone in daemon", "alone end to end", "under load in daemon", "under load end to end"}}
	lat := func(l latencyStats) string {
		if l.N == 0 {
			return "-"
		}
		return f2(l.MedianMs) + " / " + f2(l.P90Ms) + " / " + f2(l.P99Ms) + " / " + f2(l.MaxMs)
	}
	for _, k := range []string{"similar", "status", "dupes", "groups"} {
		if x := res.Kinds[k]; x != nil {
			rows = append(rows, []string{k, strconv.Itoa(x.Done), lat(x.AloneDaemon), lat(x.AloneE2E), lat(x.Daemon), lat(x.E2E)})
		}
	}
	fmt.Print(table(rows))
	if x := res.Kinds["similar"]; x != nil && x.AloneDaemon.N > 0 {
		fmt.Printf("alone, %d of %d queries (%.1f%%) took 50 ms or more in the daemon; mean %.2f ms, %.2f ms of sifd CPU\n",
			x.AloneSlow, x.AloneDaemon.N, 100*float64(x.AloneSlow)/float64(x.AloneDaemon.N), x.AloneMeanMs, x.AloneCPUMs)
	}
	var kinds []string
	for k := range res.Errors {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Printf("errors: %d", errs)
	for _, k := range kinds {
		fmt.Printf("; %s: %d (first: %s)", k, res.Errors[k], firstErr[k])
	}
	fmt.Printf("\nbusy answers not absorbed by the client's retries: %d; answered only after a retry (a second or more spent outside the daemon): %d\n",
		res.Errors["busy"], res.Retried)
	for _, n := range res.Notes {
		fmt.Printf("note: %s\n", n)
	}
	printGoals(res.Goals, res.Unexpected)
}

// loadAlone asks the ready daemon of c (process pid) each query of reqs
// once, then status, dupes and groups a few times, one request at a time,
// and returns what each kind took, and the daemon's CPU for them.
func loadAlone(ctx context.Context, c *ipc.Client, reqs []*ipc.SimilarRequest, pid int) map[string]*loadKind {
	daemon, e2e := map[string][]float64{}, map[string][]float64{}
	cpu := map[string]float64{}
	cpu0, _ := cpuSeconds(pid)
	charge := func(kind string) {
		cpu1, _ := cpuSeconds(pid)
		cpu[kind] += cpu1 - cpu0
		cpu0 = cpu1
	}
	add := func(kind string, t time.Time, daemonNs int64, err error) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "sifbench: %s alone: %v\n", kind, err)
			return
		}
		e2e[kind] = append(e2e[kind], ms(time.Since(t)))
		if daemonNs >= 0 {
			daemon[kind] = append(daemon[kind], float64(daemonNs)/1e6)
		}
	}
	for _, q := range reqs {
		t := time.Now()
		r, err := c.Similar(ctx, q)
		ns := int64(-1)
		if err == nil {
			ns = r.ElapsedNs
		}
		add("similar", t, ns, err)
	}
	charge("similar")
	for range 20 {
		t := time.Now()
		_, err := c.Status(ctx)
		add("status", t, -1, err)
	}
	charge("status")
	for range 3 {
		t := time.Now()
		_, err := c.Dupes(ctx, "")
		add("dupes", t, -1, err)
		charge("dupes")
		t = time.Now()
		g, err := c.Groups(ctx, ipc.GroupsOptions{})
		ns := int64(-1)
		if err == nil {
			ns = g.ElapsedNs
		}
		add("groups", t, ns, err)
		charge("groups")
	}
	out := map[string]*loadKind{}
	for k, xs := range e2e {
		o := &loadKind{Done: len(xs), E2E: summarize(xs), Daemon: summarize(daemon[k])}
		if len(daemon[k]) > 0 {
			xs = daemon[k]
		}
		var sum float64
		for _, x := range xs {
			sum += x
			if x >= 50 {
				o.AloneSlow++
			}
		}
		o.AloneMeanMs = sum / float64(len(xs))
		o.AloneCPUMs = 1000 * cpu[k] / float64(len(xs))
		out[k] = o
	}
	return out
}

// waitIdle returns once process pid uses less than a tenth of a core over
// half a second, or after max.
func waitIdle(pid int, max time.Duration) {
	end := time.Now().Add(max)
	c0, err := cpuSeconds(pid)
	for err == nil && time.Now().Before(end) {
		time.Sleep(500 * time.Millisecond)
		var c1 float64
		if c1, err = cpuSeconds(pid); err != nil || c1-c0 < 0.05 {
			return
		}
		c0 = c1
	}
}

// loadAvg returns the machine's load averages over 1, 5 and 15 minutes,
// or "?" where /proc/loadavg cannot be read.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// freeLoopbackAddr returns a TCP address on the loopback that was free a
// moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// takeProfiles fetches from sifd's --pprof listener at addr a CPU profile
// of secs seconds, then its block, mutex, heap and goroutine profiles, into
// dir.
func takeProfiles(ctx context.Context, addr, dir string, secs int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := fetchProfile(ctx, addr, fmt.Sprintf("profile?seconds=%d", secs), filepath.Join(dir, "profile.pprof")); err != nil {
		return err
	}
	for _, name := range []string{"block", "mutex", "heap", "goroutine"} {
		if err := fetchProfile(ctx, addr, name, filepath.Join(dir, name+".pprof")); err != nil {
			return err
		}
	}
	return nil
}

// loadSample is one request of a load client.
type loadSample struct {
	kind     string
	at       time.Time // when it was sent
	e2eMs    float64
	daemonMs float64 // -1 when the answer does not say
	err      string  // kind of error, "" for none
	msg      string
}

// loadClient sends requests one at a time, pausing 0 to 2×think between
// them, until stop is set, and returns what each took.
func loadClient(ctx context.Context, c *ipc.Client, reqs []*ipc.SimilarRequest, think time.Duration, seed uint64, stop *atomic.Bool) []loadSample {
	r := rand.New(rand.NewPCG(seed, 0x10ad))
	var out []loadSample
	// Clients start out of step.
	time.Sleep(time.Duration(r.Int64N(int64(think) + 1)))
	for !stop.Load() && ctx.Err() == nil {
		t := time.Now()
		s := loadSample{daemonMs: -1, at: t}
		var err error
		switch x := r.IntN(1000); {
		case x < 2:
			s.kind = "groups"
			var g *ipc.GroupsResponse
			if g, err = c.Groups(ctx, ipc.GroupsOptions{}); err == nil {
				s.daemonMs = float64(g.ElapsedNs) / 1e6
			}
		case x < 7:
			s.kind = "dupes"
			_, err = c.Dupes(ctx, "")
		case x < 27:
			s.kind = "status"
			_, err = c.Status(ctx)
		default:
			s.kind = "similar"
			var sr *ipc.SimilarResponse
			if sr, err = c.Similar(ctx, reqs[r.IntN(len(reqs))]); err == nil {
				s.daemonMs = float64(sr.ElapsedNs) / 1e6
			}
		}
		s.e2eMs = ms(time.Since(t))
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.err, s.msg = errorKind(err), err.Error()
		}
		out = append(out, s)
		if think > 0 {
			time.Sleep(time.Duration(r.Int64N(2*int64(think) + 1)))
		}
	}
	return out
}

// inPhase returns the samples of each client that were sent from from
// to to: those of the phase timed when the clients ask for longer.
func inPhase(samples [][]loadSample, from, to time.Time) [][]loadSample {
	out := make([][]loadSample, len(samples))
	for i, ss := range samples {
		for _, s := range ss {
			if !s.at.Before(from) && s.at.Before(to) {
				out[i] = append(out[i], s)
			}
		}
	}
	return out
}

// errorKind names the kind of a client error: the daemon's error code
// ("busy" for a 503 busy the client's retries did not absorb), or the
// client's class of failure.
func errorKind(err error) string {
	var e *ipc.Error
	switch {
	case errors.As(err, &e):
		return string(e.Code)
	case errors.Is(err, ipc.ErrNoDaemon):
		return "no_daemon"
	case errors.Is(err, ipc.ErrNotSif):
		return "not_sif"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "other"
}

// loadTree returns the tree to load: the one already complete in dir,
// or a new one written there (or, without dir, in work), and how long
// writing it took.
func loadTree(c *common, dir, work string, size int64) (string, float64, error) {
	keep := dir != ""
	if !keep {
		dir = filepath.Join(work, "load")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", 0, err
	}
	tree, done := filepath.Join(dir, "tree"), filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err == nil {
		return tree, 0, nil
	}
	if _, err := os.Stat(tree); err == nil {
		return "", 0, fmt.Errorf("--dir %s: holds a tree that was not finished (no %s): remove it first", dir, done)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	// Twice the size: the tree and room to spare for the indexes and the
	// page cache's write-back.
	if free, err := freeBytes(dir); err == nil && free < uint64(2*size) {
		return "", 0, fmt.Errorf("%s: %.1f GB free, want at least %.1f GB for a tree of %.1f GB; give another --dir", dir, float64(free)/1e9, 2*float64(size)/1e9, float64(size)/1e9)
	}
	fmt.Fprintf(os.Stderr, "sifbench: writing a tree of %.1f GB in %s\n", float64(size)/1e9, tree)
	start := time.Now()
	if err := writeLoadTree(tree, c.src, size, 5); err != nil {
		return "", 0, err
	}
	if err := os.WriteFile(done, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return "", 0, err
	}
	return tree, since(start), nil
}

// writeLoadTree writes a tree of at least size bytes into root: a copy of
// src (source code, as the corpus benchmark indexes; skipped if src is
// ""), then generated files from a deterministic seed until the size is
// reached, each one of
//
//   - 60 %: random text of 2 KB to 256 KB (log-uniform),
//   - 19.8 %: random binary data of 4 KB to 2 MB (log-uniform),
//   - 0.2 %: random binary data of 8 MB to 48 MB,
//   - 15 %: a near-copy of an earlier generated file: 2-30 % of it
//     overwritten in 50-byte pieces, or a 40-90 % prefix of it followed by
//     new text,
//   - 5 %: an identical copy of an earlier generated file,
//
// in directories of about 50 files.
func writeLoadTree(root, src string, size int64, seed uint64) error {
	var total int64
	if src != "" {
		_, n, err := copyTree(src, filepath.Join(root, "src"))
		if err != nil {
			return fmt.Errorf("copying %s: %w", src, err)
		}
		total = n
	}
	const meanSize = 150_000
	dirs := max(1, int((size-total)/meanSize/50))
	gen := filepath.Join(root, "gen")
	for i := range dirs {
		if err := os.MkdirAll(treeDir(gen, i), 0o755); err != nil {
			return err
		}
	}
	r := rand.New(rand.NewPCG(seed, uint64(size)))
	logUniform := func(lo, hi int) int {
		return int(math.Exp(math.Log(float64(lo)) + r.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
	}
	randomBinary := func(n int) []byte {
		b := make([]byte, n)
		for i := 0; i+8 <= n; i += 8 {
			x := r.Uint64()
			for j := range 8 {
				b[i+j] = byte(x >> (8 * j))
			}
		}
		copy(b, "\x7fBIN\x00\x00\x01\x00") // a header with NULs, as binary formats have
		return b
	}
	var made []string
	start := time.Now()
	for i := 0; total < size; i++ {
		var b []byte
		ext := ".txt"
		switch x := r.IntN(1000); {
		case x < 600 || len(made) == 0:
			b = randomText(r, logUniform(2<<10, 256<<10))
		case x < 798:
			b, ext = randomBinary(logUniform(4<<10, 2<<20)), ".bin"
		case x < 800:
			b, ext = randomBinary(8<<20+r.IntN(40<<20)), ".bin"
		default:
			orig := made[r.IntN(len(made))]
			ob, err := os.ReadFile(orig)
			if err != nil {
				return err
			}
			ext = filepath.Ext(orig)
			switch {
			case x < 875:
				b = substitute(r, ob, 0.02+0.28*r.Float64())
			case x < 950:
				k := len(ob) * (40 + r.IntN(51)) / 100
				b = append(ob[:k:k], randomText(r, 1+len(ob)/4)...)
			default:
				b = ob
			}
		}
		p := filepath.Join(treeDir(gen, i%dirs), fmt.Sprintf("g%06d%s", i, ext))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
		made = append(made, p)
		total += int64(len(b))
		if (i+1)%2000 == 0 {
			fmt.Fprintf(os.Stderr, "sifbench: %d files, %.0f of %.0f MB (%.0f s)\n", i+1, mb(total), mb(size), since(start))
		}
	}
	return nil
}
