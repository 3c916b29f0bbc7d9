package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// The ballast is a file of zeros in the state directory, on the index's
// filesystem, that holds room for the index when the disk fills (the way
// CockroachDB keeps an emergency ballast beside Pebble). When a write of
// Pebble's finds the disk full, the index calls back (vfs.OnDiskFull,
// through index.Options.OnDiskFull): the daemon deletes the ballast and
// puts its writes on hold, and Pebble's write, tried once more, finds the
// room it needs to finish what it was doing (a write of its log, or the
// next one). The ballast is written again once the disk has twice its size
// free, above the minimum kept free.
//
// Its size is a sixty-fourth of the filesystem, at most maxBallast; a
// filesystem too small for minBallast gets none, nor does an index
// directory on another filesystem than the state directory.
const (
	ballastName = "ballast"
	maxBallast  = 8 << 20
	minBallast  = 256 << 10
)

// ballast is the ballast of an index directory.
type ballast struct {
	dir string // the state directory, which holds the file
	db  string // the index directory, for which it holds room
	log *slog.Logger
}

func newBallast(db string, log *slog.Logger) ballast {
	return ballast{dir: StateDir(db), db: db, log: log}
}

func (b ballast) path() string { return filepath.Join(b.dir, ballastName) }

// size returns the size of the ballast for the filesystem of the index,
// or 0 for none.
func (b ballast) size() uint64 {
	if !sameFilesystem(b.dir, b.db) {
		return 0
	}
	total, _, err := diskSize(b.dir)
	if err != nil {
		return 0
	}
	size := min(total/64, maxBallast)
	if size < minBallast {
		return 0
	}
	return size
}

// sameFilesystem reports whether a and b are on one filesystem.
func sameFilesystem(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false
	}
	da, _ := fileID(sa)
	db, _ := fileID(sb)
	return da == db
}

// keep writes the ballast unless it is there, or the disk lacks room for
// it with as much again free above minFree, the minimum kept free. It is
// called at start and at every fault poll while writes are not on hold.
func (b ballast) keep(minFree uint64) {
	size := b.size()
	if size == 0 {
		return
	}
	path := b.path()
	if st, err := os.Stat(path); err == nil && uint64(st.Size()) >= size {
		return
	}
	if _, free, err := diskSize(b.dir); err != nil || free < 2*size+minFree {
		return
	}
	if err := writeBallast(path, size); err != nil {
		b.log.Debug("cannot write the ballast", "path", path, "err", err)
		return
	}
	b.log.Debug("ballast written: room held for the index when the disk fills", "path", path, "bytes", size)
}

// owed returns the free space, beyond what writes need, that the disk
// must have before writes resume after it filled: room to write the
// ballast again (as keep asks), when it is missing. Resuming with less
// would fill the disk again at once, with no ballast left.
func (b ballast) owed() uint64 {
	size := b.size()
	if size == 0 {
		return 0
	}
	if st, err := os.Stat(b.path()); err == nil && uint64(st.Size()) >= size {
		return 0
	}
	return 2 * size
}

// writeBallast writes size bytes of zeros to path, synced, through a
// temporary file, so that the ballast is whole or absent.
func writeBallast(path string, size uint64) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for left := size; left > 0 && err == nil; {
		n := min(left, uint64(len(buf)))
		_, err = f.Write(buf[:n])
		left -= n
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// onDiskFull is called by the index when a write of Pebble's finds the
// disk full, before it is tried once more; every write waits meanwhile.
// It deletes the ballast and puts index writes on hold.
func (f *faults) onDiskFull() {
	freed := false
	if err := os.Remove(f.ballast.path()); err == nil {
		freed = true
	}
	f.log.Warn("the index's disk is full", "ballast_deleted", freed, "db", f.db)
	f.holdWrites(&os.PathError{Op: "write", Path: f.db, Err: syscall.ENOSPC}, false)
}
