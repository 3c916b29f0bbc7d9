package index_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
)

var (
	benchRemoveFiles = flag.Int("bench.removefiles", 50_000, "files BenchmarkRemoveTree indexes, then removes")
	benchRemoveSize  = flag.Int("bench.removesize", 4000, "mean size of the files of BenchmarkRemoveTree, in bytes")
	benchFlushRate   = flag.Float64("bench.tablembps", 0, "BenchmarkRemoveTree: Pebble writes its tables at most this many MB/s during the removal, as on a slow disk (0: as fast as it can)")
)

// slowTables is a vfs.FS whose tables take writes at most rate bytes a
// second while on is set: a disk slow to take flushes and compactions.
type slowTables struct {
	vfs.FS
	rate float64
	on   *atomic.Bool
}

func (fs slowTables) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return slowTable{f, fs}, nil
}

type slowTable struct {
	vfs.File
	fs slowTables
}

func (f slowTable) Write(p []byte) (int, error) {
	if f.fs.on.Load() {
		time.Sleep(time.Duration(float64(len(p)) / f.fs.rate * float64(time.Second)))
	}
	return f.File.Write(p)
}

// stallCounter is a slog.Handler that counts Pebble's write stalls (the
// index logs each at Warn, and its end at Info) and their time, and drops
// every line.
type stallCounter struct{ n, ns, began *atomic.Int64 }

func newStallCounter() stallCounter {
	return stallCounter{new(atomic.Int64), new(atomic.Int64), new(atomic.Int64)}
}

func (h stallCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h stallCounter) Handle(_ context.Context, r slog.Record) error {
	switch r.Message {
	case "pebble write stall":
		h.n.Add(1)
		h.began.Store(r.Time.UnixNano())
	case "pebble write stall ended":
		h.ns.Add(r.Time.UnixNano() - h.began.Load())
	}
	return nil
}
func (h stallCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h stallCounter) WithGroup(string) slog.Handler      { return h }

// BenchmarkRemoveTree forgets a tree of small files (-bench.removefiles,
// 50,000 by default, of 2 to 6 KB: about 16 fingerprints each), as sifd
// does when a root is removed: "each" removes them one Remove at a time, as
// sifd's workers did; "batches" removes them 64 at a time with
// RemovePaths, waiting out Pebble's backlog (WaitBacklog) before each
// batch, as sifd does now. stalls/op counts Pebble's write stalls and
// stall-s/op their time (every write waits meanwhile), wal-MB/op the bytes
// the removal put through Pebble's log and memtables (what fills them and,
// past what flushes drain, stalls writes). The time runs until the
// memtables are flushed, not the compactions left. -bench.tablembps makes
// the disk slow to take tables.
//
// Measured on a 2-core machine (load 0.9-1.4): of 2-6 KB, each 2.1 s,
// batches 1.9-2.1 s, 15.3 and 14.7 MB through the log; of 10-30 KB
// (-bench.removesize 20000), 8.1 s and 5.2 s, 57.9 and 55.7 MB; no stalls,
// this disk keeps up. Of 20-60 KB with tables written at 2 MB/s
// (-bench.removesize 40000 -bench.tablembps 2): each 34.2 s with 4 stalls
// holding writes for 1.9 s in all, batches 36.8 s without a stall.
func BenchmarkRemoveTree(b *testing.B) {
	n := *benchRemoveFiles
	slow := new(atomic.Bool)
	open := func(b *testing.B) (*index.Index, stallCounter, []string) {
		b.Helper()
		stalls := newStallCounter()
		opts := &index.Options{Params: manber, Logger: slog.New(stalls)}
		if *benchFlushRate > 0 {
			opts.FS = slowTables{FS: vfs.Default, rate: *benchFlushRate * 1e6, on: slow}
		}
		ix, err := index.Open(filepath.Join(b.TempDir(), "db"), opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ix.Close() })
		rng := rand.New(rand.NewPCG(5, 5))
		paths := make([]string, n)
		for i := range paths {
			paths[i] = fmt.Sprintf("/tree/%03d/%05d.txt", i/500, i)
			size := *benchRemoveSize/2 + rng.IntN(*benchRemoveSize)
			if _, err := ix.Put(index.FileMeta{Path: paths[i], Size: int64(size), Ino: uint64(i + 1)}, benchSketch(rng, size)); err != nil {
				b.Fatal(err)
			}
		}
		if err := ix.Compact(context.Background()); err != nil {
			b.Fatal(err)
		}
		stalls.n.Store(0)
		stalls.ns.Store(0)
		return ix, stalls, paths
	}
	run := func(b *testing.B, remove func(*index.Index, []string) error) {
		var stalls, stallNs int64
		var wal uint64
		for b.Loop() {
			b.StopTimer()
			ix, st, paths := open(b)
			wal0 := ix.WALBytesIn()
			slow.Store(true)
			b.StartTimer()
			if err := remove(ix, paths); err != nil {
				b.Fatal(err)
			}
			if err := ix.FlushMemtables(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			slow.Store(false)
			if s, _ := ix.Stats(); s.Files != 0 {
				b.Fatalf("%d files left", s.Files)
			}
			stalls += st.n.Load()
			stallNs += st.ns.Load()
			wal += ix.WALBytesIn() - wal0
			ix.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(stalls)/float64(b.N), "stalls/op")
		b.ReportMetric(float64(stallNs)/1e9/float64(b.N), "stall-s/op")
		b.ReportMetric(float64(wal)/float64(b.N)/1e6, "wal-MB/op")
	}
	b.Run("each", func(b *testing.B) {
		run(b, func(ix *index.Index, paths []string) error {
			for _, p := range paths {
				if err := ix.Remove(p); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("batches", func(b *testing.B) {
		run(b, func(ix *index.Index, paths []string) error {
			for len(paths) > 0 {
				if err := ix.WaitBacklog(context.Background()); err != nil {
					return err
				}
				k := min(64, len(paths)) // as sifd does (daemon.forgetBatch)
				if _, _, err := ix.RemovePaths(paths[:k]); err != nil {
					return err
				}
				paths = paths[k:]
			}
			return nil
		})
	})
}
