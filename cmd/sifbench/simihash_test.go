package main

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sif-dev/sif/index/fingerprint"
)

// TestSimiSweepAgainstAllPairs: the sweep over sorted keys makes a
// sum-table comparison for exactly the pairs that are key hits, and finds
// exactly the sum-table hits, that judging every pair finds, at every
// tolerance; on sets of edited copies of a few files of several sizes, so
// that there are hits and misses at each.
func TestSimiSweepAgainstAllPairs(t *testing.T) {
	sk, err := fingerprint.NewSketcher(fingerprint.DefaultParams(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var fs []simiFile
	for _, size := range []int{600, 3000, 3100, 9000} {
		base := make([]byte, size)
		for i := range base {
			base[i] = "  etaoinshrdlu\n\x00"[rng.IntN(16)]
		}
		for range 40 {
			b := bytes.Clone(base)
			for range rng.IntN(40) {
				b[rng.IntN(len(b))] = byte(rng.IntN(256))
			}
			fs = append(fs, simiSketch(sk, "x.txt", b[:len(b)-rng.IntN(30)]))
		}
	}
	all := allPairs(fs, skewKey)[0]
	misses := 0
	for i, tol := range simiTolerances {
		g := sweep(fs, tol)
		if g.Comparisons != all[i].KeyHits || g.Similar != all[i].SumHits {
			t.Errorf("tolerance %g: sweep compared %d pairs and found %d; every pair judged: %d key hits, %d sum-table hits",
				tol, g.Comparisons, g.Similar, all[i].KeyHits, all[i].SumHits)
		}
		if all[i].SumHits > 0 && all[i].SumHits < all[i].KeyHits && all[i].KeyHits < g.Pairs {
			misses++
		}
	}
	if misses == 0 {
		t.Errorf("no tolerance with key hits that are not sum-table hits and pairs that are neither: %+v", all)
	}
}

// TestSimiSketchKeys: the uniform key is the sum of the sum table, the
// skew key the Sketcher's, and the extension key's low half the skew key.
func TestSimiSketchKeys(t *testing.T) {
	sk, err := fingerprint.NewSketcher(fingerprint.DefaultParams(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("the quick brown fox\x00\x00"), 50)
	f := simiSketch(sk, "a.TXT", data)
	var sum uint64
	for _, n := range f.sum {
		sum += uint64(n)
	}
	if f.uniform != sum || f.skew != fingerprint.SkewKey(f.sum) || uint32(f.ext) != f.skew || f.size != int64(len(data)) {
		t.Errorf("%+v: uniform %d, want %d; skew %d, want %d", f, f.uniform, sum, f.skew, fingerprint.SkewKey(f.sum))
	}
	if g := simiSketch(sk, "b.txt", data); g.ext != f.ext || simiSketch(sk, "b.go", data).ext == f.ext {
		t.Error("the extension key does not depend on the extension alone")
	}
	if simiSketch(sk, "c", data).sum != f.sum {
		t.Error("the sum table changed with the name")
	}
}
