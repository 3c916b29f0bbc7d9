package ipc

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/index/fingerprint"
)

// text returns n pseudo-random lowercase letters, the same for the same seed.
func text(seed byte, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed) * 2654435761
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = 'a' + byte(x>>24)%26
	}
	return b
}

// TestReadQuery: a query up to MaxContent travels as its bytes, a larger
// one as a signature whose level keeps it near exact.MaxSamples hashes.
func TestReadQuery(t *testing.T) {
	p := fingerprint.DefaultParams()
	small := text(6, 5000)
	_, d, err := ReadQuery(bytes.NewReader(small), p, ReadOptions{Compressed: true})
	if err != nil || !bytes.Equal(d.Content, small) || d.Windows != nil || d.Compressed != exact.CompressedSize(small) {
		t.Fatalf("small: %v, content %d bytes, windows %v, compressed %d", err, len(d.Content), d.Windows, d.Compressed)
	}
	big := text(7, 3<<20)
	sk, d, err := ReadQuery(iotest{bytes.NewReader(big)}, p, ReadOptions{})
	if err != nil || d.Content != nil || d.Windows == nil || sk.Size != int64(len(big)) {
		t.Fatalf("big: %v %+v", err, d)
	}
	level := exact.SignatureLevel(int64(len(big)))
	want := exact.Signature(big, level)
	if d.Windows.Level != level || len(d.Windows.Hashes) != 8*len(want) {
		t.Fatalf("big: level %d, %d hashes; want %d, %d", d.Windows.Level, len(d.Windows.Hashes)/8, level, len(want))
	}
	if !bytes.Equal(d.Windows.Hashes, NewWindows(level, want).Hashes) {
		t.Fatal("big: the signature differs from exact.Signature's")
	}
}

// iotest hands out reads of odd sizes.
type iotest struct{ r io.Reader }

func (o iotest) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 77777)]) }

// TestQuerySketchesLeaveSimiHash: the sketches a query sends (SketchFile,
// QueryFile, ReadQuery) skip the SimiHash pass, which no query carries,
// and keep everything a query does carry equal to a full sketch's.
func TestQuerySketchesLeaveSimiHash(t *testing.T) {
	p := fingerprint.DefaultParams()
	data := text(9, 20000)
	path := filepath.Join(t.TempDir(), "q.txt")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	full, err := fingerprint.SketchReader(bytes.NewReader(data), p)
	if err != nil {
		t.Fatal(err)
	}
	if full.Key == 0 && full.Sum == (fingerprint.SumTable{}) {
		t.Fatal("a full sketch has no SimiHash: the test says nothing")
	}
	fromFile, err := SketchFile(path, p)
	if err != nil {
		t.Fatal(err)
	}
	read, _, err := ReadQuery(bytes.NewReader(data), p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, sk := range map[string]*fingerprint.Sketch{"SketchFile": fromFile, "ReadQuery": read} {
		if sk.Key != 0 || sk.Sum != (fingerprint.SumTable{}) {
			t.Errorf("%s: SimiHash computed (key %d)", name, sk.Key)
		}
		if sk.Strong != full.Strong || sk.Size != full.Size || sk.Type != full.Type || !slices.Equal(sk.Features, full.Features) {
			t.Errorf("%s: the sketch differs from a full one's in what a query carries", name)
		}
	}
}
