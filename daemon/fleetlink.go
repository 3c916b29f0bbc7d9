package daemon

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sif-dev/sif/daemon/fleet"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/server"
)

// FleetConfig links the daemon to a fleet index (package daemon/fleet): a
// database, reached with the PostgreSQL wire protocol, that holds the
// published files of every host of the fleet.
type FleetConfig struct {
	// URL is the database's URL or key=value connection string, as pgx
	// parses it. It holds a password: it comes from a 0600 file or the
	// environment, never from a command line (config.Fleet.URL).
	URL string
	// Host is this host's name in the fleet.
	Host string
	// Publish lists the published roots, each a root or under one; empty
	// means this host only asks.
	Publish []string
	// Silence is how long a host may go unheard before answers leave it
	// out; Timeout bounds a fleet query.
	Silence time.Duration
	Timeout time.Duration
	// AskGroup names a group whose members may ask the fleet, besides root
	// and the daemon's user.
	AskGroup string
}

// checkFleet makes the published roots absolute and resolved, and checks
// each is a root or under one.
func (c *Config) checkFleet() error {
	f := c.Fleet
	if f == nil {
		return nil
	}
	if f.Host == "" {
		return fmt.Errorf("fleet: no host name")
	}
	if _, err := pgxpool.ParseConfig(f.URL); err != nil {
		// pgx's message quotes nothing of the URL but its shape.
		return fmt.Errorf("fleet: the database URL does not parse: %w", err)
	}
	var pub []string
	for _, p := range f.Publish {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("fleet: publish %s: %w", p, err)
		}
		abs = resolved(abs)
		ok := false
		for _, r := range c.Roots {
			ok = ok || under(abs, r)
		}
		if !ok {
			return fmt.Errorf("fleet: publish %s: not a root nor under one (roots: %v)", p, c.Roots)
		}
		pub = append(pub, abs)
	}
	f.Publish = pub
	return nil
}

// fleetEqual reports whether two fleet configurations are the same.
func fleetEqual(a, b *FleetConfig) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.URL == b.URL && a.Host == b.Host && slices.Equal(a.Publish, b.Publish) &&
		a.Silence == b.Silence && a.Timeout == b.Timeout && a.AskGroup == b.AskGroup
}

// publishing reports whether the daemon publishes to a fleet, and so keeps
// the index's change journal.
func (c *Config) publishing() bool { return c.Fleet != nil && len(c.Fleet.Publish) > 0 }

// fleetLink is the daemon's side of the fleet: the database pool and the
// publisher.
type fleetLink struct {
	d    *Daemon
	pool *pgxpool.Pool
	// grouped caches fleet.Partitioned once it answered: 1 key by key,
	// 2 grouped (postings partitioned over servers).
	grouped atomic.Int32
	pub     *fleet.Publisher // nil when nothing is published
}

// linkFleet connects the daemon to its fleet, if it has one. The pool
// connects lazily: a database that is down at start is only an error in
// the status, tried again.
func (d *Daemon) linkFleet(ctx context.Context) error {
	f := d.cfg.Fleet
	if f == nil {
		return nil
	}
	pc, err := pgxpool.ParseConfig(f.URL)
	if err != nil {
		return fmt.Errorf("fleet: the database URL does not parse: %w", err)
	}
	pc.MaxConns = 4
	pc.MinConns = 0
	if pc.ConnConfig.ConnectTimeout == 0 || pc.ConnConfig.ConnectTimeout > f.Timeout {
		pc.ConnConfig.ConnectTimeout = max(f.Timeout, time.Second)
	}
	if pc.ConnConfig.RuntimeParams == nil {
		pc.ConnConfig.RuntimeParams = map[string]string{}
	}
	pc.ConnConfig.RuntimeParams["application_name"] = "sifd " + f.Host
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	d.fleet = &fleetLink{d: d, pool: pool}
	if len(f.Publish) > 0 {
		d.fleet.pub = fleet.NewPublisher(fleet.PublisherConfig{
			Host: f.Host, Roots: f.Publish, Pool: pool, Version: d.cfg.Version,
			Index:  func() *index.Index { return d.ix.cur() },
			Logger: d.log.With("component", "fleet"),
		})
	}
	d.log.Info("fleet linked", "host", f.Host, "publishing", f.Publish)
	return nil
}

// backend returns the link as the server's Fleet, nil without a fleet.
func (l *fleetLink) backend() server.Fleet {
	if l == nil {
		return nil
	}
	return l
}

// run publishes until ctx is done.
func (l *fleetLink) run(ctx context.Context) {
	if l != nil && l.pub != nil {
		l.pub.Run(ctx)
	}
}

// Check implements server.Fleet.
func (l *fleetLink) Check(ctx context.Context) (*ipc.FleetCheck, error) {
	f := l.d.cfg.Fleet
	ctx, cancel := context.WithTimeout(ctx, max(f.Timeout, time.Minute))
	defer cancel()
	ix := l.d.ix.cur()
	var pending int
	if l.pub != nil {
		pending = l.pub.Status().Pending
	}
	rep, err := fleet.Check(ctx, l.pool, f.Host, ix, f.Publish)
	if err != nil {
		return nil, err
	}
	rep.Pending = pending
	return rep, nil
}

// Host implements server.Fleet.
func (l *fleetLink) Host() string { return l.d.cfg.Fleet.Host }

// Similar implements server.Fleet: the files of other hosts that match q,
// estimated from fingerprints. It gives up after the fleet's timeout.
func (l *fleetLink) Similar(ctx context.Context, q index.Query, opts index.QueryOptions) ([]ipc.Match, error) {
	f := l.d.cfg.Fleet
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	if l.grouped.Load() == 0 {
		if p, err := fleet.Partitioned(ctx, l.pool); err == nil {
			l.grouped.Store(map[bool]int32{false: 1, true: 2}[p])
		}
	}
	res, err := fleet.Similar(ctx, l.pool, fleet.Query{Grouped: l.grouped.Load() == 2,
		Sketch: q.Sketch, Params: l.d.ix.Params(), Path: q.Path,
		Threshold: opts.Threshold, Limit: opts.Limit, MaxDF: opts.MaxDF, MinFeatures: opts.MinFeatures,
		SizeRatio: opts.SizeRatio, SameExt: opts.SameExt, SameType: opts.SameType, ExcludeHost: f.Host, Silence: f.Silence,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the database did not answer within %s", f.Timeout)
		}
		return nil, err
	}
	out := make([]ipc.Match, 0, len(res.Matches))
	for _, m := range res.Matches {
		p, raw := ipc.PathFields(m.Path)
		mo := ipc.Match{
			Host: m.Host, Path: p, PathRaw: raw, Size: m.Size, MtimeNs: m.MtimeNs,
			Containment: pct(m.Containment), ReverseContainment: pct(m.ReverseContainment),
			Resemblance: pct(m.Resemblance), Identical: m.Identical, Template: m.Template, Type: m.Type.String(), Measure: ipc.MeasureEstimated,
		}
		if l.d.ix.Params().KnowsLengths() {
			b := int64(m.SharedWeight)
			mo.SharedBytes = &b
		}
		out = append(out, mo)
	}
	return out, nil
}

// SimiFind implements server.Fleet: the files of other hosts that
// SimiFind calls similar to q, from the SimiHash keys in the fleet's
// tables. It gives up after the fleet's timeout.
func (l *fleetLink) SimiFind(ctx context.Context, q index.SimiQuery) ([]ipc.Match, error) {
	f := l.d.cfg.Fleet
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	res, err := fleet.SimiFind(ctx, l.pool, fleet.SimiQuery{Summary: q.Summary, Tolerances: q.Tolerances, Path: q.Path, SameExt: q.SameExt,
		Limit: q.Limit, ExcludeHost: f.Host, Silence: f.Silence})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the database did not answer within %s", f.Timeout)
		}
		return nil, err
	}
	out := make([]ipc.Match, 0, len(res.Matches))
	for _, m := range res.Matches {
		p, raw := ipc.PathFields(m.Path)
		out = append(out, ipc.Match{
			Host: m.Host, Path: p, PathRaw: raw, Size: m.Size, MtimeNs: m.MtimeNs,
			Identical: m.Identical, Type: m.Type.String(), Measure: ipc.MeasureEstimated,
			SimiHash: &ipc.SimiMatch{KeyDistance: m.KeyDistance, KeyTolerance: m.KeyTolerance,
				SumDistance: m.SumDistance, SumTolerance: m.SumTolerance},
		})
	}
	return out, nil
}

// Dupes implements server.Fleet.
func (l *fleetLink) Dupes(ctx context.Context, prefix string) ([]ipc.DupeSet, error) {
	f := l.d.cfg.Fleet
	ctx, cancel := context.WithTimeout(ctx, max(f.Timeout, 30*time.Second))
	defer cancel()
	sets, err := fleet.Dupes(ctx, l.pool, f.Silence)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the database did not answer within %s", max(f.Timeout, 30*time.Second))
		}
		return nil, err
	}
	out := make([]ipc.DupeSet, 0, len(sets))
	for _, s := range sets {
		if prefix != "" && !slices.ContainsFunc(s.Files, func(d fleet.DupeFile) bool {
			return d.Host == f.Host && index.InTree(d.Path, prefix)
		}) {
			continue
		}
		set := ipc.DupeSet{Size: s.Size, Strong: hex.EncodeToString(s.Strong[:]), Hosts: s.Hosts,
			Inodes: len(s.Files), RedundantFiles: len(s.Files) - 1, RedundantBytes: s.Size * int64(len(s.Files)-1)}
		for _, d := range s.Files {
			set.Files = append(set.Files, ipc.DupeFile{Host: d.Host, FilePath: ipc.NewFilePath(d.Path)})
		}
		out = append(out, set)
	}
	return out, nil
}

// Hosts implements server.Fleet.
func (l *fleetLink) Hosts(ctx context.Context) ([]ipc.FleetHost, error) {
	f := l.d.cfg.Fleet
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	hosts, err := fleet.Hosts(ctx, l.pool, f.Silence)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the database did not answer within %s", f.Timeout)
		}
		return nil, err
	}
	out := make([]ipc.FleetHost, 0, len(hosts))
	for _, h := range hosts {
		fh := ipc.FleetHost{Host: h.Name, Roots: make([]ipc.FilePath, 0, len(h.Roots)), LastSeen: h.LastSeen, Version: h.Version}
		for _, r := range h.Roots {
			fh.Roots = append(fh.Roots, ipc.NewFilePath(r))
		}
		out = append(out, fh)
	}
	return out, nil
}

// DirTotals implements server.Fleet: one round trip for all dirs, which
// may read up to maxFiles rows each, so it may take longer than a query,
// up to 30 s.
func (l *fleetLink) DirTotals(ctx context.Context, dirs []ipc.HostDir, maxFiles int) ([]ipc.DirTotal, error) {
	f := l.d.cfg.Fleet
	limit := max(f.Timeout, 30*time.Second)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	hd := make([]fleet.HostDir, len(dirs))
	for i, d := range dirs {
		hd[i] = fleet.HostDir{Host: d.Host, Path: d.Exact()}
	}
	ts, err := fleet.DirTotals(ctx, l.pool, hd, maxFiles)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the database did not answer within %s", limit)
		}
		return nil, err
	}
	out := make([]ipc.DirTotal, len(ts))
	for i, t := range ts {
		out[i] = ipc.DirTotal{Host: dirs[i].Host, FilePath: dirs[i].FilePath, Files: t.Files, Bytes: t.Bytes, Truncated: t.Truncated}
	}
	return out, nil
}

// pct is a share in 0..1 as a percentage rounded to 0.01, as the
// server gives local matches.
func pct(x float64) float64 { return math.Round(x*10000) / 100 }

// Forget implements server.Fleet.
func (l *fleetLink) Forget(ctx context.Context, host string) (*ipc.FleetForgetResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, max(l.d.cfg.Fleet.Timeout, time.Minute))
	defer cancel()
	files, contents, err := fleet.Forget(ctx, l.pool, host)
	if errors.Is(err, fleet.ErrNoHost) {
		return nil, fmt.Errorf("%w: %q", server.ErrNoHost, host)
	}
	if err != nil {
		return nil, err
	}
	l.d.log.Info("fleet host forgotten", "host", host, "files", files, "contents", contents)
	return &ipc.FleetForgetResponse{Host: host, Files: files, Contents: contents}, nil
}

func (l *fleetLink) close() {
	if l != nil {
		l.pool.Close()
	}
}
