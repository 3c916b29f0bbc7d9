package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/server"
	"github.com/sif-dev/sif/watcher"
)

// Daemon keeps the index equal to its roots and serves queries about them.
//
// Data flow: the watcher's event goroutine touches changed paths in a
// settler; settled paths go on the live lane; scans (first scan,
// reconciles, new directories) walk directories onto the bulk or live lane;
// workers take items, live first, and bring each path up to date under a
// per-path claim. A tracker counts the work each moment caused, so Wait can
// tell when every change made before it was called has been applied.
type Daemon struct {
	cfg    Config
	log    *slog.Logger
	ix     *ixHandle
	faults faults
	fleet  *fleetLink // nil without a fleet
	// changing lists the files found still changing.
	changing *changing
	started  time.Time
	count    counters
	first    queryFirst // queries before scan work
	errs     errorLog
	ready    chan struct{} // closed when every root's first scan has ended
	// compacted is closed once the compaction after the first scans has
	// ended, or at ready when there is none.
	compacted chan struct{}
	unclean   bool // the previous run did not shut down cleanly
	marker    runMarker

	runCtx context.Context
	// group is Run's errgroup, and groupCtx its context: spawn runs the
	// goroutines that walk trees on request under it. spawnClosed is set
	// once the daemon stops; spawnMu guards both.
	spawnMu     sync.Mutex
	group       *errgroup.Group
	groupCtx    context.Context
	spawnClosed bool
	ctlMu       sync.Mutex // serialises root changes and reloads, and guards cfg.Roots (written under rmu too)
	rmu         sync.RWMutex
	roots       []*rootState
	filt        atomic.Pointer[filter]

	lanes      *lanes
	claims     claims
	track      *tracker
	live, bulk *scanner
	settle     *watcher.Settler // changed and removed paths, tagged with their epoch
	sock       *server.Listener // the socket, set by run
	watch      *watcher.Watcher // nil with NoWatch
	cookies    cookieJar
	notes      notifier // the service manager

	retries   *attempts // path → reads in a row that found it changing
	deferrals *attempts // vanished directory → removals put off

	// racy is open after an unclean shutdown until the first scan ends.
	racy racyWindow
	// compacting is set while the index is compacted after the first scan.
	compacting atomic.Bool

	// forgets are the removed roots whose records are being removed
	// (forget.go); forgetMu guards the list, held briefly (queries read
	// it), and countMu their counts, held across each batch's commit so
	// that the index's totals and the counts change together.
	forgetMu sync.Mutex
	forgets  []*forgetting
	countMu  sync.Mutex
}

// Run opens the index, listens on the socket, watches and scans the roots
// and serves queries until ctx is done; then it stops, lets work in flight
// finish (up to Config.ShutdownTimeout), closes the index and returns nil.
// It returns an error if it cannot start (bad configuration, index in use
// or built with other parameters, socket in use) or if serving fails. An
// error wrapping ErrRestart says the index cannot be opened again in this
// process: the caller starts the daemon afresh in a new one (cmd/sifd
// executes itself again), which reconciles every root as after a crash.
func Run(ctx context.Context, cfg Config) error {
	d, err := open(cfg)
	if err != nil {
		return err
	}
	return d.run(ctx)
}

// ErrRestart is wrapped by Run's error when the index's database is stuck
// after a write of its log failed (Pebble keeps its commit lock then): no
// write, and no Close, can go on in this process.
var ErrRestart = errors.New("daemon: the index cannot be opened again in this process: start sifd afresh")

func open(cfg Config) (*Daemon, error) {
	defaultMinFree := cfg.MinFreeSpace == 0
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		cfg: cfg, log: cfg.Logger, started: time.Now(), ready: make(chan struct{}), compacted: make(chan struct{}),
		lanes: newLanes(), track: newTracker(),
		live: newScanner(true), bulk: newScanner(false),
		retries: newAttempts(changeRetries), deferrals: newAttempts(goneDeferrals),
	}
	d.first.yields = &d.count.scanYields
	f, err := newFilter(cfg)
	if err != nil {
		return nil, err
	}
	d.filt.Store(f)
	d.notes = notifier{n: cfg.Notifier, log: cfg.Logger}
	d.changing = newChanging(cfg.MaxSettleDelay, cfg.Logger)
	d.settle = watcher.NewSettler(watcher.SettleOptions{Delay: cfg.SettleDelay, MaxDelay: cfg.MaxSettleDelay, MaxPending: cfg.MaxSettling})

	if err := os.MkdirAll(cfg.DB, 0o700); err != nil {
		return nil, fmt.Errorf("db %s: %w", cfg.DB, err)
	}
	if err := migrateState(cfg.DB, cfg.Logger); err != nil {
		return nil, err
	}
	note, aside := takeRebuildNote(StateDir(cfg.DB), cfg.Logger), ""
	if note != nil {
		if aside, err = finishRebuild(cfg.DB, note); err != nil {
			cfg.Logger.Error("cannot move the damaged index aside", "db", cfg.DB, "err", err)
		}
		if err := os.MkdirAll(cfg.DB, 0o700); err != nil {
			return nil, fmt.Errorf("db %s: %w", cfg.DB, err)
		}
	}
	d.marker = newRunMarker(StateDir(cfg.DB), cfg.Logger)
	d.faults.init(cfg.DB, minFreeFor(cfg.DB, cfg.MinFreeSpace, defaultMinFree, cfg.Logger), cfg.Logger, &d.errs)
	d.faults.ballast.keep(d.faults.minFree)
	ix, err := d.openIndex(cfg.Params, cfg.SimiHash)
	if err != nil {
		return nil, err
	}
	d.ix = &ixHandle{faults: &d.faults}
	d.ix.swap(ix)
	d.noteMovedAside(ix)
	if note != nil {
		d.faults.setRebuilt(note.Reason, aside, note.At)
		d.log.Error("the previous run restarted to rebuild the index: it is rebuilt by a full scan",
			"db", cfg.DB, "reason", note.Reason, "old", aside)
	}
	return d, nil
}

// access returns who may see and change what through the socket.
func (d *Daemon) access() (*server.Access, error) {
	a := &server.Access{Owner: uint32(os.Geteuid()), Private: d.cfg.SocketAccess == config.SocketOwner}
	if d.cfg.OperatorGroup != "" {
		gid, err := config.LookupGroup(d.cfg.OperatorGroup)
		if err != nil {
			return nil, fmt.Errorf("operator_group: %w", err)
		}
		a.Operators = []uint32{gid}
	}
	if f := d.cfg.Fleet; f != nil && f.AskGroup != "" {
		// A group that does not exist has no members.
		if gid, err := config.LookupGroup(f.AskGroup); err == nil {
			a.FleetAskers = []uint32{gid}
		} else {
			d.log.Info("the fleet's ask group does not exist: only root and the daemon's user may ask the fleet", "group", f.AskGroup)
		}
	}
	return a, nil
}

func (d *Daemon) run(ctx context.Context) (err error) {
	closeIndex := true
	defer func() {
		if !closeIndex {
			return
		}
		if cerr := d.ix.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing index: %w", cerr)
		}
		if err == nil {
			d.marker.remove()
		}
	}()
	unclean, since, err := d.marker.write()
	if err != nil {
		return err
	}
	if unclean {
		d.unclean = true
		d.racy.openAt(since)
	}
	ln, err := server.Listen(d.cfg.Socket, d.cfg.socketMode())
	if err != nil {
		return err
	}
	defer ln.Close() // and removes the socket file, if it is still ours
	d.sock = ln

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.runCtx = ctx
	if err := d.setUpRoots(ctx); err != nil {
		ln.Close()
		return err
	}
	d.log.Info("sifd started", "version", d.cfg.Version, "pid", os.Getpid(), "db", d.cfg.DB,
		"state", d.stateDir(), "socket", d.cfg.Socket, "params", d.ix.Params().String(), "simihash", d.ix.SimiHash(), "roots", d.rootPaths(), "workers", d.cfg.Workers,
		"watch", d.watch != nil)
	if err := d.dropOutsideRoots(ctx); err != nil {
		ln.Close()
		return err
	}

	// Workers run outside the group, so a shutdown can give up on them.
	var workers sync.WaitGroup
	addProcs(d.cfg.Workers)
	d.first.cores = runtime.GOMAXPROCS(0)
	var lowered sync.Once
	for range d.cfg.Workers {
		r, err := newReader(d.ix.Params(), d.cfg.MaxFileSize, d.ix.SimiHash())
		if err != nil {
			ln.Close()
			return err
		}
		workers.Go(func() {
			defer r.close()
			if err := lowerPriority(); err != nil {
				lowered.Do(func() { d.log.Warn("workers run at the daemon's priority", "err", err) })
			}
			d.worker(ctx, r)
		})
	}

	access, err := d.access()
	if err != nil {
		ln.Close()
		return err
	}
	if err := d.linkFleet(ctx); err != nil {
		ln.Close()
		return err
	}
	defer d.fleet.close()
	srv := server.New(server.Backend{Query: answers{d}, Control: d, Content: d, Fleet: d.fleet.backend()},
		server.Options{Version: d.cfg.Version, Logger: d.log.With("component", "ipc"), Access: access})
	g, gctx := errgroup.WithContext(ctx)
	d.spawnMu.Lock()
	d.group, d.groupCtx = g, gctx
	d.spawnMu.Unlock()
	g.Go(func() error { return srv.Serve(gctx, ln) })
	// The socket listens, and from now on its requests are served.
	d.notes.notify("READY=1", "STATUS=serving queries; first scan starting")
	g.Go(func() error {
		<-gctx.Done()
		// From now on spawn starts nothing, so g.Wait cannot miss one.
		d.spawnMu.Lock()
		d.spawnClosed = true
		d.spawnMu.Unlock()
		d.notes.notify("STOPPING=1", "STATUS=stopping: finishing the work in flight")
		return nil
	})
	if d.watch != nil {
		g.Go(func() error {
			if err := d.watch.Run(gctx, d.handler()); err != nil && gctx.Err() == nil {
				return err
			}
			return nil
		})
	}
	g.Go(func() error { d.settle.Run(gctx, func(s watcher.Settled) { d.settled(gctx, s) }); return nil })
	g.Go(func() error { d.live.run(gctx, d); return nil })
	g.Go(func() error { d.bulk.run(gctx, d); return nil })
	g.Go(func() error { d.periodic(gctx); return nil })
	g.Go(func() error { d.reloadLoop(gctx); return nil })
	g.Go(func() error { ln.Watch(gctx, d.cfg.SocketCheckEvery, d.log); return nil })
	g.Go(func() error { return d.faultLoop(gctx) })
	g.Go(func() error { return d.firstScan(gctx) })
	g.Go(func() error { d.fleet.run(gctx); return nil })
	err = g.Wait()
	cancel()
	if ctx.Err() != nil {
		d.log.Info("sifd stopping", "reason", context.Cause(ctx))
	}
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d.cfg.ShutdownTimeout):
		// A worker is stuck, e.g. reading from a hung network filesystem.
		// Pebble must not be closed under it; the index is consistent as
		// it is, and the next start reconciles.
		d.log.Error("workers did not stop in time: exiting without closing the index", "timeout", d.cfg.ShutdownTimeout)
		closeIndex = false
		return err
	}
	if serr := d.ix.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("syncing index: %w", serr)
	}
	return err
}

// spawn runs f under Run's errgroup, so that Run returns only after f
// has: a root's watches and first scan when it is added, the removal of a
// removed root's records, the verification of the index. f gets
// the group's context and must return soon once it is done. Before Run
// has started its group, and once it stops, spawn starts nothing and
// returns false.
func (d *Daemon) spawn(f func(ctx context.Context)) bool {
	d.spawnMu.Lock()
	defer d.spawnMu.Unlock()
	if d.group == nil || d.spawnClosed {
		return false
	}
	ctx := d.groupCtx
	d.group.Go(func() error { f(ctx); return nil })
	return true
}

// setUpRoots creates the watcher and the roots in effect: those of the
// configuration, with the changes made by sifctl roots.
func (d *Daemon) setUpRoots(ctx context.Context) error {
	if !d.cfg.NoWatch {
		w, err := watcher.NewWatcher(watcher.WatchOptions{
			BufferSize: d.cfg.EventBuffer, Exclude: d.filter().exclude, Logger: d.log.With("component", "watcher"),
			DropEvery: d.cfg.DropEvents,
		})
		if err != nil {
			return err
		}
		d.watch = w
		// Where the watcher's events are ordered across its watches, one
		// cookie of the daemon's own answers for every watched root.
		if orderedEvents {
			dir := filepath.Join(d.stateDir(), cookieDirName)
			if err := d.cookies.setUpDir(ctx, dir, w, d.handler()); err != nil {
				d.log.Warn("cannot watch a cookie directory of the daemon's own: wait writes its cookies in the roots", "dir", dir, "err", err)
			}
		}
	}
	rf, err := d.loadRootsFile()
	if err != nil {
		return err
	}
	paths, source := effectiveRoots(d.cfg.Roots, rf)
	d.logRoots("root", paths, source, removedRoots(d.cfg.Roots, rf))
	if len(paths) == 0 {
		return errors.New("no roots: every configured root was removed with sifctl roots remove; add one with sifctl roots add or in the configuration")
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			if source[p] == sourceAdded {
				d.log.Warn("root added with sifctl roots add is gone; ignoring it", "root", p, "err", err)
				continue
			}
			return fmt.Errorf("root %s: not a directory", p)
		}
		if _, err := d.addRoot(ctx, p, source[p]); err != nil {
			return err
		}
	}
	return nil
}

// firstScan starts every root, waits until their first scans are done,
// then declares the daemon ready.
func (d *Daemon) firstScan(ctx context.Context) error {
	var scans []*scanRun
	for _, r := range d.rootList() {
		scans = append(scans, d.startRoot(ctx, r, "start"))
	}
	stop := d.notifyProgress(ctx)
	for _, s := range scans {
		if !waitChan(ctx, s.done) {
			stop()
			return nil // shutting down
		}
	}
	stop()
	d.racy.close()
	// Scans commit without fsync; make the finished scan durable.
	if err := d.ix.Sync(); err != nil {
		return fmt.Errorf("syncing index: %w", err)
	}
	st, _ := d.ix.Stats()
	d.notes.notify("STATUS=" + readyStatus(st.Files, d.Roots()))
	// A scan that wrote much leaves the index larger than it need be (a
	// small corpus may never leave the memtable); rewrite it compactly
	// while serving queries. The status says so from the moment it is
	// ready.
	compact := d.count.indexed.Load()+d.count.removed.Load() > 0
	d.compacting.Store(compact)
	close(d.ready)
	d.log.Info("ready", "files", st.Files, "bytes", st.Bytes, "postings", st.Features,
		"disk_bytes", st.DiskBytes, "elapsed", time.Since(d.started).Round(time.Millisecond))
	if !compact {
		close(d.compacted)
		return nil
	}
	// The compaction's own reading (the empty lists it drops first) runs
	// at the scan's priority, below the queries; Pebble's rewriting runs
	// on goroutines of its own.
	t0 := time.Now()
	var err error
	atNice(workerNice, func() { err = d.ix.Compact(ctx) })
	d.compacting.Store(false)
	close(d.compacted)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("compacting index: %w", err)
	}
	st, _ = d.ix.Stats()
	d.log.Info("index compacted", "disk_bytes", st.DiskBytes, "elapsed", time.Since(t0).Round(time.Millisecond))
	return nil
}

// notifyProgress tells the service manager how the first scan goes,
// every ProgressEvery, until the returned func is called.
func (d *Daemon) notifyProgress(ctx context.Context) (stop func()) {
	if d.notes.n == nil {
		return func() {}
	}
	return every(ctx, d.cfg.ProgressEvery, func() {
		d.notes.notify("STATUS=" + scanStatus(d.Roots(), time.Since(d.started)))
	})
}

// every calls fn every interval, on a goroutine of its own, until ctx is
// done or the returned stop is called; stop returns once fn is no longer
// running.
func every(ctx context.Context, interval time.Duration, fn func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() { cancel(); <-done }
}

// handler returns the watcher.Handler that feeds the daemon.
func (d *Daemon) handler() watcher.Handler { return (*watchHandler)(d) }

// watchHandler receives the watcher's reports on its goroutines; every
// method only records and returns.
type watchHandler Daemon

func (h *watchHandler) Changed(path string) {
	d := (*Daemon)(h)
	d.count.events.Add(1)
	if isCookie(path) {
		d.cookies.seen(path)
		return
	}
	d.touch(path, 0, false)
}

func (h *watchHandler) Removed(path string) {
	d := (*Daemon)(h)
	d.count.events.Add(1)
	if isCookie(path) {
		return
	}
	d.touch(path, 0, true)
}

func (h *watchHandler) DirAdded(dir string) {
	d := (*Daemon)(h)
	if r := d.rootOf(dir); r != nil && dir != r.path {
		d.requestScan(r, dir, true, "new directory")
	}
}

func (h *watchHandler) Overflow(root string) {
	d := (*Daemon)(h)
	d.count.overflows.Add(1)
	d.overflow(root)
}

func (h *watchHandler) Unwatched(dir string, err error) {
	d := (*Daemon)(h)
	if r := d.rootOf(dir); r != nil {
		r.setUnwatched(dir, err)
	}
}

// Status implements server.Controller.
func (d *Daemon) Status() ipc.Status {
	st := ipc.Status{
		Version:      d.cfg.Version,
		PID:          os.Getpid(),
		Started:      d.started.UTC(),
		State:        "scanning",
		DB:           d.cfg.DB,
		Socket:       d.cfg.Socket,
		Params:       d.ix.Params().String(),
		Roots:        d.Roots(),
		RemovedRoots: d.removedRoots(),
		Counters:     d.count.snapshot(),
		LastError:    d.errs.get(),
		UncleanStart: d.unclean,
		Queue: ipc.QueueStatus{
			Settling: d.settle.Pending(),
			Live:     len(d.lanes.live),
			Scan:     len(d.lanes.bulk),
			Scans:    d.live.size() + d.bulk.size(),
			Busy:     int(d.lanes.busy.Load()),
		},
	}
	select {
	case <-d.ready:
		st.State = "ready"
	default:
	}
	if s, forgetting, err := d.stats(); err == nil {
		st.Forgetting = forgetting
		st.Index = ipc.IndexStats{Files: s.Files, Bytes: s.Bytes, Contents: s.Contents, Postings: s.Postings, Fingerprints: s.Fingerprints, DiskBytes: s.DiskBytes}
		st.Index.Compacting = d.compacting.Load()
	}
	d.faults.status(&st)
	if d.fleet != nil {
		fs := ipc.FleetStatus{Host: d.cfg.Fleet.Host, Publishing: []string{}}
		if d.fleet.pub != nil {
			fs = d.fleet.pub.Status()
		}
		st.Fleet = &fs
	}
	st.StillChanging = d.changing.list()
	return st
}

func (d *Daemon) watchedUnder(root string) int {
	if d.watch == nil {
		return 0
	}
	return d.watch.WatchedUnder(root)
}
