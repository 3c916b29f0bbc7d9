package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// Daemon indexes its roots and serves queries about them.
type Daemon struct {
	cfg     Config
	log     *slog.Logger
	ix      *index.Index
	started time.Time
	roots   []*rootState
	count   counters
	errs    errorLog
	ready   chan struct{} // closed when every root's first scan has ended
}

// Run opens the index, listens on the socket, scans the roots and serves
// queries until ctx is done; then it stops scanning, finishes the requests
// in flight, closes the index and returns nil. It returns an error if it
// cannot start (bad configuration, index in use or built with other
// parameters, socket in use) or if serving fails.
func Run(ctx context.Context, cfg Config) error {
	d, err := open(cfg)
	if err != nil {
		return err
	}
	return d.run(ctx)
}

func open(cfg Config) (*Daemon, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, log: cfg.Logger, started: time.Now(), ready: make(chan struct{})}
	for _, r := range cfg.Roots {
		d.roots = append(d.roots, &rootState{path: r, state: "pending"})
	}
	if err := os.MkdirAll(cfg.DB, 0o700); err != nil {
		return nil, fmt.Errorf("db %s: %w", cfg.DB, err)
	}
	ix, err := index.Open(cfg.DB, &index.Options{Params: cfg.Params, Logger: cfg.Logger.With("component", "pebble")})
	if err != nil {
		return nil, err
	}
	d.ix = ix
	return d, nil
}

func (d *Daemon) run(ctx context.Context) (err error) {
	defer func() {
		if cerr := d.ix.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing index: %w", cerr)
		}
	}()
	ln, err := ipc.Listen(d.cfg.Socket, d.cfg.SocketMode)
	if err != nil {
		return err
	}
	defer os.Remove(d.cfg.Socket)
	d.log.Info("sifd started", "version", d.cfg.Version, "pid", os.Getpid(), "db", d.cfg.DB,
		"socket", d.cfg.Socket, "params", d.ix.Params().String(), "roots", d.cfg.Roots, "workers", d.cfg.Workers)

	srv := ipc.NewServer(d, ipc.ServerOptions{Version: d.cfg.Version, Logger: d.log.With("component", "ipc")})
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx, ln) })
	g.Go(func() error {
		err := d.scanAll(gctx)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	})
	err = g.Wait()
	if ctx.Err() != nil {
		d.log.Info("sifd stopping", "reason", context.Cause(ctx))
	}
	return err
}

// Status implements ipc.Backend.
func (d *Daemon) Status() ipc.Status {
	st := ipc.Status{
		Version:   d.cfg.Version,
		PID:       os.Getpid(),
		Started:   d.started.UTC(),
		State:     "scanning",
		DB:        d.cfg.DB,
		Socket:    d.cfg.Socket,
		Params:    d.ix.Params().String(),
		Counters:  d.count.snapshot(),
		LastError: d.errs.get(),
	}
	select {
	case <-d.ready:
		st.State = "ready"
	default:
	}
	for _, r := range d.roots {
		st.Roots = append(st.Roots, r.status())
	}
	if s, err := d.ix.Stats(); err == nil {
		st.Index = ipc.IndexStats{Files: s.Files, Bytes: s.Bytes, Postings: s.Features, Fingerprints: s.Fingerprints, DiskBytes: s.DiskBytes}
	}
	return st
}

// The index.Querier half of ipc.Backend.

func (d *Daemon) Params() fingerprint.Params { return d.ix.Params() }
func (d *Daemon) Similar(q index.Query, o index.QueryOptions) (*index.Result, error) {
	return d.ix.Similar(q, o)
}
func (d *Daemon) Groups(o index.GroupOptions) ([]index.Group, error) { return d.ix.Groups(o) }
func (d *Daemon) Dupes(prefix string) ([]index.DupeSet, error)       { return d.ix.Dupes(prefix) }
func (d *Daemon) Stats() (index.Stats, error)                        { return d.ix.Stats() }
