package index_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

var benchGroupFiles = flag.Int("bench.groupfiles", 200_000, "files in the index of BenchmarkGroupsMemory")

// groupsIndex builds an index of n files like the million-file tree of
// sifbench million: files of 200 B–8 KB (log-uniform), in 16 files per
// directory; 15 % identical copies and 10 % near-copies (50–95 % of their
// features kept) of earlier files.
func groupsIndex(b *testing.B, n int) *index.Index {
	ix := openBench(b)
	rng := rand.New(rand.NewPCG(5, 6))
	var made []*fingerprint.Sketch
	start := time.Now()
	for i := range n {
		var sk *fingerprint.Sketch
		switch k := rng.IntN(100); {
		case len(made) > 0 && k < 15:
			sk = made[rng.IntN(len(made))]
		case len(made) > 0 && k < 25:
			sk = derive(rng, made[rng.IntN(len(made))], 0.5+0.45*rng.Float64())
		default:
			sk = benchSketch(rng, int(200*math.Pow(40, rng.Float64())))
		}
		made = append(made, sk)
		path := fmt.Sprintf("/srv/d%04d/%02d/f%07d.txt", i/16%4096, i%7, i)
		if _, err := ix.Put(index.FileMeta{Path: path, Size: sk.Size, Ino: uint64(i + 1)}, sk); err != nil {
			b.Fatal(err)
		}
	}
	if err := ix.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d files indexed in %.1f s", n, time.Since(start).Seconds())
	return ix
}

// peakHeap samples the bytes of live and unswept heap objects every
// millisecond while fn runs, and returns the highest above what it was
// before (after a collection).
func peakHeap(fn func()) (peak uint64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > base && v-base > peak {
				peak = v - base
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return peak
}

// BenchmarkGroupsMemory runs Groups, the implementation it replaced
// (reference) and Dupes on an index of -bench.groupfiles files (200,000
// by default), and reports the peak heap above the index's own
// (peak-MB, sampled every millisecond), the bytes allocated per indexed
// file, and the passes Groups made over the postings.
func BenchmarkGroupsMemory(b *testing.B) {
	n := *benchGroupFiles
	ix := groupsIndex(b, n)
	var groups int
	run := func(b *testing.B, fn func() (int, error)) {
		var peak uint64
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		for b.Loop() {
			p := peakHeap(func() {
				var err error
				if groups, err = fn(); err != nil {
					b.Fatal(err)
				}
			})
			peak = max(peak, p)
		}
		runtime.ReadMemStats(&ms1)
		b.ReportMetric(float64(peak)/1e6, "peak-MB")
		b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(n), "B/file")
		b.ReportMetric(float64(groups), "sets")
	}
	var want int
	b.Run("reference", func(b *testing.B) {
		run(b, func() (int, error) { gs, err := ix.GroupsReference(index.GroupOptions{}); return len(gs), err })
		want = groups
	})
	b.Run("streaming", func(b *testing.B) {
		run(b, func() (int, error) {
			gs, err := ix.Groups(context.Background(), index.GroupOptions{})
			return len(gs), err
		})
		b.ReportMetric(float64(index.GroupPasses()), "passes")
		if want != 0 && groups != want {
			b.Fatalf("%d groups, the reference found %d", groups, want)
		}
	})
	b.Run("dupes", func(b *testing.B) {
		run(b, func() (int, error) { ds, err := ix.Dupes(context.Background(), ""); return len(ds), err })
	})
}
