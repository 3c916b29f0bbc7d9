package main

// sifbench accuracy: how right sif's answers are, per query size, beside
// ssdeep and TLSH on the same queries, against the truth computed by brute
// force (see accuracy_truth.go) on a corpus of package versions (see
// accuracy_sources.go), with what sif's answers cost: its index's size
// and its query latency.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// accFlags are the flags of the accuracy and manber benchmarks.
type accFlags struct {
	set       string
	dir       string
	perBucket int
	seed      uint64
	threshold float64
	peers     bool
	// sifdConfig is the configuration file sifd runs with ("" for none,
	// so the user's own file does not change the figures).
	sifdConfig string
	// fleet: sifd also publishes to a fleet index, which is asked too
	// (accuracy_fleet.go).
	fleet bool
	// simihash: sifd also keeps SimiHash keys, and every query is asked
	// by SimiHash too with simiTol (accuracy_simihash.go).
	simihash bool
	simiTol  fingerprint.Tolerances
}

// relations are the true relations the tools are judged on: containment
// of the query in the file of at least 50 % and 80 %, and resemblance of
// at least 50 % and of at least 95 % (near-identical files, what SimiHash
// is made for).
var relations = []struct {
	Name string
	Res  bool
	Cut  float64
}{
	{"containment >= 50%", false, 0.5},
	{"containment >= 80%", false, 0.8},
	{"resemblance >= 50%", true, 0.5},
	{"resemblance >= 95%", true, 0.95},
}

// f1Result is a tool's best F1 over its score thresholds for a relation,
// and the least score that reaches it.
type f1Result struct {
	F1        float64 `json:"f1"`
	Threshold float64 `json:"threshold"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
}

// toolMetrics are one tool's figures on one bucket.
type toolMetrics struct {
	Tool string     `json:"tool"`
	F1   []f1Result `json:"best_f1"` // one per relation
	// FirstRight is the share of the queries with a file of true
	// containment ≥ 50 % whose first answer has the largest true
	// containment of any indexed file.
	FirstRight float64 `json:"first_right"`
	Nothing    int     `json:"answered_nothing"`
	Unhashed   int     `json:"unhashed"`
	TooFew     int     `json:"too_few,omitempty"` // sif: queries with too few fingerprints to judge
}

// bucketMetrics are every tool's figures on one size bucket (or all).
type bucketMetrics struct {
	Bucket    string `json:"bucket"`
	Queries   int    `json:"queries"`
	WithMatch int    `json:"with_match"` // queries with a file of true containment ≥ 50 %
	Positives []int  `json:"positives"`  // true pairs per relation
	// Boilerplate counts the queries contained (≥ 50 %) in more than
	// boilerplateFiles files, such as licence texts, and BoilerplatePairs
	// their share of the true pairs at containment ≥ 50 %: members of
	// families made from one template, or files that are mostly a licence
	// text. sif answers a file that is mostly such fingerprints with its
	// family, and leaves them out of one that has more of its own; they
	// weigh heavily on F1.
	Boilerplate      int           `json:"boilerplate_queries"`
	BoilerplatePairs float64       `json:"boilerplate_pairs_share"`
	Tools            []toolMetrics `json:"tools"`
	// NoBoilerplateF1 is each tool's best F1 per relation over the queries
	// that are not boilerplate (in the order of Tools, then of relations),
	// so the few queries that are do not hide how the rest fare; nil when
	// the bucket has none.
	NoBoilerplateF1 [][]f1Result `json:"no_boilerplate_f1,omitempty"`
}

// accuracyResult is the output of sifbench accuracy.
type accuracyResult struct {
	Set          string             `json:"set"`
	Source       string             `json:"source"`  // go, npm or deb
	Modules      []string           `json:"modules"` // the packages of the set
	IndexedFiles int                `json:"indexed_files"`
	IndexedBytes int64              `json:"indexed_bytes"`
	Queries      int                `json:"queries"`
	QueryKinds   map[string]int     `json:"query_kinds"`
	Threshold    float64            `json:"sif_threshold_percent"`
	Buckets      []bucketMetrics    `json:"buckets"`
	Seconds      map[string]float64 `json:"seconds"`
	Sif          sifCosts           `json:"sif"`
	// Fleet compares, with --fleet, the fleet's answers with sif --fast's
	// and with sif's.
	Fleet []agreement `json:"fleet_agreement,omitempty"`
}

// sifCosts are what sif's answers cost: the index's size on disk once the
// first scan is done, and the latency of the similar requests.
type sifCosts struct {
	// IndexBytesReady sums the files of sifd's index directory when it is
	// ready; IndexBytes once it has stopped cleanly after the queries, as
	// the index stays on disk.
	IndexBytesReady int64 `json:"index_bytes_ready"`
	IndexBytes      int64 `json:"index_bytes"`
	// Latency is per run ("sif", "sif --fast"): a similar request's time
	// through the Go client, from sending it to its whole answer; and
	// with --fleet ("sif fleet") a fleet.Similar call's, in this process;
	// with --simihash ("sif simihash") a similar request's by SimiHash.
	Latency map[string]latency `json:"latency_ms"`
}

// latency are percentiles of request times in milliseconds.
type latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// latencyOf returns the percentiles of ds.
func latencyOf(ds []time.Duration) latency {
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
	}
	return latency{P50: percentile(ms, 0.5), P99: percentile(ms, 0.99), Max: percentile(ms, 1)}
}

// benchAccuracy runs the accuracy benchmark on one set.
func benchAccuracy(ctx context.Context, c *common, af *accFlags) (*accuracyResult, error) {
	t0 := time.Now()
	secs := map[string]float64{}
	lap := func(name string) { secs[name] = since(t0); t0 = time.Now() }
	if af.peers {
		if err := checkPeers(); err != nil {
			return nil, err
		}
	}
	corpus, indexed, err := assembleIndexed(ctx, af)
	if err != nil {
		return nil, err
	}
	newer, err := hashFiles(corpus.NewerRoot, 0)
	if err != nil {
		return nil, err
	}
	lap("corpus")
	queryRoot := filepath.Join(c.workDir, "queries")
	qs, err := sampleQueries(queryRoot, indexed, newer, af.perBucket, af.seed)
	if err != nil {
		return nil, err
	}
	lap("queries")
	res := &accuracyResult{Set: af.set, Source: accuracySets[af.set].Source.Kind, Queries: len(qs), QueryKinds: map[string]int{}, Threshold: af.threshold, Seconds: secs}
	for _, m := range corpus.Modules {
		res.Modules = append(res.Modules, m.Path)
	}
	var files []string
	fileID := map[string]int32{}
	for _, f := range indexed {
		fileID[f.Path] = int32(len(files))
		files = append(files, f.Path)
		res.IndexedFiles++
		res.IndexedBytes += f.Size
	}
	queries := make([]string, len(qs))
	for i, q := range qs {
		queries[i] = q.Path
		res.QueryKinds[q.Kind]++
	}
	if !c.json {
		fmt.Fprintf(os.Stderr, "sifbench: %s set: %d indexed files (%.1f MB), %d queries; computing the truth\n",
			af.set, len(files), mb(res.IndexedBytes), len(qs))
	}
	tr, err := bruteTruth(queries, files)
	if err != nil {
		return nil, err
	}
	lap("truth")

	runs, err := runSif(ctx, c, af, corpus.IndexRoot, fileID, queries, secs, &res.Sif)
	if err != nil {
		return nil, err
	}
	if af.fleet {
		// runs are sif, sif --fast and sif fleet.
		fast, checked, fl := runs[1], runs[0], runs[2]
		res.Fleet = []agreement{compareRuns(fast, fl, queries), compareRuns(checked, fl, queries)}
	}
	lap("sif")
	if af.peers {
		ss, err := runSsdeep(ctx, c.workDir, corpus.IndexRoot, fileID, queries)
		if err != nil {
			return nil, err
		}
		lap("ssdeep")
		tl, err := runTLSH(ctx, c.workDir, corpus.IndexRoot, queryRoot, fileID, queries)
		if err != nil {
			return nil, err
		}
		lap("tlsh")
		runs = append(runs, ss, tl)
	}

	for bi := range len(sizeBuckets) + 1 {
		var sel []int
		name := "all"
		if bi < len(sizeBuckets) {
			name = sizeBuckets[bi].Name
		}
		for qi, q := range qs {
			if bi == len(sizeBuckets) || q.Bucket == bi {
				sel = append(sel, qi)
			}
		}
		res.Buckets = append(res.Buckets, measure(name, sel, tr, runs))
	}
	if c.keep {
		p := filepath.Join(c.workDir, "queries.json")
		if err := writeQueryDetails(p, qs, files, tr, runs); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "sifbench: each query's truth and first answers in %s\n", p)
	}
	if !c.json {
		printAccuracy(res, len(runs))
	}
	return res, nil
}

// queryDetail is one query's truth and each tool's first answer, written
// with --keep for looking into what a tool got wrong.
type queryDetail struct {
	accQuery
	MaxContainment float64  `json:"max_containment"`
	Positives      int      `json:"positives_50"` // files of true containment ≥ 50 %
	Best           []string `json:"best"`         // the files of maximal containment
	// Similar are the files of true resemblance ≥ 50 % and Contained
	// those holding 80 % or more of the query (at most maxDetailPairs
	// each, in the order of the indexed files), with what each tool gave them: resemblance
	// and containment (absent: not answered).
	Similar   []similarPair   `json:"similar_50,omitempty"`
	Contained []similarPair   `json:"contained_80,omitempty"`
	First     map[string]*hit `json:"first"`
}

// similarPair is one file of a query's Similar or Contained: the true
// measure and each tool's.
type similarPair struct {
	Path  string             `json:"path"`
	Truth float64            `json:"truth"`
	Tools map[string]float64 `json:"tools"`
}

// maxDetailPairs bounds a query's Similar and Contained.
const maxDetailPairs = 5000

// hit is a tool's first answer with its true measures.
type hit struct {
	Path        string  `json:"path"`
	Score       float64 `json:"score"`
	Containment float64 `json:"containment"`
	Resemblance float64 `json:"resemblance"`
	Answers     int     `json:"answers"`
	// Found is how many of the query's files of true containment ≥ 50 %
	// the tool answered (Positives in the query's detail).
	Found int `json:"found_50"`
}

// writeQueryDetails writes one JSON line per query to path.
func writeQueryDetails(path string, qs []accQuery, files []string, tr *truth, runs []*toolRun) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for qi, q := range qs {
		d := queryDetail{accQuery: q, MaxContainment: tr.MaxContainment(qi), First: map[string]*hit{}}
		for fi, n := range tr.Inter[qi] {
			if n == tr.MaxInter[qi] && len(d.Best) < 10 {
				d.Best = append(d.Best, files[fi])
			}
		}
		slices.Sort(d.Best)
		answered := make([]map[int32]answer, len(runs))
		for i, run := range runs {
			answered[i] = make(map[int32]answer, len(run.Answers[qi]))
			for _, a := range run.Answers[qi] {
				answered[i][a.File] = a
			}
		}
		pair := func(fi int32, truth float64, res bool) similarPair {
			sp := similarPair{Path: files[fi], Truth: truth, Tools: map[string]float64{}}
			for i, run := range runs {
				if a, ok := answered[i][fi]; ok {
					sp.Tools[run.Name] = a.Cont
					if res {
						sp.Tools[run.Name] = a.Res
					}
				}
			}
			return sp
		}
		for _, fi := range slices.Sorted(maps.Keys(tr.Inter[qi])) {
			c := tr.Containment(qi, fi)
			if c >= 0.5 {
				d.Positives++
			}
			if c >= 0.8 && len(d.Contained) < maxDetailPairs {
				d.Contained = append(d.Contained, pair(fi, c, false))
			}
			if r := tr.Resemblance(qi, fi); r >= 0.5 && len(d.Similar) < maxDetailPairs {
				d.Similar = append(d.Similar, pair(fi, r, true))
			}
		}
		for _, r := range runs {
			if as := r.Answers[qi]; len(as) > 0 {
				h := &hit{Path: files[as[0].File], Score: as[0].Cont, Answers: len(as),
					Containment: tr.Containment(qi, as[0].File), Resemblance: tr.Resemblance(qi, as[0].File)}
				for _, a := range as {
					if tr.Containment(qi, a.File) >= 0.5 {
						h.Found++
					}
				}
				d.First[r.Name] = h
			} else {
				d.First[r.Name] = nil
			}
		}
		if err := enc.Encode(d); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// runSif runs sifd with its default parameters on the indexed tree, waits
// for its first scan, and asks it about every query through the Go client
// twice: as sifctl similar does, sending the query's bytes so the daemon
// checks the best candidates against theirs ("sif"), and with the check
// skipped, the index's estimates alone ("sif --fast"). With --fleet, sifd
// also publishes the tree to a fleet index, and every query is asked of
// it too ("sif fleet"), once everything is published.
//
// The queries wait for the compaction after the first scan, so they are not
// timed beside it. It records in costs the index's size once sifd is ready
// and once it has stopped cleanly after the queries, and each run's request
// latency.
func runSif(ctx context.Context, c *common, af *accFlags, indexRoot string, fileID map[string]int32, queries []string, secs map[string]float64, costs *sifCosts) ([]*toolRun, error) {
	sifd, _, err := buildBinaries(c.workDir)
	if err != nil {
		return nil, err
	}
	work := filepath.Join(c.workDir, "sifd-run")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	cfg := af.sifdConfig
	var fl *accFleet
	if af.fleet {
		if fl, cfg, err = startAccFleet(ctx, work, indexRoot, af.sifdConfig); err != nil {
			return nil, err
		}
		defer fl.close()
	}
	args := []string{"--no-watch", "--config", cfg}
	if af.simihash {
		args = append(args, "--simihash")
	}
	d, err := startDaemon(ctx, sifd, indexRoot, work, args...)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			d.stop()
		}
	}()
	secs["sifd_ready"] = d.ready.Seconds()
	costs.IndexBytesReady = dirSize(d.db)
	if err := d.waitCompacted(ctx); err != nil {
		return nil, err
	}
	if fl != nil {
		t := time.Now()
		if err := waitPublished(ctx, d); err != nil {
			return nil, err
		}
		secs["fleet_published"] = since(t)
	}
	cl := ipc.NewClient(d.socket)
	info, err := cl.Info(ctx)
	if err != nil {
		return nil, err
	}
	newRun := func(name string) *toolRun {
		return &toolRun{Name: name, Answers: make([][]answer, len(queries)),
			TooFew: map[int]bool{}, Template: map[int]bool{}, Skipped: map[int]bool{}, Capped: map[int]bool{}}
	}
	checked, fast := newRun("sif"), newRun("sif --fast")
	runs := []*toolRun{checked, fast}
	var fleetRun *toolRun
	if fl != nil {
		fleetRun = newRun("sif fleet")
		runs = append(runs, fleetRun)
	}
	var simiRun *toolRun
	if af.simihash {
		simiRun = newRun(simiToolName)
		runs = append(runs, simiRun)
	}
	took := map[*toolRun][]time.Duration{}
	for qi, q := range queries {
		sk, data, err := ipc.QueryFile(q, info.Params, ipc.ReadOptions{SimiHash: af.simihash})
		if err != nil {
			return nil, err
		}
		for _, run := range []*toolRun{checked, fast} {
			req := ipc.NewSimilarRequest(q, sk)
			threshold := af.threshold
			req.Threshold = &threshold
			if run == fast {
				req.Fast = true
			} else {
				req.Attach(data)
			}
			t := time.Now()
			resp, err := cl.Similar(ctx, req)
			took[run] = append(took[run], time.Since(t))
			if err != nil {
				return nil, fmt.Errorf("similar %s: %w", q, err)
			}
			run.TooFew[qi], run.Template[qi], run.Skipped[qi] = resp.TooFew, resp.Template, resp.Skipped > 0
			for _, m := range resp.Matches {
				id, ok := fileID[m.Path]
				if !ok {
					return nil, fmt.Errorf("similar %s: answer %s is not a file of the indexed tree", q, m.Path)
				}
				run.Answers[qi] = append(run.Answers[qi], answer{File: id, Cont: m.Containment, Res: m.Resemblance})
			}
		}
		if fl != nil {
			as, res, capped, t, err := fl.ask(ctx, q, sk, info.Params, af.threshold, fileID)
			if err != nil {
				return nil, err
			}
			took[fleetRun] = append(took[fleetRun], t)
			fleetRun.Answers[qi] = as
			fleetRun.TooFew[qi], fleetRun.Template[qi], fleetRun.Skipped[qi], fleetRun.Capped[qi] = res.TooFew, res.Template, res.Skipped > 0, capped
		}
		if simiRun != nil {
			as, t, err := askSimi(ctx, cl, q, sk, af.simiTol, fileID)
			if err != nil {
				return nil, err
			}
			took[simiRun] = append(took[simiRun], t)
			simiRun.Answers[qi] = as
		}
	}
	costs.Latency = map[string]latency{}
	for run, ds := range took {
		costs.Latency[run.Name] = latencyOf(ds)
	}
	// The size that lasts: once sifd has stopped cleanly, with nothing
	// left to flush, compact or delete.
	stopped = true
	if _, err := d.stop(); err != nil {
		return nil, err
	}
	costs.IndexBytes = dirSize(d.db)
	return runs, nil
}

// boilerplateFiles is the number of files past which a query counts as
// boilerplate: the daemon's default cap on how many files a fingerprint
// may be found in before it is skipped.
const boilerplateFiles = 200

// measure computes every tool's figures over the queries sel.
func measure(name string, sel []int, tr *truth, runs []*toolRun) bucketMetrics {
	bm := bucketMetrics{Bucket: name, Queries: len(sel), Positives: make([]int, len(relations))}
	bpairs := 0
	var plain []int // the queries that are not boilerplate
	for _, q := range sel {
		if tr.MaxContainment(q) >= 0.5 {
			bm.WithMatch++
		}
		before := bm.Positives[0]
		for f := range tr.Inter[q] {
			for ri, r := range relations {
				if holds(tr, q, f, r.Res, r.Cut) {
					bm.Positives[ri]++
				}
			}
		}
		if n := bm.Positives[0] - before; n > boilerplateFiles {
			bm.Boilerplate++
			bpairs += n
		} else {
			plain = append(plain, q)
		}
	}
	if bm.Boilerplate > 0 {
		for _, t := range measure(name, plain, tr, runs).Tools {
			bm.NoBoilerplateF1 = append(bm.NoBoilerplateF1, t.F1)
		}
	}
	if bm.Positives[0] > 0 {
		bm.BoilerplatePairs = float64(bpairs) / float64(bm.Positives[0])
	}
	for _, run := range runs {
		tm := toolMetrics{Tool: run.Name}
		for ri, r := range relations {
			type scoredPair struct {
				score float64
				pos   bool
			}
			var pairs []scoredPair
			for _, q := range sel {
				for _, a := range run.Answers[q] {
					s := a.Cont
					if r.Res {
						s = a.Res
					}
					pairs = append(pairs, scoredPair{s, holds(tr, q, a.File, r.Res, r.Cut)})
				}
			}
			slices.SortFunc(pairs, func(a, b scoredPair) int {
				switch {
				case a.score > b.score:
					return -1
				case a.score < b.score:
					return 1
				}
				return 0
			})
			var best f1Result
			tp, fp := 0, 0
			for i, p := range pairs {
				if p.pos {
					tp++
				} else {
					fp++
				}
				if i+1 < len(pairs) && pairs[i+1].score == p.score {
					continue // a threshold takes all pairs of one score
				}
				if f1 := 2 * float64(tp) / float64(2*tp+fp+bm.Positives[ri]-tp); f1 > best.F1 {
					best = f1Result{F1: f1, Threshold: p.score,
						Precision: float64(tp) / float64(tp+fp), Recall: float64(tp) / float64(bm.Positives[ri])}
				}
			}
			tm.F1 = append(tm.F1, best)
		}
		right := 0
		for _, q := range sel {
			as := run.Answers[q]
			if len(as) == 0 {
				tm.Nothing++
			}
			if run.Unhashed[q] {
				tm.Unhashed++
			}
			if run.TooFew[q] {
				tm.TooFew++
			}
			if tr.MaxContainment(q) >= 0.5 && len(as) > 0 && tr.Inter[q][as[0].File] == tr.MaxInter[q] {
				right++
			}
		}
		if bm.WithMatch > 0 {
			tm.FirstRight = float64(right) / float64(bm.WithMatch)
		}
		bm.Tools = append(bm.Tools, tm)
	}
	return bm
}

// holds reports whether the true relation holds between query q and file f.
func holds(tr *truth, q int, f int32, res bool, cut float64) bool {
	if res {
		return tr.Resemblance(q, f) >= cut
	}
	return tr.Containment(q, f) >= cut
}

// printAccuracy prints the result as a table: one column per bucket, one
// row per figure and tool. A best F1 is followed by the score threshold
// that reaches it (sif: percent; ssdeep: score; tlsh: distance; sif
// simihash: sum-table distance in percent of the query's size).
func printAccuracy(res *accuracyResult, tools int) {
	fmt.Printf("accuracy, %s set: %d packages, %d indexed files (%.1f MB), %d queries %v\n",
		res.Set, len(res.Modules), res.IndexedFiles, mb(res.IndexedBytes), res.Queries, res.QueryKinds)
	fmt.Printf("truth: distinct %d-byte windows, brute force; sif asked with threshold %g %%, no limit\n", truthWindow, res.Threshold)
	head := []string{"", ""}
	for _, b := range res.Buckets {
		head = append(head, b.Bucket)
	}
	rows := [][]string{head}
	row := []string{"queries (with a file of containment >= 50%)", ""}
	for _, b := range res.Buckets {
		row = append(row, fmt.Sprintf("%d (%d)", b.Queries, b.WithMatch))
	}
	rows = append(rows, row)
	row = []string{fmt.Sprintf("boilerplate queries, in > %d files (share of pairs >= 50%%)", boilerplateFiles), ""}
	for _, b := range res.Buckets {
		row = append(row, fmt.Sprintf("%d (%.0f%%)", b.Boilerplate, 100*b.BoilerplatePairs))
	}
	rows = append(rows, row)
	for ri, r := range relations {
		for ti := range tools {
			label := ""
			if ti == 0 {
				label = "best F1, " + r.Name
			}
			row := []string{label, res.Buckets[0].Tools[ti].Tool}
			for _, b := range res.Buckets {
				row = append(row, f1Cell(b.Tools[ti].F1[ri], b.Tools[ti].Tool))
			}
			rows = append(rows, row)
		}
		for ti := range tools {
			label := ""
			if ti == 0 {
				label = "  the same, without the boilerplate queries"
			}
			row := []string{label, res.Buckets[0].Tools[ti].Tool}
			for _, b := range res.Buckets {
				if b.NoBoilerplateF1 == nil {
					row = append(row, "(same)")
					continue
				}
				row = append(row, f1Cell(b.NoBoilerplateF1[ti][ri], b.Tools[ti].Tool))
			}
			rows = append(rows, row)
		}
	}
	for ti := range tools {
		label := ""
		if ti == 0 {
			label = "first answer has max true containment"
		}
		row := []string{label, res.Buckets[0].Tools[ti].Tool}
		for _, b := range res.Buckets {
			row = append(row, fmt.Sprintf("%.3f", b.Tools[ti].FirstRight))
		}
		rows = append(rows, row)
	}
	for ti := range tools {
		label := ""
		if ti == 0 {
			label = "queries answered with nothing"
		}
		row := []string{label, res.Buckets[0].Tools[ti].Tool}
		for _, b := range res.Buckets {
			t := b.Tools[ti]
			s := fmt.Sprintf("%d of %d", t.Nothing, b.Queries)
			if t.Unhashed > 0 {
				s += fmt.Sprintf(" (%d not hashed)", t.Unhashed)
			}
			row = append(row, s)
		}
		rows = append(rows, row)
	}
	row = []string{"queries sif finds too small to judge", "sif"}
	for _, b := range res.Buckets {
		row = append(row, fmt.Sprintf("%d of %d", b.Tools[0].TooFew, b.Queries))
	}
	rows = append(rows, row)
	fmt.Print(table(rows))
	var parts []string
	for _, k := range []string{"corpus", "queries", "truth", "sifd_ready", "fleet_published", "sif", "ssdeep", "tlsh"} {
		if v, ok := res.Seconds[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f s", k, v))
		}
	}
	fmt.Printf("time: %v\n", parts)
	fmt.Printf("sif: index %.1f MB on disk once ready, %.1f MB after a clean stop (%.2f bytes per indexed byte)\n",
		mb(res.Sif.IndexBytesReady), mb(res.Sif.IndexBytes), float64(res.Sif.IndexBytes)/float64(max(1, res.IndexedBytes)))
	for _, name := range []string{"sif", "sif --fast", "sif fleet", simiToolName} {
		if l, ok := res.Sif.Latency[name]; ok {
			fmt.Printf("%s: query latency p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d queries\n", name, l.P50, l.P99, l.Max, res.Queries)
		}
	}
	printAgreements(res.Fleet)
}

// f1Cell renders a best F1 with the score threshold that reaches it (TLSH's
// and SimiHash's distances shown as they are, not negated).
func f1Cell(f f1Result, tool string) string {
	thr := f.Threshold
	if tool == "tlsh" || tool == simiToolName {
		thr = -thr
	}
	return fmt.Sprintf("%.3f @%s", f.F1, strconv.FormatFloat(thr, 'f', -1, 64))
}
