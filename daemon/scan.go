package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/watcher"
)

// job is one regular file found by a walk.
type job struct {
	root *rootState
	path string
	info fs.FileInfo // from lstat during the walk
}

// changeRetries is how often a file that changes while it is read is read
// again before it is left for the next scan.
const changeRetries = 3

// scanAll scans every root once, then marks the daemon ready.
func (d *Daemon) scanAll(ctx context.Context) error {
	if err := d.dropOutsideRoots(); err != nil {
		return err
	}
	jobs := make(chan job, 4*d.cfg.Workers)
	var wg sync.WaitGroup
	for range d.cfg.Workers {
		r, err := newReader(d.ix.Params(), d.cfg.MaxFileSize)
		if err != nil {
			return err
		}
		wg.Go(func() {
			defer r.close()
			for j := range jobs {
				if ctx.Err() != nil {
					continue // drain
				}
				d.process(ctx, r, j)
			}
		})
	}
	var err error
	for _, root := range d.roots {
		if err = d.scanRoot(ctx, root, jobs); err != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Scans commit without fsync; make the finished scan durable.
	if err := d.ix.Sync(); err != nil {
		return fmt.Errorf("syncing index: %w", err)
	}
	close(d.ready)
	st, _ := d.ix.Stats()
	d.log.Info("ready", "files", st.Files, "bytes", st.Bytes, "postings", st.Features,
		"disk_bytes", st.DiskBytes, "elapsed", time.Since(d.started).Round(time.Millisecond))
	// A scan that wrote much leaves the index larger than it need be (a
	// small corpus may never leave the memtable); rewrite it compactly, in
	// the background of serving queries.
	if written := d.count.indexed.Load() + d.count.removed.Load(); written > 0 {
		t0 := time.Now()
		if err := d.ix.Compact(); err != nil {
			return fmt.Errorf("compacting index: %w", err)
		}
		st, _ := d.ix.Stats()
		d.log.Info("index compacted", "disk_bytes", st.DiskBytes, "elapsed", time.Since(t0).Round(time.Millisecond))
	}
	return nil
}

// scanRoot walks one root, queueing its regular files, then removes the
// records of files that are gone. A failure inside the tree is counted and
// logged; only cancellation stops the walk.
func (d *Daemon) scanRoot(ctx context.Context, root *rootState, jobs chan<- job) error {
	root.setState("scanning")
	d.log.Info("scan started", "root", root.path)
	stop := d.progress(ctx, root)
	defer stop()
	err := watcher.Walk(ctx, root.path, func(e watcher.Entry) error {
		switch e.Kind {
		case watcher.Symlink:
			d.count.symlinks.Add(1)
			return nil
		case watcher.Special:
			d.count.special.Add(1)
			return nil
		case watcher.Vanished:
			d.skip(root, e.Path, fmt.Errorf("%s: %w", e.Path, errVanished))
			return nil
		case watcher.Unreadable:
			d.skip(root, e.Path, fmt.Errorf("%s: %w: %v", e.Path, errUnreadable, e.Err))
			return nil
		}
		root.filesSeen.Add(1)
		root.bytesSeen.Add(uint64(e.Info.Size()))
		select {
		case jobs <- job{root: root, path: e.Path, info: e.Info}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		root.setState("failed")
		root.setErr(err)
		d.errs.add(err.Error())
		d.log.Error("scan failed", "root", root.path, "err", err)
		return nil
	}
	if err := d.removeVanished(ctx, root); err != nil {
		return err
	}
	root.setState("ready")
	st := root.status()
	d.log.Info("scan finished", "root", root.path, "files", st.FilesSeen, "read", st.FilesRead,
		"bytes_read", st.BytesRead, "elapsed", time.Duration(st.ScanSecs*float64(time.Second)).Round(time.Millisecond))
	return nil
}

// process brings the index up to date with one file.
func (d *Daemon) process(ctx context.Context, r *reader, j job) {
	dev, ino := fileID(j.info)
	if rec, err := d.ix.Lookup(j.path); err == nil &&
		rec.FileMeta.Size == j.info.Size() && rec.MtimeNs == j.info.ModTime().UnixNano() && rec.Dev == dev && rec.Ino == ino {
		d.count.unchanged.Add(1)
		return
	}
	var err error
	for attempt := 0; attempt < changeRetries; attempt++ {
		meta, sketch, rerr := r.read(ctx, j.path)
		err = rerr
		if err == nil {
			if _, err = d.ix.Put(meta, sketch); err != nil {
				d.count.errors.Add(1)
				d.errs.add(fmt.Sprintf("%s: indexing: %v", j.path, err))
				d.log.Error("index write failed", "path", j.path, "err", err)
				return
			}
			d.count.indexed.Add(1)
			j.root.filesRead.Add(1)
			j.root.bytesRead.Add(uint64(meta.Size))
			return
		}
		if !errors.Is(err, errChanged) || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(time.Duration(attempt+1) * 50 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	d.skip(j.root, j.path, err)
	// What the index holds for this path no longer describes the disk.
	if !errors.Is(err, errChanged) {
		d.forget(j.path)
	}
}

// skip counts and logs a file or directory that was not indexed.
func (d *Daemon) skip(root *rootState, path string, err error) {
	switch {
	case errors.Is(err, errVanished):
		d.count.vanished.Add(1)
	case errors.Is(err, errSymlink):
		d.count.symlinks.Add(1)
		return
	case errors.Is(err, errSpecial):
		d.count.special.Add(1)
		return
	case errors.Is(err, errChanged):
		d.count.changed.Add(1)
	case errors.Is(err, errTooLarge):
		d.count.tooLarge.Add(1)
	default:
		d.count.unreadable.Add(1)
	}
	d.errs.add(err.Error())
	d.log.Warn("skipped", "err", err)
}

// forget removes path's record, if any.
func (d *Daemon) forget(path string) {
	err := d.ix.Remove(path)
	switch {
	case err == nil:
		d.count.removed.Add(1)
	case errors.Is(err, index.ErrNotFound):
	default:
		d.count.errors.Add(1)
		d.log.Error("index remove failed", "path", path, "err", err)
	}
}

// removeVanished removes the records under root whose files are no longer
// regular files.
func (d *Daemon) removeVanished(ctx context.Context, root *rootState) error {
	var gone []string
	err := d.ix.Files(dirPrefix(root.path), func(rec index.FileRecord) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		st, err := os.Lstat(rec.Path)
		if err != nil || !st.Mode().IsRegular() {
			gone = append(gone, rec.Path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range gone {
		d.forget(p)
	}
	if len(gone) > 0 {
		d.log.Info("removed vanished files", "root", root.path, "count", len(gone))
	}
	return nil
}

// dropOutsideRoots removes records of files outside every root, left from a
// run with other roots.
func (d *Daemon) dropOutsideRoots() error {
	var drop []string
	err := d.ix.Files("", func(rec index.FileRecord) error {
		for _, r := range d.cfg.Roots {
			if under(rec.Path, r) {
				return nil
			}
		}
		drop = append(drop, rec.Path)
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range drop {
		d.forget(p)
	}
	if len(drop) > 0 {
		d.log.Info("removed files outside the roots", "count", len(drop))
	}
	return nil
}

// progress logs root's scan progress periodically until the returned func
// is called.
func (d *Daemon) progress(ctx context.Context, root *rootState) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d.cfg.ProgressEvery)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				st := root.status()
				secs := time.Since(start).Seconds()
				d.log.Info("scan progress", "root", root.path, "files_seen", st.FilesSeen,
					"files_read", st.FilesRead, "mb_read", st.BytesRead>>20,
					"mb_per_s", fmt.Sprintf("%.1f", float64(st.BytesRead)/1e6/secs),
					"files_per_s", fmt.Sprintf("%.0f", float64(st.FilesSeen)/secs))
			}
		}
	}()
	return func() { cancel(); <-done }
}
