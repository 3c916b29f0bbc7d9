package main

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestRepetitive: a query with fewer distinct fingerprints than needed is
// repetitive when varied content of its size would have had plenty (zeros,
// one repeated byte, a short pattern), not when it is merely small; and
// varied content of any size is not.
func TestRepetitive(t *testing.T) {
	if defaultMinFingerprints != index.DefaultMinFeatures {
		t.Fatalf("defaultMinFingerprints %d, the index's default %d", defaultMinFingerprints, index.DefaultMinFeatures)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	least := defaultMinFingerprints
	for _, scheme := range []fingerprint.Scheme{fingerprint.Manber, fingerprint.Chunks} {
		p, err := fingerprint.Params{Scheme: scheme}.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			data []byte
			want bool
		}{
			{"zeros", make([]byte, 3<<20), true},
			{"one byte", bytes.Repeat([]byte{'a'}, 100000), true},
			{"a short pattern", bytes.Repeat([]byte("abc\n"), 50000), true},
			{"zeros, 64 KiB", make([]byte, 64<<10), true},
			{"a few bytes", []byte("hello, world\n"), false},
			{"random, 1 MiB", random(1 << 20), false},
			{"random, 100 KiB", random(100 << 10), false},
		} {
			sk, err := fingerprint.SketchQuery(bytes.NewReader(c.data), p)
			if err != nil {
				t.Fatal(err)
			}
			if got := repetitive(p, sk.Size, len(sk.Features), least); got != c.want {
				t.Errorf("%s, %s: %d bytes, %d fingerprints (about %.0f expected): repetitive %v, want %v",
					scheme, c.name, sk.Size, len(sk.Features), expectedFingerprints(p, sk.Size), got, c.want)
			}
		}
	}
}
