package fingerprint

import (
	"math/rand/v2"
	"testing"
)

// fuzzParams are small parameter sets, so that short fuzz inputs give many
// fingerprints, and the defaults.
var fuzzParams = []Params{
	{Scheme: Manber, Window: 8, Bits: 0},
	{Scheme: Manber, Window: 8, Bits: 1},
	{Scheme: Manber, Window: 8, Bits: 2, ModBits: 30},
	{Scheme: Manber, Window: 9, Bits: 3},
	{Scheme: Manber, Window: 13, Bits: 4, ModBits: 30},
	{Scheme: Manber},
	{Scheme: Chunks, MinChunk: 1, AvgChunk: 16, MaxChunk: 17},
	{Scheme: Chunks, MinChunk: 1, AvgChunk: 16, MaxChunk: 64},
	{Scheme: Chunks, MinChunk: 5, AvgChunk: 32, MaxChunk: 100},
	{Scheme: Chunks},
	{Scheme: Chunks, MinChunk: 70, AvgChunk: 128, MaxChunk: 200},
	{Scheme: Chunks, MinChunk: 40, AvgChunk: 64, MaxChunk: 100},
}

// FuzzSketcher writes arbitrary bytes through a Sketcher in arbitrary pieces
// and checks the output against the invariants of the scheme, the naive
// references and a single Write. Run it with a short minimization time, as
//
//	go test -run '^$' -fuzz FuzzSketcher -fuzztime 30s -fuzzminimizetime 2s ./index/fingerprint/
//
// since the references are slow enough that minimizing each new input for the
// default minute leaves little time for fuzzing.
func FuzzSketcher(f *testing.F) {
	f.Add([]byte("hello, world\n"), uint64(1), uint8(0))
	f.Add(randomBytes(1, 600), uint64(2), uint8(1))
	f.Add(textBytes(2, 600), uint64(3), uint8(6))
	f.Add(make([]byte, 300), uint64(4), uint8(7))
	f.Add(tagSoup(5, 600), uint64(5), uint8(8))
	f.Add([]byte{0x00, 0x00, 0x65, 0x00, 0x74, 0x74, 0x00, 0x01}, uint64(6), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, mode uint8) {
		p := mustNormalize(t, fuzzParams[int(mode)%len(fuzzParams)])
		r := rand.New(rand.NewPCG(seed, uint64(mode)))
		var sizes []int
		for total := 0; total < len(data); {
			n := r.IntN(min(len(data), 300) + 2)
			sizes = append(sizes, n)
			total += n
		}
		fps, sum := sketch(t, p, data, sizes)
		if err := checkInvariants(p, data, fps); err != nil {
			t.Fatal(err)
		}
		one, oneSum := sketch(t, p, data, nil)
		if d := diffFingerprints(fps, one); d != "" || sum != oneSum {
			t.Fatalf("%v: pieces %v differ from one Write: %s; summary %+v, want %+v", p, sizes, d, sum, oneSum)
		}
		if d := diffFingerprints(fps, naive(data, p)); d != "" {
			t.Fatalf("%v: differ from the reference: %s", p, d)
		}
		checkSummary(t, data, sum)
	})
}
