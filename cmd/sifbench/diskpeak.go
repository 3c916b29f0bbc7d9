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

// keep makes p the peak of itself and u: Bytes, Logs and Tables those of
// the one with the larger Bytes, Allocated the larger of the two (they
// need not peak at the same poll).
func (p *diskUse) keep(u diskUse) {
	u.Allocated = max(p.Allocated, u.Allocated)
	if u.Bytes > p.Bytes {
		*p = u
	}
	p.Allocated = u.Allocated
}

// diskWatch polls diskUseOf(dir) every diskPeakEvery and keeps the peak.
type diskWatch struct {
	dir  string
	mu   sync.Mutex
	most diskUse
	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// watchDisk starts watching dir until stop is called.
func watchDisk(dir string) *diskWatch {
	w := &diskWatch{dir: dir, done: make(chan struct{})}
	w.wg.Go(func() {
		t := time.NewTicker(diskPeakEvery)
		defer t.Stop()
		for {
			w.look()
			select {
			case <-w.done:
				return
			case <-t.C:
			}
		}
	})
	return w
}

func (w *diskWatch) look() {
	u := diskUseOf(w.dir)
	w.mu.Lock()
	w.most.keep(u)
	w.mu.Unlock()
}

// peak returns the peak so far.
func (w *diskWatch) peak() diskUse {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.most
}

// stop ends the watch, after one last look, and returns the peak; it may
// be called more than once.
func (w *diskWatch) stop() diskUse {
	w.once.Do(func() {
		close(w.done)
		w.wg.Wait()
		w.look()
	})
	return w.peak()
}
