package fingerprint

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt from the current implementation")

const goldenFile = "testdata/golden.txt"

// TestGolden pins the exact output of every scheme on seeded inputs, so that
// any change to an algorithm, a constant or a table shows up here. After an
// intended change, rerun with -update and review the diff.
func TestGolden(t *testing.T) {
	inputs := []struct {
		name string
		data []byte
	}{
		{"random-1MiB", randomBytes(1, 1<<20)},
		{"text-512KiB", textBytes(2, 512<<10)},
		{"text-300", textBytes(3, 300)},       // sampled below the top level
		{"random-1500", randomBytes(4, 1500)}, // likewise, one level higher
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# Golden outputs of index/fingerprint; regenerate with go test -run TestGolden -update.\n")
	fmt.Fprintf(&out, "# Inputs: random-1MiB = randomBytes(1, 1<<20); text-512KiB = textBytes(2, 512<<10);\n")
	fmt.Fprintf(&out, "# text-300 = textBytes(3, 300); random-1500 = randomBytes(4, 1500).\n")
	for _, p := range []Params{
		{Scheme: Manber, Window: 50, Bits: 8}, // the paper's window and density
		{Scheme: Manber, Window: 50, Bits: 8, ModBits: 30},
		{Scheme: Manber, Window: 50, Bits: 6},
		{Scheme: Manber, Bits: 8, Target: 8},  // sif's default before small files were sampled for 16
		{Scheme: Manber},                      // sif's default
		{Scheme: Manber, Bits: 8, MinBits: 8}, // one density whatever the size
		{Scheme: Manber, Target: 32},
		{Scheme: Chunks},
		{Scheme: Chunks, AvgChunk: 1024},
		{Scheme: Chunks, AvgChunk: 64}, // MinChunk < 64: the hash carries over cuts
	} {
		p := mustNormalize(t, p)
		for _, in := range inputs {
			fps, sum := sketch(t, p, in.data, nil)
			fmt.Fprintf(&out, "\n%s %s\n", p, in.name)
			fmt.Fprintf(&out, "count %d\n", len(fps))
			for _, f := range fps[:min(10, len(fps))] {
				fmt.Fprintf(&out, "fp %d %d %#016x\n", f.Offset, f.Len, f.Hash)
			}
			fmt.Fprintf(&out, "digest %#016x\n", digest(fps))
			fmt.Fprintf(&out, "size %d\nstrong %x\ntype %v\nsum %v\nkey %d\n", sum.Size, sum.Strong, sum.Type, sum.Sum, sum.Key)
		}
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(goldenFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	got := strings.Split(out.String(), "\n")
	for i, w := range strings.Split(string(want), "\n") {
		if i >= len(got) || got[i] != w {
			g := "<missing>"
			if i < len(got) {
				g = got[i]
			}
			t.Fatalf("%s:%d: got\n\t%s\nwant\n\t%s\n(if the change is intended, rerun with -update)", goldenFile, i+1, g, w)
		}
	}
	if len(got) != len(strings.Split(string(want), "\n")) {
		t.Fatalf("%s: output has %d lines, file %d", goldenFile, len(got), len(strings.Split(string(want), "\n")))
	}
}

// digest hashes the full list of fingerprints: offset, length and hash of
// each, little-endian.
func digest(fps []Fingerprint) uint64 {
	h := xxh3.New()
	var b [20]byte
	for _, f := range fps {
		binary.LittleEndian.PutUint64(b[0:], uint64(f.Offset))
		binary.LittleEndian.PutUint32(b[8:], f.Len)
		binary.LittleEndian.PutUint64(b[12:], f.Hash)
		h.Write(b[:])
	}
	return h.Sum64()
}
