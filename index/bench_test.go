package index_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

var benchMem = flag.Bool("bench.mem", false, "run the benchmarks on an in-memory filesystem")

// benchSketch is a file of about size bytes under manber defaults (one
// feature per 256 bytes): mostly rare fingerprints, a few common ones
// (boilerplate held by many files).
func benchSketch(rng *rand.Rand, size int) *fingerprint.Sketch {
	n := max(size/256, 1)
	fs := make([]fingerprint.Feature, 0, n)
	for range n {
		h := topHash(rng.Uint64())
		if rng.IntN(20) == 0 {
			h = poolHash(rng.IntN(1000))
		}
		fs = append(fs, fingerprint.Feature{Hash: h, Count: 1})
	}
	sk := sketchOf(manber, fmt.Sprint(rng.Uint64()), int64(size), canonicalTest(fs)...)
	return sk
}

// derive returns a file holding share of base's features and new ones.
func derive(rng *rand.Rand, base *fingerprint.Sketch, share float64) *fingerprint.Sketch {
	var fs []fingerprint.Feature
	for _, f := range base.Features {
		if rng.Float64() < share {
			fs = append(fs, f)
		} else {
			fs = append(fs, fingerprint.Feature{Hash: topHash(rng.Uint64()), Count: 1})
		}
	}
	return sketchOf(manber, fmt.Sprint(rng.Uint64()), base.Size, canonicalTest(fs)...)
}

func openBench(b *testing.B) *index.Index {
	dir := filepath.Join(b.TempDir(), "db")
	opts := &index.Options{Params: manber} // the parameters benchSketch makes sketches with
	if *benchMem {
		opts.FS = vfs.NewMem()
	}
	ix, err := index.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	return ix
}

// BenchmarkPut indexes files of 25 KB (about 100 features) in an on-disk
// index: new files, edited files (a tenth of the features changed), and
// files replaced by unrelated content. MB/s is file bytes indexed per second.
func BenchmarkPut(b *testing.B) {
	const size = 25_000
	for _, mode := range []string{"new", "edit", "replace"} {
		b.Run(mode, func(b *testing.B) {
			ix := openBench(b)
			rng := rand.New(rand.NewPCG(1, 2))
			sketches := make([]*fingerprint.Sketch, 1000)
			for i := range sketches {
				sketches[i] = benchSketch(rng, size)
			}
			if mode != "new" {
				for i, sk := range sketches {
					if _, err := ix.Put(index.FileMeta{Path: fmt.Sprintf("/bench/%05d.go", i), Size: size}, sk); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.SetBytes(size)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var sk *fingerprint.Sketch
				switch mode {
				case "new":
					sk = benchSketch(rng, size)
				case "edit":
					sk = derive(rng, sketches[i%len(sketches)], 0.9)
					sketches[i%len(sketches)] = sk
				case "replace":
					sk = sketches[(i+1+rng.IntN(len(sketches)-1))%len(sketches)]
				}
				path := fmt.Sprintf("/bench/%05d.go", i%len(sketches))
				if mode == "new" {
					path = fmt.Sprintf("/bench/%07d.go", i)
				}
				if _, err := ix.Put(index.FileMeta{Path: path, Size: size}, sk); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// similarIndex builds an index of n random files of 10..30 KB (about 60
// features each), and plants, for each of the queries, files holding 90,
// 60, 40 and 20 % of it.
func similarIndex(b *testing.B, n, queries int) (*index.Index, []*fingerprint.Sketch) {
	return similarIndexCopies(b, n, queries, 1)
}

// similarIndexCopies is similarIndex with each of the n random files, and
// each planted file, indexed under copies paths, as in a tree of releases.
func similarIndexCopies(b *testing.B, n, queries, copies int) (*index.Index, []*fingerprint.Sketch) {
	ix := openBench(b)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		sk := benchSketch(rng, 10_000+rng.IntN(20_000))
		for c := range copies {
			if _, err := ix.Put(index.FileMeta{Path: fmt.Sprintf("/v%d/src/%02d/%05d.go", c, i%97, i), Size: sk.Size}, sk); err != nil {
				b.Fatal(err)
			}
		}
	}
	qs := make([]*fingerprint.Sketch, queries)
	for i := range qs {
		qs[i] = benchSketch(rng, 15_000)
		for _, share := range []float64{0.9, 0.6, 0.4, 0.2} {
			sk := derive(rng, qs[i], share)
			for c := range copies {
				path := fmt.Sprintf("/v%d/planted/%03d/%.0f.go", c, i, 100*share)
				if _, err := ix.Put(index.FileMeta{Path: path, Size: sk.Size}, sk); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// Let the benchmark measure a settled index, not one still compacting.
	if err := ix.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ix, qs
}

// BenchmarkSimilar queries a 15 KB file (about 60 features) against an
// index of 10,000 files; MB/s is query bytes per second.
func BenchmarkSimilar(b *testing.B) {
	ix, qs := similarIndex(b, 10_000, 64)
	b.SetBytes(15_000)
	b.ReportAllocs()
	var matches int
	i := 0
	for b.Loop() {
		res, err := ix.Similar(context.Background(), index.Query{Path: "/query.go", Sketch: qs[i%len(qs)]}, index.QueryOptions{})
		if err != nil {
			b.Fatal(err)
		}
		matches += len(res.Matches)
		i++
	}
	b.ReportMetric(float64(matches)/float64(i), "matches/op")
	if matches < 2*i {
		b.Fatalf("%d matches in %d queries: the planted files were not found", matches, i)
	}
}

// BenchmarkSimilarCopies is BenchmarkSimilar on a tree of 4 releases of
// 2,500 files: 10,000 files, every one with 3 identical copies.
func BenchmarkSimilarCopies(b *testing.B) {
	ix, qs := similarIndexCopies(b, 2_500, 64, 4)
	b.SetBytes(15_000)
	b.ReportAllocs()
	var matches int
	i := 0
	for b.Loop() {
		res, err := ix.Similar(context.Background(), index.Query{Path: "/query.go", Sketch: qs[i%len(qs)]}, index.QueryOptions{})
		if err != nil {
			b.Fatal(err)
		}
		matches += len(res.Matches)
		i++
	}
	b.ReportMetric(float64(matches)/float64(i), "matches/op")
	if matches < 8*i {
		b.Fatalf("%d matches in %d queries: the planted files and their copies were not found", matches, i)
	}
}

// BenchmarkGroups runs all-against-all over 10,000 files.
func BenchmarkGroups(b *testing.B) {
	ix, _ := similarIndex(b, 10_000, 64)
	st, _ := ix.Stats()
	b.SetBytes(int64(st.Bytes))
	for b.Loop() {
		gs, err := ix.Groups(context.Background(), index.GroupOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(gs) < 64 {
			b.Fatalf("%d groups, want at least the 64 planted", len(gs))
		}
	}
}
