package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"

	"golang.org/x/sync/errgroup"
)

// bubbleDaemon opens a daemon on cfg and runs the parts of run that can
// live in a synctest bubble, then waits until it is ready: the workers,
// both scanners and the first scan, with spawn working. Left out, since
// they wait on the kernel rather than on the bubble: the socket (use the
// exported methods and answers), the watcher (roots are polled: NoWatch),
// the fault loop (tests call the step they need) and the periodic rescans
// (Wait rescans polled roots). It must be called inside synctest.Test;
// the daemon stops, and its index closes, when the test ends.
func bubbleDaemon(t *testing.T, cfg Config) (*Daemon, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.NoWatch = true
	if cfg.DB == "" {
		cfg.DB = filepath.Join(t.TempDir(), "db")
	}
	if cfg.Socket == "" {
		cfg.Socket = filepath.Join(t.TempDir(), "s.sock") // not listened on
	}
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	d, err := open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.runCtx = ctx
	if err := d.setUpRoots(ctx); err != nil {
		cancel()
		_ = d.ix.Close()
		t.Fatal(err)
	}
	var workers sync.WaitGroup
	for range d.cfg.Workers {
		r, err := newReader(d.ix.Params(), d.cfg.MaxFileSize, d.ix.SimiHash())
		if err != nil {
			t.Fatal(err)
		}
		workers.Go(func() {
			defer r.close()
			d.worker(ctx, r)
		})
	}
	g, gctx := errgroup.WithContext(ctx)
	d.spawnMu.Lock()
	d.group, d.groupCtx = g, gctx
	d.spawnMu.Unlock()
	g.Go(func() error { d.live.run(gctx, d); return nil })
	g.Go(func() error { d.bulk.run(gctx, d); return nil })
	g.Go(func() error { return d.firstScan(gctx) })
	t.Cleanup(func() {
		d.spawnMu.Lock()
		d.spawnClosed = true
		d.spawnMu.Unlock()
		cancel()
		if err := g.Wait(); err != nil {
			t.Errorf("run: %v", err)
		}
		workers.Wait()
		if err := d.ix.Close(); err != nil {
			t.Errorf("closing the index: %v", err)
		}
	})
	synctest.Wait()
	select {
	case <-d.ready:
	default:
		t.Fatalf("not ready once every goroutine is blocked\n%s", logs.String())
	}
	return d, logs
}
