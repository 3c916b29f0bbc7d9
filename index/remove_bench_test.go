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

	"github.com/sif-dev/sif/index"
)

var (
	benchRemoveFiles = flag.Int("bench.removefiles", 50_000, "files BenchmarkRemoveTree indexes, then removes")
	benchRemoveSize  = flag.Int("bench.removesize", 4000, "mean size of the files of BenchmarkRemoveTree, in bytes")
)

// stallCounter is a slog.Handler that counts Pebble's write stalls (the
// index logs each at Warn) and drops every line.
type stallCounter struct{ n *atomic.Int64 }

func (h stallCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h stallCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "pebble write stall") && !strings.HasSuffix(r.Message, "ended") {
		h.n.Add(1)
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
// batch, as sifd does now. stalls/op counts Pebble's write stalls,
// wal-MB/op the bytes the removal put through Pebble's log and memtables
// (what fills them and, past what flushes drain, stalls writes); the
// time includes the wait for Pebble's flushes, which a stall would have
// waited for too, but not the compactions left after the last batch.
//
// Measured on a 2-core machine (load 1-1.5): of 2-6 KB, each 2.1-2.5 s,
// batches 2.2-2.3 s, 15.3 and 14.7 MB through the log; of 10-30 KB
// (-bench.removesize 20000), 9.2 s and 5.9 s, 57.9 and 55.7 MB. No
// stalls either way: this disk keeps up.
func BenchmarkRemoveTree(b *testing.B) {
	n := *benchRemoveFiles
	open := func(b *testing.B) (*index.Index, *atomic.Int64, []string) {
		b.Helper()
		stalls := new(atomic.Int64)
		ix, err := index.Open(filepath.Join(b.TempDir(), "db"), &index.Options{Params: manber, Logger: slog.New(stallCounter{stalls})})
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
		stalls.Store(0)
		return ix, stalls, paths
	}
	run := func(b *testing.B, remove func(*index.Index, []string) error) {
		var stalls int64
		var wal uint64
		for b.Loop() {
			b.StopTimer()
			ix, st, paths := open(b)
			wal0 := ix.WALBytesIn()
			b.StartTimer()
			if err := remove(ix, paths); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if s, _ := ix.Stats(); s.Files != 0 {
				b.Fatalf("%d files left", s.Files)
			}
			stalls += st.Load()
			wal += ix.WALBytesIn() - wal0
			ix.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(stalls)/float64(b.N), "stalls/op")
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
