package main

// The fleet benchmark: a simulated fleet of hosts, each an index in this
// process with a fleet.Publisher, publishing into one PostgreSQL server
// this process starts (package pgserver), or into three with --multinode
// (fleet_multinode.go), against issue 22's goals.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/sif-dev/sif/daemon/fleet"
	"github.com/sif-dev/sif/daemon/fleet/pgserver"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// The goals of issue 22, §5.
const (
	fleetGoalFilesPerSec = 5000
	fleetGoalQueryP99Ms  = 100
	fleetGoalConvergeSec = 30
)

// fleetFlags are the fleet benchmark's flags.
type fleetFlags struct {
	hosts      int
	files      int
	outage     time.Duration
	churn      float64 // changes per second per host during the outage
	batch      int     // PublisherConfig.BatchFiles; 0 means the default
	seed       uint64
	queries    int
	cpuProfile string // of this process over publishing
	pgStats    string // file for the statements' times over publishing
	multinode  bool   // the multi-node database rather than one server
}

// fleetResult is the fleet benchmark's outcome.
type fleetResult struct {
	Hosts    int      `json:"hosts"`
	Seed     uint64   `json:"seed"`
	Mix      fleetMix `json:"mix"`
	Cores    int      `json:"cores"`
	Database string   `json:"database"` // what it ran on, with its settings
	Batch    int      `json:"batch_files"`

	// Sketching every distinct content from its bytes, before anything
	// is timed.
	SketchSecs  float64 `json:"sketch_seconds"`
	SketchBytes int64   `json:"sketch_bytes"`

	// The local first scan's index part: every host's files written into
	// its own index (PutFile, deferred postings, one bulk load per host),
	// the hosts GOMAXPROCS at a time, flushed.
	LocalSecs        float64 `json:"local_write_seconds"`
	LocalFilesPerSec float64 `json:"local_files_per_second"`
	LocalDiskBytes   int64   `json:"local_index_disk_bytes"` // Stats().DiskBytes, summed
	LocalContents    uint64  `json:"local_contents"`         // summed over hosts: a content on two hosts counts twice

	// Publishing, every host's publisher at once, from an empty database
	// until every host's journal is empty. RowsInSecs is when the last
	// host finished its first comparison (all its rows are in); the notes
	// its first scan left are published again after it.
	PublishSecs        float64 `json:"publish_seconds"`
	RowsInSecs         float64 `json:"rows_in_seconds"`
	PublishFilesPerSec float64 `json:"publish_files_per_second"`
	PublishVsLocal     float64 `json:"publish_vs_local"`        // publishing's files/s over the local write's
	PublishCheck       string  `json:"publish_check,omitempty"` // fleet.Check of every host after publishing, without an outage

	// The database once published.
	Tables          map[string]int64 `json:"table_bytes"` // pg_total_relation_size of each sif_ table
	DBBytes         int64            `json:"database_bytes"`
	DBBytesPerFile  float64          `json:"database_bytes_per_file"`
	LocalBytesPerFl float64          `json:"local_index_bytes_per_file"`
	DBRows          map[string]int64 `json:"table_rows"`

	// similar --fleet: latencies of fleet queries for files of the fleet,
	// in the grouped form when the postings are partitioned, as sifd
	// picks it (fleet.Partitioned).
	Query      latencyStats `json:"similar_fleet"`
	QueryGroup bool         `json:"similar_fleet_grouped,omitempty"`
	QueryNote  string       `json:"similar_fleet_note,omitempty"`
	QueryMatch float64      `json:"similar_fleet_mean_matches,omitempty"`

	// The outage: the database stopped, files changed on every host for
	// OutageSecs, the database started again; ReconnectSecs from its
	// return until every publisher has reached it again (a publisher
	// backs off up to 30 s between tries), ConvergeSecs until every
	// journal is empty, CheckSecs more for fleet.Check of every host.
	OutageSecs    float64 `json:"outage_seconds"`
	OutageChanges int64   `json:"outage_changes"`
	ReconnectSecs float64 `json:"reconnect_seconds"`
	ConvergeSecs  float64 `json:"converge_seconds"`
	CheckSecs     float64 `json:"check_seconds"`
	OutageCheck   string  `json:"outage_check"`

	Goals      []goal   `json:"goals"`
	Unexpected []string `json:"unexpected,omitempty"`
}

// fleetDatabase is the database a fleet publishes into, with what the
// outage needs. startFleetDatabase makes the one-server setup; the
// multi-node setup is another implementation.
type fleetDatabase interface {
	// URL is the database's URL for the fleet.
	URL() string
	// Nodes are the URLs of its every server, the one of URL first, for
	// the sizes of the tables each holds.
	Nodes() []string
	// Stop stops it (every node), Start starts it again.
	Stop() error
	Start() error
	Close() error
	// Describe says what it is, with its settings.
	Describe() string
}

// fleetSettings are the PostgreSQL settings of the benchmark's server,
// over pgserver's: durable as a production server (fsync, full page
// writes and synchronous commit on, which pgserver turns off for tests),
// with room for a bulk load: 512 MB of shared buffers, WAL and checkpoints
// far apart enough that a load is not checkpointed every few seconds, and
// connections for 20 hosts of 4 each.
var fleetSettings = map[string]string{
	"fsync":                        "on",
	"full_page_writes":             "on",
	"synchronous_commit":           "on",
	"shared_buffers":               "512MB",
	"max_wal_size":                 "'8GB'",
	"min_wal_size":                 "'1GB'",
	"checkpoint_timeout":           "'30min'",
	"checkpoint_completion_target": "0.9",
	"wal_buffers":                  "'16MB'",
	"work_mem":                     "'16MB'",
	"maintenance_work_mem":         "'256MB'",
	"max_connections":              "200",
}

// onePG is the one-server setup: a PostgreSQL server of this process's own,
// in a temporary directory.
type onePG struct{ srv *pgserver.Server }

// startFleetDatabase starts the database of the benchmark. With
// statStatements, it loads pg_stat_statements (a module of PostgreSQL's
// own contrib, in Debian's server package) to time the statements.
func startFleetDatabase(statStatements bool) (fleetDatabase, error) {
	settings := maps.Clone(fleetSettings)
	if statStatements {
		settings["shared_preload_libraries"] = "'pg_stat_statements,auto_explain'"
		settings["pg_stat_statements.track"] = "all"
		settings["auto_explain.log_min_duration"] = "'500ms'"
	}
	srv, err := pgserver.Start(&pgserver.Options{MaxConnections: 200, Settings: settings})
	if err != nil {
		return nil, err
	}
	if statStatements {
		if err := srv.Exec("postgres", "CREATE EXTENSION pg_stat_statements"); err != nil {
			srv.Close()
			return nil, err
		}
	}
	return &onePG{srv: srv}, nil
}

func (o *onePG) URL() string     { return o.srv.URL("postgres") }
func (o *onePG) Nodes() []string { return []string{o.URL()} }
func (o *onePG) Stop() error     { return o.srv.Stop() }
func (o *onePG) Start() error    { return o.srv.Start() }
func (o *onePG) Close() error    { return o.srv.Close() }
func (o *onePG) Log() string     { return o.srv.Log() }
func (o *onePG) Describe() string {
	return "one PostgreSQL " + filepath.Base(filepath.Dir(o.srv.Bin())) + " server on a Unix socket: " + settingsText(fleetSettings)
}

// settingsText lists settings as name=value, by name.
func settingsText(settings map[string]string) string {
	names := make([]string, 0, len(settings))
	for k, v := range settings {
		names = append(names, k+"="+strings.Trim(v, "'"))
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// fleetHost is one simulated host: its index and publisher, and its files
// as they are now.
type fleetHost struct {
	n    int
	name string
	root string
	ix   *index.Index
	pool *pgxpool.Pool
	pub  *fleet.Publisher

	mu    sync.Mutex
	paths []string // its files now, for the churn
	made  int      // files the churn added
}

// benchFleet runs the fleet benchmark.
func benchFleet(ctx context.Context, c *common, ff *fleetFlags) (*fleetResult, error) {
	if ff.hosts < 2 || ff.files < ff.hosts {
		return nil, fmt.Errorf("--hosts %d --files %d: want two hosts or more, and a file per host or more", ff.hosts, ff.files)
	}
	if ff.multinode && ff.pgStats != "" {
		return nil, errors.New("--pg-stats times the statements of one server: not with --multinode")
	}
	params, err := fingerprint.DefaultParams().Normalize()
	if err != nil {
		return nil, err
	}
	res := &fleetResult{Hosts: ff.hosts, Seed: ff.seed, Cores: runtime.NumCPU(), Batch: ff.batch}
	if res.Batch == 0 {
		res.Batch = fleet.DefaultBatchFiles
	}
	plan := planFleet(ff.hosts, ff.files, ff.seed)
	res.Mix = plan.mix()
	progress("fleet: %d files on %d hosts: %d unique, %d copies and %d edited versions of other hosts' files; %d distinct contents",
		len(plan.Files), ff.hosts, res.Mix.Unique, res.Mix.Copies, res.Mix.Edits, res.Mix.Contents)

	start := time.Now()
	sketches, sketched, err := plan.sketchAll(ctx, params)
	if err != nil {
		return nil, err
	}
	res.SketchSecs, res.SketchBytes = since(start), sketched
	progress("fleet: sketched %d contents (%.0f MB) in %.1f s", len(sketches), mb(sketched), res.SketchSecs)

	hosts, err := fleetLocal(ctx, c, plan, sketches, params, res)
	defer func() {
		for _, h := range hosts {
			if h.pool != nil {
				h.pool.Close()
			}
			h.ix.Close()
		}
	}()
	if err != nil {
		return nil, err
	}

	var db fleetDatabase
	if ff.multinode {
		db, err = startMultinode()
	} else {
		db, err = startFleetDatabase(ff.pgStats != "")
	}
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if ff.pgStats != "" {
		// The statements since publishing (checks, the outage) and the
		// server's log, with the plans of statements of 500 ms or more.
		defer func() {
			if err := writeStatements(context.WithoutCancel(ctx), hosts[0].pool, ff.pgStats+".after"); err != nil {
				progress("fleet: %v", err)
			}
			if l, ok := db.(interface{ Log() string }); ok {
				os.WriteFile(ff.pgStats+".log", []byte(l.Log()), 0o644)
			}
		}()
	}
	res.Database = db.Describe()
	if err := fleetPublish(ctx, db, hosts, ff, res); err != nil {
		return nil, err
	}
	if err := fleetSizes(ctx, db, res); err != nil {
		return nil, err
	}
	if err := fleetQueries(ctx, hosts, plan, sketches, ff, res); err != nil {
		return nil, err
	}
	if err := fleetOutage(ctx, db, hosts, plan, sketches, params, ff, res); err != nil {
		return nil, err
	}
	fleetGoals(res)
	if !c.json {
		printFleet(res)
	}
	return res, nil
}

// progress prints a line on standard error.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// fleetLocal makes every host's index and writes its files into it, as
// the index part of a first scan does, timing that.
func fleetLocal(ctx context.Context, c *common, plan *fleetPlan, sketches []*fingerprint.Sketch, params fingerprint.Params, res *fleetResult) ([]*fleetHost, error) {
	byHost := plan.hostFiles()
	hosts := make([]*fleetHost, 0, plan.Hosts)
	for h := range plan.Hosts {
		ix, err := index.Open(filepath.Join(c.workDir, "fleet", plan.hostName(h)), &index.Options{Params: params, Journal: true})
		if err != nil {
			return hosts, err
		}
		hosts = append(hosts, &fleetHost{n: h, name: plan.hostName(h), root: plan.root(h), ix: ix})
	}
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	start := time.Now()
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range runtime.GOMAXPROCS(0) {
		g.Go(func() error {
			for gctx.Err() == nil {
				h := int(next.Add(1) - 1)
				if h >= len(hosts) {
					return nil
				}
				host := hosts[h]
				bulk, err := host.ix.NewBulk()
				if err != nil {
					return err
				}
				for _, i := range byHost[h] {
					sk := sketches[plan.Files[i].Content]
					path := plan.path(i)
					_, err := host.ix.PutFile(index.FileWrite{
						Meta:   index.FileMeta{Path: path, Size: sk.Size, MtimeNs: mtime + int64(i), Ino: uint64(i + 1), Mode: 0o644},
						Strong: sk.Strong, Sketch: sk, Deferred: true, Bulk: bulk,
					})
					if err != nil {
						return fmt.Errorf("%s: %s: %w", host.name, path, err)
					}
					host.paths = append(host.paths, path)
				}
				if bulk != nil {
					bulk.End()
				}
				if err := host.ix.Flush(); err != nil {
					return err
				}
			}
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return hosts, err
	}
	res.LocalSecs = since(start)
	res.LocalFilesPerSec = float64(len(plan.Files)) / res.LocalSecs
	for _, h := range hosts {
		st, err := h.ix.Stats()
		if err != nil {
			return hosts, err
		}
		res.LocalDiskBytes += int64(st.DiskBytes)
		res.LocalContents += st.Contents
	}
	progress("fleet: local indexes written in %.1f s (%.0f files/s), %.0f MB on disk", res.LocalSecs, res.LocalFilesPerSec, mb(res.LocalDiskBytes))
	return hosts, nil
}

// fleetPublish starts every host's publisher and times them from an empty
// database until every journal is empty, then checks every host.
func fleetPublish(ctx context.Context, db fleetDatabase, hosts []*fleetHost, ff *fleetFlags, res *fleetResult) error {
	for _, h := range hosts {
		pc, err := pgxpool.ParseConfig(db.URL())
		if err != nil {
			return err
		}
		pc.MaxConns, pc.MinConns = 4, 0 // as sifd's link
		pc.ConnConfig.RuntimeParams["application_name"] = "sifbench " + h.name
		if h.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
			return err
		}
		h.pub = fleet.NewPublisher(fleet.PublisherConfig{
			Host: h.name, Roots: []string{h.root}, Pool: h.pool, BatchFiles: ff.batch,
			Index: func() *index.Index { return h.ix }, Version: "sifbench",
		})
	}
	if ff.cpuProfile != "" {
		f, err := os.Create(ff.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	for _, h := range hosts {
		go h.pub.Run(ctx)
	}
	// A host is done when its rows are in (its first comparison wrote
	// the journal mark) and then its journal is empty: nothing changes
	// its files meanwhile, so a host done stays done. Polled four times a
	// second: reading the start of a journal whose notes were just
	// removed steps over their tombstones.
	rowsIn := make([]bool, len(hosts))
	done := make([]bool, len(hosts))
	for left := len(hosts); left > 0; {
		in := true
		for i, h := range hosts {
			if done[i] {
				continue
			}
			if !rowsIn[i] {
				m, err := h.ix.JournalMark()
				if err != nil {
					return err
				}
				rowsIn[i] = m != nil
			}
			if !rowsIn[i] {
				in = false
				continue
			}
			if n, _, err := h.ix.JournalLen(1); err != nil {
				return err
			} else if n == 0 {
				done[i] = true
				left--
			}
		}
		if in && res.RowsInSecs == 0 {
			res.RowsInSecs = since(start)
			progress("fleet: every host's rows in after %.1f s", res.RowsInSecs)
		}
		if left > 0 {
			if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
				return err
			}
		}
	}
	res.PublishSecs = since(start)
	if ff.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	res.PublishFilesPerSec = float64(res.Mix.Files) / res.PublishSecs
	res.PublishVsLocal = res.PublishFilesPerSec / res.LocalFilesPerSec
	progress("fleet: published in %.1f s (%.0f files/s, %.2f× the local write)", res.PublishSecs, res.PublishFilesPerSec, res.PublishVsLocal)
	if ff.pgStats != "" {
		if err := writeStatements(ctx, hosts[0].pool, ff.pgStats); err != nil {
			return err
		}
		if _, err := hosts[0].pool.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
			return err
		}
	}
	if ff.outage > 0 {
		return nil // checked once, after the outage
	}
	var err error
	res.PublishCheck, res.CheckSecs, err = fleetCheck(ctx, hosts, res)
	return err
}

// writeStatements writes to path the statements the database ran, most
// time first, from pg_stat_statements.
func writeStatements(ctx context.Context, pool *pgxpool.Pool, path string) error {
	rows, err := pool.Query(ctx, `SELECT calls, total_exec_time, rows, shared_blks_hit + shared_blks_read, wal_bytes,
			regexp_replace(query, '\s+', ' ', 'g')
		FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25`)
	if err != nil {
		return err
	}
	defer rows.Close()
	out := [][]string{{"calls", "total_ms", "mean_ms", "rows", "blocks", "wal_MB", "statement"}}
	for rows.Next() {
		var calls, n, blocks int64
		var total float64
		var wal pgtype.Numeric
		var q string
		if err := rows.Scan(&calls, &total, &n, &blocks, &wal, &q); err != nil {
			return err
		}
		w, _ := wal.Float64Value()
		out = append(out, []string{fmt.Sprint(calls), fmt.Sprintf("%.0f", total), fmt.Sprintf("%.2f", total/float64(max(calls, 1))),
			fmt.Sprint(n), fmt.Sprint(blocks), fmt.Sprintf("%.1f", w.Float64/1e6), q})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(table(out)), 0o644)
}

// fleetCheck runs fleet.Check for every host and says how it went: "OK"
// or what differs.
func fleetCheck(ctx context.Context, hosts []*fleetHost, res *fleetResult) (string, float64, error) {
	start := time.Now()
	var bad []string
	for _, h := range hosts {
		if st := h.pub.Status(); st.Pending != 0 || st.LastError != "" {
			bad = append(bad, fmt.Sprintf("%s: status pending %d, last error %q", h.name, st.Pending, st.LastError))
		}
		rep, err := fleet.Check(ctx, h.pool, h.name, h.ix, []string{h.root})
		if err != nil {
			return "", 0, fmt.Errorf("%s: fleet check: %w", h.name, err)
		}
		if !rep.OK {
			bad = append(bad, fmt.Sprintf("%s: %d files, %d rows, %d missing, %d extra, %d bad contents", h.name, rep.Files, rep.Rows, rep.Missing, rep.Extra, rep.BadContents))
		}
	}
	took := since(start)
	if len(bad) > 0 {
		res.Unexpected = append(res.Unexpected, bad...)
		return fmt.Sprintf("%d of %d hosts differ", len(bad), len(hosts)), took, nil
	}
	return fmt.Sprintf("OK, %d hosts", len(hosts)), took, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fleetSizes reads the size of each fleet table, with its indexes and
// TOAST, on every server of db, after a checkpoint. Only tables holding
// rows count (relkind r): on the multi-node setup the coordinator's
// sif_postings is partitioned, its partitions foreign tables, and its
// rows are in the shards' sif_postings_N.
func fleetSizes(ctx context.Context, db fleetDatabase, res *fleetResult) error {
	res.Tables, res.DBRows = map[string]int64{}, map[string]int64{}
	for _, url := range db.Nodes() {
		if err := nodeSizes(ctx, url, res); err != nil {
			return err
		}
	}
	res.DBBytesPerFile = float64(res.DBBytes) / float64(res.Mix.Files)
	res.LocalBytesPerFl = float64(res.LocalDiskBytes) / float64(res.Mix.Files)
	return nil
}

// nodeSizes adds the size and rows of each fleet table of the server at
// url to res.
func nodeSizes(ctx context.Context, url string, res *fleetResult) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, `SELECT relname, pg_total_relation_size(oid) FROM pg_class
		WHERE relkind = 'r' AND relname LIKE 'sif\_%' ORDER BY relname`)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			rows.Close()
			return err
		}
		if _, ok := res.Tables[name]; ok {
			rows.Close()
			return fmt.Errorf("fleet sizes: a table %s on two servers", name)
		}
		names = append(names, name)
		res.Tables[name] = n
		res.DBBytes += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, name := range names {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+name).Scan(&n); err != nil {
			return err
		}
		res.DBRows[name] = n
	}
	return nil
}

// fleetQuery asks the fleet database, through pool, for the files like the
// one of sketch sk on any host but asker, as sifd's similar --fleet does
// (its default threshold, max_df and silence), and returns the number of
// matches.
func fleetQuery(ctx context.Context, pool *pgxpool.Pool, sk *fingerprint.Sketch, params fingerprint.Params, asker string, grouped bool) (matches int, err error) {
	res, err := fleet.Similar(ctx, pool, fleet.Query{Sketch: sk, Params: params, ExcludeHost: asker, Silence: 10 * time.Minute, Grouped: grouped})
	if err != nil {
		return 0, err
	}
	return len(res.Matches), nil
}

// fleetQueries times --n fleet queries, one at a time, for files of the
// fleet drawn at random (copies and edited versions among them, so most
// have matches on other hosts), in the form sifd picks.
func fleetQueries(ctx context.Context, hosts []*fleetHost, plan *fleetPlan, sketches []*fingerprint.Sketch, ff *fleetFlags, res *fleetResult) error {
	grouped, err := fleet.Partitioned(ctx, hosts[0].pool)
	if err != nil {
		return err
	}
	res.QueryGroup = grouped
	r := rand.New(rand.NewPCG(plan.Seed, 0x7175))
	var ms []float64
	var matches int
	for q := range ff.queries {
		i := r.IntN(len(plan.Files))
		asker := hosts[(plan.Files[i].Host+1)%int32(len(hosts))]
		start := time.Now()
		n, err := fleetQuery(ctx, asker.pool, sketches[plan.Files[i].Content], asker.ix.Params(), asker.name, grouped)
		if err != nil {
			return fmt.Errorf("fleet query %d (%s): %w", q, plan.path(i), err)
		}
		ms = append(ms, since(start)*1000)
		matches += n
	}
	res.Query = summarize(ms)
	res.QueryMatch = float64(matches) / float64(max(1, len(ms)))
	return nil
}

// fleetOutage stops the database, changes files on every host for
// --outage, starts the database again and times until every journal is
// empty; then checks every host.
func fleetOutage(ctx context.Context, db fleetDatabase, hosts []*fleetHost, plan *fleetPlan, sketches []*fingerprint.Sketch, params fingerprint.Params, ff *fleetFlags, res *fleetResult) error {
	if ff.outage <= 0 {
		return nil
	}
	if err := db.Stop(); err != nil {
		return err
	}
	progress("fleet: database stopped; changing files on every host for %v", ff.outage)
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, ff.outage)
	defer cancel()
	var changes atomic.Int64
	g, gctx := errgroup.WithContext(cctx)
	for _, h := range hosts {
		g.Go(func() error { return h.churn(gctx, hosts, plan, sketches, params, ff.churn, &changes) })
	}
	err := g.Wait()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	res.OutageSecs, res.OutageChanges = since(start), changes.Load()
	if err := db.Start(); err != nil {
		return err
	}
	back := time.Now()
	progress("fleet: database back after %.1f s, %d changes made meanwhile", res.OutageSecs, res.OutageChanges)
	// A host is done when it has published since the database came
	// back and its journal is empty; nothing changes files now, so a host
	// done stays done.
	for i := 0; i < len(hosts); {
		st := hosts[i].pub.Status()
		if st.LastPublished.After(back) && st.LastError == "" {
			if res.ReconnectSecs == 0 && i == len(hosts)-1 {
				res.ReconnectSecs = since(back)
			}
			if st.Pending == 0 {
				i++
				continue
			}
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	res.ConvergeSecs = since(back)
	res.OutageCheck, res.CheckSecs, err = fleetCheck(ctx, hosts, res)
	progress("fleet: converged %.1f s after the database's return; check: %s (%.1f s)", res.ConvergeSecs, res.OutageCheck, res.CheckSecs)
	return err
}

// churn changes rate files a second on h until ctx is done: of every ten
// changes, six replace a file's content (half with a new text, half with
// a copy of another host's file), two add a file, two remove one.
func (h *fleetHost) churn(ctx context.Context, hosts []*fleetHost, plan *fleetPlan, sketches []*fingerprint.Sketch, params fingerprint.Params, rate float64, changes *atomic.Int64) error {
	if rate <= 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	r := rand.New(rand.NewPCG(plan.Seed, uint64(h.n)<<32|0x6368))
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	newSketch := func() (*fingerprint.Sketch, error) {
		if r.IntN(2) == 0 {
			return sketches[plan.Files[r.IntN(len(plan.Files))].Content], nil
		}
		return fingerprint.SketchReader(strings.NewReader(string(randomText(r, 200+r.IntN(8000)))), params)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		var err error
		h.mu.Lock()
		switch x := r.IntN(10); {
		case x < 2 && len(h.paths) > 1:
			i := r.IntN(len(h.paths))
			err = h.ix.Remove(h.paths[i])
			h.paths[i] = h.paths[len(h.paths)-1]
			h.paths = h.paths[:len(h.paths)-1]
		default:
			var path string
			if x < 4 {
				h.made++
				path = fmt.Sprintf("%s/new/c%d.txt", h.root, h.made)
				h.paths = append(h.paths, path)
			} else {
				path = h.paths[r.IntN(len(h.paths))]
			}
			var sk *fingerprint.Sketch
			if sk, err = newSketch(); err == nil {
				_, err = h.ix.Put(index.FileMeta{Path: path, Size: sk.Size, MtimeNs: time.Now().UnixNano(), Mode: 0o644}, sk)
			}
		}
		h.mu.Unlock()
		if err != nil {
			return fmt.Errorf("%s: churn: %w", h.name, err)
		}
		changes.Add(1)
	}
}

func fleetGoals(res *fleetResult) {
	res.Goals = append(res.Goals,
		goal{What: fmt.Sprintf("publishing at least %d files/s", fleetGoalFilesPerSec),
			Got: fmt.Sprintf("%.0f files/s", res.PublishFilesPerSec), Met: res.PublishFilesPerSec >= fleetGoalFilesPerSec},
		goal{What: "publishing keeps up with the local first scan's index writes",
			Got: fmt.Sprintf("%.2f× its files/s", res.PublishVsLocal), Met: res.PublishVsLocal >= 1})
	if res.Query.N > 0 {
		res.Goals = append(res.Goals, goal{What: fmt.Sprintf("similar --fleet p99 under %d ms", fleetGoalQueryP99Ms),
			Got: fmt.Sprintf("%.1f ms", res.Query.P99Ms), Met: res.Query.P99Ms < fleetGoalQueryP99Ms})
	}
	if res.OutageSecs > 0 {
		res.Goals = append(res.Goals,
			goal{What: fmt.Sprintf("converging within %d s of the database's return", fleetGoalConvergeSec),
				Got: fmt.Sprintf("%.1f s", res.ConvergeSecs), Met: res.ConvergeSecs <= fleetGoalConvergeSec},
			goal{What: "nothing lost (fleet check of every host after the outage)",
				Got: res.OutageCheck, Met: strings.HasPrefix(res.OutageCheck, "OK")})
	}
	if res.PublishCheck != "" {
		res.Goals = append(res.Goals, goal{What: "nothing lost (fleet check of every host after publishing)",
			Got: res.PublishCheck, Met: strings.HasPrefix(res.PublishCheck, "OK")})
	}
}

func printFleet(res *fleetResult) {
	m := res.Mix
	fmt.Printf("fleet: %d hosts, %d files (%d unique, %d copies and %d edited versions of other hosts' files), %d contents, %d of them on two hosts or more; %d cores\n",
		res.Hosts, m.Files, m.Unique, m.Copies, m.Edits, m.Contents, m.Shared, res.Cores)
	fmt.Printf("database: %s\n\n", res.Database)
	rows := [][]string{{"measure", "value"},
		{"sketching every content (untimed below)", fmt.Sprintf("%.1f s, %.0f MB", res.SketchSecs, mb(res.SketchBytes))},
		{"local first scan, index writes", fmt.Sprintf("%.1f s, %.0f files/s", res.LocalSecs, res.LocalFilesPerSec)},
		{"publishing, every host at once", fmt.Sprintf("%.1f s, %.0f files/s (rows in after %.1f s)", res.PublishSecs, res.PublishFilesPerSec, res.RowsInSecs)},
		{"publishing / local", fmt.Sprintf("%.2f×", res.PublishVsLocal)},
		{"database bytes", fmt.Sprintf("%.0f MB, %.0f B/file", mb(res.DBBytes), res.DBBytesPerFile)},
		{"local indexes' bytes", fmt.Sprintf("%.0f MB, %.0f B/file", mb(res.LocalDiskBytes), res.LocalBytesPerFl)},
	}
	names := make([]string, 0, len(res.Tables))
	for n := range res.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rows = append(rows, []string{"  " + n, fmt.Sprintf("%.1f MB, %d rows", mb(res.Tables[n]), res.DBRows[n])})
	}
	if res.Query.N > 0 {
		form := ""
		if res.QueryGroup {
			form = ", postings grouped by key"
		}
		rows = append(rows, []string{"similar --fleet", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (%d queries, %.1f matches each%s)", res.Query.MedianMs, res.Query.P99Ms, res.Query.N, res.QueryMatch, form)})
	} else {
		rows = append(rows, []string{"similar --fleet", res.QueryNote})
	}
	if res.OutageSecs > 0 {
		rows = append(rows,
			[]string{"outage", fmt.Sprintf("%.0f s, %d changes", res.OutageSecs, res.OutageChanges)},
			[]string{"converged after the database's return", fmt.Sprintf("%.1f s (every publisher back after %.1f s)", res.ConvergeSecs, res.ReconnectSecs)},
			[]string{"check after the outage", fmt.Sprintf("%s (%.1f s)", res.OutageCheck, res.CheckSecs)})
	}
	if res.PublishCheck != "" {
		rows = append(rows, []string{"check after publishing", fmt.Sprintf("%s (%.1f s)", res.PublishCheck, res.CheckSecs)})
	}
	fmt.Print(table(rows))
	fmt.Println()
	printGoals(res.Goals, res.Unexpected)
}
