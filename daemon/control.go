package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/server"
)

// AddRoot implements server.Controller: it starts watching and scanning dir,
// and records it in the roots file.
func (d *Daemon) AddRoot(dir string) error {
	clean, err := cleanRoots([]string{dir})
	if err != nil {
		return fmt.Errorf("%w: %v", server.ErrBadRoot, err)
	}
	dir = clean[0]
	d.ctlMu.Lock()
	defer d.ctlMu.Unlock()
	rf, err := d.loadRootsFile()
	if err != nil {
		return err
	}
	source := sourceAdded
	if slices.Contains(d.cfg.Roots, dir) {
		source = sourceConfig
	}
	r, err := d.addRoot(d.runCtx, dir, source)
	if err != nil {
		return fmt.Errorf("%w: %v", server.ErrBadRoot, err)
	}
	rf.Removed = slices.DeleteFunc(rf.Removed, func(p string) bool { return p == dir })
	if source == sourceAdded && !slices.Contains(rf.Added, dir) {
		rf.Added = append(rf.Added, dir)
	}
	if err := d.saveRootsFile(rf); err != nil {
		d.dropRoot(r) // not started: nothing of it runs yet
		return fmt.Errorf("saving roots: %w", err)
	}
	d.log.Info("root added", "root", dir)
	d.spawn(func(ctx context.Context) { d.startRoot(ctx, r, "root added") })
	return nil
}

// RemoveRoot implements server.Controller: it stops watching dir, removes
// its files from the index, and records the removal in the roots file.
func (d *Daemon) RemoveRoot(dir string) error {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	d.ctlMu.Lock()
	defer d.ctlMu.Unlock()
	var r *rootState
	for _, x := range d.rootList() {
		if x.path == dir || x.path == resolved(dir) {
			r = x
		}
	}
	if r == nil {
		var paths []string
		for _, x := range d.rootList() {
			paths = append(paths, x.path)
		}
		return fmt.Errorf("%w: %s is not a root (roots: %s)", server.ErrBadRoot, dir, strings.Join(paths, ", "))
	}
	rf, err := d.loadRootsFile()
	if err != nil {
		return err
	}
	rf.Added = slices.DeleteFunc(rf.Added, func(p string) bool { return p == r.path })
	if slices.Contains(d.cfg.Roots, r.path) && !slices.Contains(rf.Removed, r.path) {
		rf.Removed = append(rf.Removed, r.path)
	}
	if err := d.saveRootsFile(rf); err != nil {
		return fmt.Errorf("saving roots: %w", err)
	}
	d.dropRoot(r)
	d.log.Info("root removed", "root", r.path)
	return nil
}

// Roots implements server.Controller.
func (d *Daemon) Roots() []ipc.RootStatus {
	var out []ipc.RootStatus
	for _, r := range d.rootList() {
		st := r.status()
		st.Watched = d.watchedUnder(r.path)
		out = append(out, st)
	}
	return out
}

// RootPaths implements server.RootPather: the roots' paths, without the
// status Roots gathers for each, for the check of every prefix a query
// names.
var _ server.RootPather = (*Daemon)(nil)

func (d *Daemon) RootPaths() []string {
	var out []string
	for _, r := range d.rootList() {
		out = append(out, r.path)
	}
	return out
}

// Rescan implements server.Controller.
func (d *Daemon) Rescan(dir string) ([]string, error) {
	if dir == "" {
		var out []string
		for _, r := range d.rootList() {
			d.requestScan(r, r.path, false, "rescan asked for")
			out = append(out, r.path)
		}
		return out, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", server.ErrBadRoot, dir, err)
	}
	real := resolved(abs)
	r := d.rootOf(real)
	if r == nil {
		return nil, fmt.Errorf("%w: %s is not under any root", server.ErrBadRoot, dir)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", server.ErrBadRoot, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", server.ErrBadRoot, dir)
	}
	d.requestScan(r, real, false, "rescan asked for")
	return []string{real}, nil
}
