package main

import (
	"io/fs"
	"path/filepath"
	"sync"
	"time"
)

// diskUse is what the files under a directory take: the sum of their
// sizes, and of the disk blocks allocated to them, which is larger where
// space is reserved beyond a file's end (Pebble preallocated each
// write-ahead log with fallocate's KEEP_SIZE); and of Bytes, those of
// Pebble's write-ahead logs (*.log) and tables (*.sst).
type diskUse struct {
	Bytes, Allocated int64
	Logs, Tables     int64
}

// diskUseOf sums the sizes and allocated blocks of the regular files under
// dir; files that vanish while it walks are left out.
func diskUseOf(dir string) diskUse {
	var u diskUse
	filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			if fi, err := de.Info(); err == nil {
				u.Bytes += fi.Size()
				u.Allocated += allocatedBytes(fi)
				switch filepath.Ext(p) {
				case ".log":
					u.Logs += fi.Size()
				case ".sst":
					u.Tables += fi.Size()
				}
			}
		}
		return nil
	})
	return u
}

// diskPeakEvery is how often watchDisk looks: often enough to see a
// compaction's output beside its inputs, which last as long as the
// compaction writes (tens of milliseconds on a small index and more).
const diskPeakEvery = 15 * time.Millisecond

// watchDisk polls diskUseOf(dir) every diskPeakEvery until the returned
// func is called, which returns the largest sizes seen: Bytes, Logs and
// Tables those of the poll of the largest Bytes, Allocated its own
// maximum (the two need not peak at the same poll).
func watchDisk(dir string) (stop func() diskUse) {
	var (
		peak diskUse
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	look := func() {
		u := diskUseOf(dir)
		u.Allocated = max(peak.Allocated, u.Allocated)
		if u.Bytes > peak.Bytes {
			peak = u
		}
		peak.Allocated = u.Allocated
	}
	wg.Go(func() {
		t := time.NewTicker(diskPeakEvery)
		defer t.Stop()
		for {
			look()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() diskUse {
		close(done)
		wg.Wait()
		look()
		return peak
	}
}
