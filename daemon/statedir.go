package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// The state directory holds what the daemon keeps besides the index: the
// roots file (roots.json) and the run marker (sifd.running). It lies beside
// the index directory, named after it: StateDir(DB), DB + ".state". The
// index directory is Pebble's alone, so moving a damaged index aside,
// deleting it or emptying it never takes the roots changed with sifctl or
// the marker of an unclean run along; and a directory of its own, not the
// index's parent, keeps two daemons with indexes in one directory apart.
//
// sif before this layout kept both files in the index directory; the first
// start moves them over (migrateState).

// StateDir returns the state directory of the index directory db.
func StateDir(db string) string { return filepath.Clean(db) + ".state" }

func (d *Daemon) stateDir() string { return StateDir(d.cfg.DB) }

// stateFiles are the files the state directory holds.
var stateFiles = []string{rootsFileName, markerName}

// migrateState creates the state directory, and moves into it the state
// files an older sif left in the index directory. A file already in the
// state directory wins; the old one is then left where it is, and logged.
func migrateState(db string, log *slog.Logger) error {
	dir := StateDir(db)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	for _, name := range stateFiles {
		old, cur := filepath.Join(db, name), filepath.Join(dir, name)
		if _, err := os.Lstat(old); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if _, err := os.Lstat(cur); err == nil {
			log.Warn("a state file from an older sif is left in the index directory: the state directory's wins; remove the old one",
				"old", old, "kept", cur)
			continue
		}
		if err := moveFile(old, cur); err != nil {
			return fmt.Errorf("moving %s to the state directory: %w", old, err)
		}
		log.Info("moved a state file out of the index directory", "from", old, "to", cur)
	}
	return nil
}

// moveFile renames old to cur, or copies and removes it when they are on
// different filesystems (an index directory that is a mount point).
func moveFile(old, cur string) error {
	err := os.Rename(old, cur)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	b, err := os.ReadFile(old)
	if err != nil {
		return err
	}
	if err := writeFileSync(cur, b); err != nil {
		return err
	}
	return os.Remove(old)
}

// restoreState puts back what a rebuild finds missing from the state
// directory, deleted with the index directory's parent: the directory, the
// roots file from the roots in effect, and this run's marker.
func (d *Daemon) restoreState() {
	if err := os.MkdirAll(d.stateDir(), 0o700); err != nil {
		d.log.Warn("cannot recreate the state directory", "dir", d.stateDir(), "err", err)
		return
	}
	if _, err := os.Stat(d.rootsFilePath()); errors.Is(err, fs.ErrNotExist) {
		d.saveCurrentRoots()
	}
	if _, err := os.Stat(d.marker.path); errors.Is(err, fs.ErrNotExist) {
		if _, _, err := d.marker.write(); err != nil {
			d.log.Warn("cannot write the run marker", "err", err)
		}
	}
}
