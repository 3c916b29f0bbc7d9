package ipc

import (
	"bytes"
	"io"
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
