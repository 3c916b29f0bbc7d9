// Command sifbench measures sif: indexing a corpus with the real sifd, query
// latency through the real sifctl, and Manber's edit experiment (§5) for
// each scheme and density, with each index's size. Run it from the repository root:
//
//	go run ./cmd/sifbench corpus  [--src DIR | --modcache MODULES] [--runs 3] [--baseline SIFD] [--cpuprofile FILE] [--memprofile FILE]
//	go run ./cmd/sifbench latency [--src DIR] [--n 50]
//	go run ./cmd/sifbench edits   [--src DIR] [--n 50]
//
// The default corpus is $(go env GOROOT)/src; --modcache indexes instead
// every version of the named modules found in the Go module cache (a tree
// of releases, most of whose files are copies of another). corpus prints,
// in one run with a warm page cache: sha256sum of every file in as many
// processes as cores (the floor time to ready is weighed against, timed
// right before each run of sifd with 2 workers), ssdeep -r, sifd from start to ready on a fresh index with 2
// workers and with 1 (--runs each), the CPU sifd spent for it, the
// sketcher alone over every file in process, the floor (walking, reading
// and SHA-256 of every file and the sketch of each distinct content, in
// process, with no index: the work no first scan can skip) with 1 and 2
// workers, the index's size after a clean shutdown and its peak from
// sifd's start through the first scan and the compaction after it (polled
// every 15 ms; file sizes and disk blocks allocated), and a restart. sifd
// is timed to ready through one wait request, as sifctl wait asks, not by
// polling its status. With
// --cpuprofile or --memprofile, one more untimed run of sifd with --pprof
// gives its CPU profile over the scan and its heap profile once ready;
// --baseline SIFD[,SIFD...] times other sifd binaries in turn with this
// one, run for run, to weigh a change under the same load.
// Three more benchmarks run
// sifd on trees they write themselves:
//
//	go run ./cmd/sifbench freshness [--n 100] [--size 1MB] [--settle 500ms]
//	go run ./cmd/sifbench restart   [--files 100000] [--cpuprofile FILE] [--memprofile FILE]
//	go run ./cmd/sifbench churn     [--files 20000] [--seconds 20] [--settle 500ms]
//	go run ./cmd/sifbench load      [--size 1GiB] [--clients 100] [--think 100ms] [--dir DIR] [--profile DIR] [--during first-scan|reconcile|compaction]
//	go run ./cmd/sifbench million   [--files 1000000] [--dir DIR] [--seed N] [--n 1000] [--profile DIR]
//
// freshness rewrites a file n times and times from the end of the write to
// the new version being found by a similar query, polled through the Go
// client and through sifctl. restart times sifd to ready on an unchanged
// tree of small files, and checks that nothing is read again. churn edits
// a tree at doubling rates and reports how long sifd takes to catch up
// after each, with its CPU and memory. load writes a tree of at least
// --size (Go's sources and generated text, binary data and near-copies;
// kept in --dir and reused when given) and times sifd's first scan of it
// alone and while --clients clients query it, with their latencies and
// errors, each kind of request's cost alone on the ready daemon, and the
// CPU the requests take (--profile DIR also takes the loaded daemon's
// profiles through sifd's --pprof); with --during reconcile it times
// instead a restart on an index of the tree after every file's mtime
// changed (the reconcile reads each again), with --during compaction the
// compaction after the first scan, from ready to its end. million
// writes a synthetic file server of --files files (a million, about 4 GB, by default; kept in
// --dir and reused when given, as writing it is slow) and reports sifd's
// first scan (time to ready, peak RSS), the index's size (and its peak on
// disk during the scan and the compaction after it), similar queries'
// latencies (right after ready, while sifd compacts the index it wrote,
// and again once it is done), a restart, and sifctl groups and dupes (their time and
// sifd's peak RSS over them; --profile DIR keeps sifd's heap profiles, and
// its CPU profile, execution trace, block and mutex profiles over the
// queries right after ready), against issues 9's and 25's goals.
//
// fleet builds a simulated fleet in this process (--hosts hosts, --files
// files in all, a share of them copies and edited versions of other
// hosts' files; see fleet_plan.go), each host an index with a fleet
// publisher, and one PostgreSQL server of its own (initdb and postgres
// must be installed, as for the fleet tests):
//
//	go run ./cmd/sifbench fleet [--hosts 20] [--files 1000000] [--outage 60s] [--churn 5] [--batch N] [--multinode] [--cpuprofile FILE] [--pg-stats FILE]
//
// It reports the local first scan's index writes (files/s), publishing
// every host at once from an empty database until every journal is empty
// (files/s, and against the local writes), the database's bytes per file
// beside the local indexes', similar --fleet's latencies, and the time to
// converge after the database is stopped for --outage while files change,
// with fleet check of every host after publishing and after the outage,
// against issue 22's goals. --multinode runs it all on three servers
// instead, set up by packaging/fleet/partitioned-postings.sql (psql must
// be installed beside postgres): a coordinator holding sif's tables, with
// sif_postings hash-partitioned over two shard servers through
// postgres_fdw; the database's size is then the tables of all three, the
// fleet queries group the postings by key as sifd does on such a
// database, and the outage stops all three. --cpuprofile takes this
// process's CPU profile over publishing, --pg-stats the database's time
// per statement (one server only).
//
// Two more judge how right sif's answers are, on versions of real
// packages (kept in --dir and reused): Go modules from the Go module proxy
// (sets tuning and heldout), npm packages from the npm registry (js-tuning
// and js-heldout) and the documentation of Debian packages, bookworm's
// against trixie's (docs); sifbench accuracy --help lists them:
//
//	go run ./cmd/sifbench accuracy [--set heldout|tuning|js-tuning|js-heldout|docs] [--dir DIR] [--per-bucket 300] [--seed N] [--threshold 10] [--peers=false] [--fleet] [--simihash [--key-tolerance 2] [--sum-tolerance 2]]
//	go run ./cmd/sifbench manber   [--set heldout|tuning|js-tuning|js-heldout|docs] [--dir DIR] [--per-bucket 100] [--seed N] [--threshold 0]
//
// accuracy indexes the set's older versions with the real sifd, queries it
// with files of 256 B to 1 MB from the newer versions and with indexed
// files it modifies, and scores sif, ssdeep and TLSH against the truth
// computed by brute force over 32-byte windows: best F1 per relation and
// size, and how often the first answer is a file of maximal containment;
// with sif's index size on disk and its query latency (p50, p99). With
// --fleet, sifd also publishes the tree to a fleet index of its own
// (initdb and postgres installed, as for fleet), which is asked every
// query too: its answers are scored beside sifd's ("sif fleet"), and
// compared pair by pair with sifd's estimates (--fast) and checked answers
// at containment 50 and 80 %: the Jaccard index of the pairs each lists,
// and by how much their containments differ. With --simihash, sifd keeps
// SimiHash keys and every query is asked by SimiHash too ("sif
// simihash"), scored on its sum-table distance in percent of the query's
// size, with the default tolerances or those given.
// manber edits indexed files by random 50-byte substitutions (20, 50 and
// 80 % of their bytes) and counts how often the original comes first and
// is answered at all. The tuning set is for choosing parameters, the
// held-out set (other projects) for reporting. Figures are printed as a
// table and, with --json, as one JSON object.
//
// simihash reproduces the experiments of the SimiHash paper (Sadowski and
// Levin, §5) in process, on sum tables and keys computed by package
// index/fingerprint, with tolerances proportional to the file size: the
// uniform against the skew key (sum-table hits per key hit) on successive
// small edits of one 4 KB file and on distinct files of --src cut to 4 KB,
// the extension-aware key on every file of --src, 200 random ASCII files
// with and without large constant headers, and the time of all against all
// on 500 to 8,000 very similar files, by sorted keys and by manber's groups
// (an index of the set's own, in process):
//
//	go run ./cmd/sifbench simihash [--src DIR] [--seed N]
//
// RESULTS.md, beside this file, holds the current figures, each with the
// command that measured it; index/fingerprint/SCHEMES.md those of accuracy
// and manber.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "sifbench: %v\n", err)
		os.Exit(2)
	}
}

type common struct {
	src     string
	n       int
	json    bool
	keep    bool
	workDir string
	foreign string
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: sifbench corpus|latency|edits|freshness|restart|churn|load|million|fleet|accuracy|manber|simihash [flags]; see the package doc")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	var c common
	fs.StringVar(&c.src, "src", filepath.Join(runtime.GOROOT(), "src"), "corpus directory (copied first)")
	n := 50
	switch args[0] {
	case "freshness":
		n = 100
	case "million", "fleet":
		n = 1000
	}
	fs.IntVar(&c.n, "n", n, "number of query files (million, fleet: default 1000); freshness: edits per client")
	fs.BoolVar(&c.json, "json", false, "print JSON")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (accuracy: with queries.json, each query's truth and first answers)")
	fs.StringVar(&c.foreign, "foreign", filepath.Join(runtime.GOROOT(), "test"), "edits: a tree that is not indexed, whose files are queried to count stray matches (\"\" to skip)")
	var schemes string
	var lf liveFlags
	lf.register(fs)
	var lo loadFlags
	fs.IntVar(&lo.clients, "clients", 100, "load: concurrent clients, each with its own connection")
	fs.StringVar(&lo.dir, "dir", "", "load, million: directory to keep the tree in, or to reuse it from (default: a temporary one); accuracy, manber: directory of the module corpus (default: sifbench-accuracy in the user cache directory)")
	fs.StringVar(&lo.profile, "profile", "", "load: take CPU, block, mutex, heap and goroutine profiles of the loaded sifd (run with --pprof) into this directory; million: sifd's heap profiles once ready and during groups, its CPU, trace, block and mutex profiles over the queries right after ready")
	fs.StringVar(&lo.during, "during", "first-scan", "load: the phase of sifd timed and loaded: first-scan (on a fresh index), reconcile (a restart after every file's mtime changed) or compaction (after the first scan, from ready to its end)")
	fs.DurationVar(&lo.think, "think", 100*time.Millisecond, "load: mean pause of each client between two requests (uniform from 0 to twice it)")
	fs.StringVar(&schemes, "schemes", "", "edits: comma-separated scheme specs such as manber:bits=8,chunks:avg=256 (default: a built-in list)")
	var ff fleetFlags
	fs.IntVar(&ff.hosts, "hosts", 20, "fleet: simulated hosts")
	fs.DurationVar(&ff.outage, "outage", 60*time.Second, "fleet: how long the database is down while files change (0: no outage)")
	fs.Float64Var(&ff.churn, "churn", 5, "fleet: files changed per second per host during the outage")
	fs.IntVar(&ff.batch, "batch", 0, "fleet: files per publishing transaction (default: the publisher's)")
	fs.BoolVar(&ff.multinode, "multinode", false, "fleet: three PostgreSQL servers instead of one, sif_postings hash-partitioned over two shards through postgres_fdw (packaging/fleet/partitioned-postings.sql)")
	fs.StringVar(&ff.pgStats, "pg-stats", "", "fleet: load pg_stat_statements and auto_explain into the database; write its statements' times over publishing to this file, those after publishing to FILE.after, and the server's log, with the plans of statements of 500 ms or more, to FILE.log")
	var af accFlags
	var cf corpusFlags
	fs.IntVar(&cf.runs, "runs", 3, "corpus: timed scans of a fresh index with each number of workers")
	fs.StringVar(&cf.modcache, "modcache", "", "corpus: index every version found in the Go module cache of these comma-separated modules instead of --src, e.g. golang.org/x/tools,golang.org/x/net,golang.org/x/sys,golang.org/x/crypto")
	fs.StringVar(&cf.cpuProfile, "cpuprofile", "", "corpus: run sifd once more with --pprof and write its CPU profile over a fresh scan to this file; restart: the same over one more restart; fleet: this process's CPU profile over publishing")
	fs.StringVar(&cf.memProfile, "memprofile", "", "corpus: run sifd once more with --pprof and write its heap profile, taken once the fresh scan is done, to this file; restart: the same once one more restart is ready")
	var baselines string
	fs.StringVar(&baselines, "baseline", "", "corpus: other sifd binaries (comma-separated; e.g. one built from main) to time in turn with this tree's, run for run, and report beside it")
	fs.StringVar(&af.set, "set", "heldout", "accuracy, manber: the set of packages, one of "+strings.Join(setNames(), ", ")+" (listed below)")
	fs.IntVar(&af.perBucket, "per-bucket", 0, "accuracy, manber: queries per size bucket (default 300 for accuracy, 100 for manber)")
	fs.Uint64Var(&af.seed, "seed", 1994, "accuracy, manber: seed of the query sampling and edits; million: seed of the tree and the queries; simihash: seed of the sets")
	fs.Float64Var(&af.threshold, "threshold", 10, "accuracy, manber: sif's threshold in percent (manber: default 0, every candidate)")
	fs.BoolVar(&af.peers, "peers", true, "accuracy: also run ssdeep and TLSH")
	fs.StringVar(&af.sifdConfig, "sifd-config", "", "accuracy, manber: configuration file sifd runs with, e.g. to try another [scheme] (default: none)")
	fs.BoolVar(&af.fleet, "fleet", false, "accuracy: sifd also publishes the indexed tree to a fleet index (a PostgreSQL server of sifbench's own; with --sifd-config, its file gets a [fleet] table), and the fleet is asked every query too (\"sif fleet\"), scored and compared with sifd's answers")
	fs.BoolVar(&af.simihash, "simihash", false, "accuracy: sifd also keeps SimiHash keys (sifd --simihash), and every query is asked by SimiHash too (\"sif simihash\", scored on its sum-table distance in percent of the query's size)")
	var keyTol, sumTol float64
	fs.Float64Var(&keyTol, "key-tolerance", 0, "accuracy --simihash: SimiFind's key tolerance in percent of the query's size (default: fingerprint.DefaultTolerances)")
	fs.Float64Var(&sumTol, "sum-tolerance", 0, "accuracy --simihash: SimiFind's sum-table tolerance in percent of the query's size (default: fingerprint.DefaultTolerances)")
	if args[0] == "accuracy" || args[0] == "manber" {
		fs.Usage = func() {
			fmt.Fprintf(fs.Output(), "Usage of sifbench %s:\n", args[0])
			fs.PrintDefaults()
			fmt.Fprintf(fs.Output(), "\nSets (--set), each fetched once into --dir and reused:\n%s", describeSets())
		}
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if args[0] == "accuracy" || args[0] == "manber" {
		if _, err := lookupSet(af.set); err != nil {
			return fmt.Errorf("--set: %w", err)
		}
		af.dir = lo.dir
		if af.dir == "" {
			cache, err := os.UserCacheDir()
			if err != nil {
				return fmt.Errorf("no --dir and no user cache directory: %w", err)
			}
			af.dir = filepath.Join(cache, "sifbench-accuracy")
		}
		if args[0] == "manber" {
			set := false
			fs.Visit(func(f *flag.Flag) { set = set || f.Name == "threshold" })
			if !set {
				af.threshold = 0
			}
		}
		if af.threshold < 0 || af.threshold > 100 {
			return fmt.Errorf("--threshold %g: want a percentage from 0 to 100", af.threshold)
		}
		if af.perBucket == 0 {
			af.perBucket = map[string]int{"accuracy": 300, "manber": 100}[args[0]]
		}
		if af.perBucket < 0 {
			return fmt.Errorf("--per-bucket %d: must be positive", af.perBucket)
		}
		af.simiTol = fingerprint.Tolerances{Key: keyTol / 100, Sum: sumTol / 100}
		if _, err := af.simiTol.Normalize(); err != nil {
			return fmt.Errorf("--key-tolerance, --sum-tolerance: %w", err)
		}
		if !af.simihash && (keyTol != 0 || sumTol != 0) {
			return errors.New("--key-tolerance and --sum-tolerance apply only with --simihash")
		}
	}
	if baselines != "" {
		cf.baselines = strings.Split(baselines, ",")
	}
	if args[0] == "corpus" && cf.runs < 1 {
		return fmt.Errorf("--runs %d: want at least 1", cf.runs)
	}
	if args[0] == "load" {
		lf.size = "1GiB"
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "size" {
				lf.size = f.Value.String()
			}
		})
	}
	dir, err := os.MkdirTemp("", "sifbench-")
	if err != nil {
		return err
	}
	c.workDir = dir
	if !c.keep {
		defer os.RemoveAll(dir)
	}
	var out any
	switch args[0] {
	case "corpus":
		out, err = benchCorpus(ctx, &c, &cf)
	case "latency":
		out, err = benchLatency(ctx, &c)
	case "edits":
		out, err = benchEdits(ctx, &c, schemes)
	case "freshness":
		out, err = benchFreshness(ctx, &c, &lf)
	case "restart":
		out, err = benchRestart(ctx, &c, &lf, &cf)
	case "churn":
		out, err = benchChurn(ctx, &c, &lf)
	case "load":
		out, err = benchLoad(ctx, &c, &lf, &lo)
	case "million":
		out, err = benchMillion(ctx, &c, &lf, &lo, af.seed)
	case "fleet":
		ff.files, ff.seed, ff.queries, ff.cpuProfile = lf.files, af.seed, c.n, cf.cpuProfile
		if ff.files <= 0 {
			ff.files = 1_000_000
		}
		out, err = benchFleet(ctx, &c, &ff)
	case "basis":
		out, err = benchBasis(ctx, &c)
	case "accuracy":
		out, err = benchAccuracy(ctx, &c, &af)
	case "manber":
		out, err = benchManber(ctx, &c, &af)
	case "simihash":
		out, err = benchSimiHash(ctx, &c, af.seed)
	default:
		return fmt.Errorf("unknown benchmark %q: want corpus, latency, edits, freshness, restart, churn, load, million, fleet, basis, accuracy, manber or simihash", args[0])
	}
	if err != nil {
		return err
	}
	if c.json {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Println(string(b))
	}
	return nil
}

// buildBinaries builds sifd and sifctl into dir.
func buildBinaries(dir string) (sifd, sifctl string, err error) {
	sifd, sifctl = filepath.Join(dir, "sifd"), filepath.Join(dir, "sifctl")
	for bin, pkg := range map[string]string{sifd: "./cmd/sifd", sifctl: "./cmd/sifctl"} {
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return "", "", fmt.Errorf("building %s (run sifbench from the repository root): %w", pkg, err)
		}
	}
	return sifd, sifctl, nil
}

// copyTree copies the regular files of src into dst, returning their count
// and total size. Symlinks and special files are left out.
func copyTree(src, dst string) (files int, bytes int64, err error) {
	err = filepath.WalkDir(src, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if de.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !de.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		n, err := io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		files++
		bytes += n
		return err
	})
	return files, bytes, err
}

// warm reads every file under dir so the page cache holds them.
func warm(dir string) error {
	buf := make([]byte, 1<<20)
	return filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			if _, err := f.Read(buf); err != nil {
				return nil
			}
		}
	})
}

// dirSize sums the sizes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			if fi, err := de.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// regularFiles lists the regular files under dir whose size is in [lo, hi].
func regularFiles(dir string, lo, hi int64) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			if fi, err := de.Info(); err == nil && fi.Size() >= lo && fi.Size() <= hi {
				out = append(out, p)
			}
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(p * float64(len(s)-1))
	return s[i]
}

func median(xs []float64) float64 { return percentile(xs, 0.5) }

func mb(n int64) float64 { return float64(n) / 1e6 }

func table(rows [][]string) string {
	w := make([]int, 0)
	for _, r := range rows {
		for i, c := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			fmt.Fprintf(&b, "%-*s", w[i], c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }
