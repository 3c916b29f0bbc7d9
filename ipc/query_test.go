package ipc

import (
	"bytes"
	"encoding/binary"
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

// repeatReader yields n bytes repeating pattern, without holding them.
type repeatReader struct {
	pattern []byte
	n, off  int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.off)]
	k := len(r.pattern)
	for i := 0; i < len(p); {
		i += copy(p[i:], r.pattern[(r.off+int64(i))%int64(k):])
	}
	r.off += int64(len(p))
	return len(p), nil
}

// streamSignature is the level L signature of the stream r, hashed as it
// streams (the reference ReadQuery's must equal).
func streamSignature(t *testing.T, r io.Reader, level int) []uint64 {
	t.Helper()
	var h exact.Hasher
	var kept, scratch []uint64
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		scratch = h.Append(scratch[:0], buf[:n])
		for _, x := range scratch {
			if exact.Keep(x, level) {
				kept = append(kept, x)
			}
		}
		if len(kept) > 1<<20 {
			kept = exact.SignatureOf(kept, level)
		}
		if err == io.EOF {
			return exact.SignatureOf(kept, level)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadQueryRepeats: a query of few distinct windows however long (all
// zeros, one repeated byte, a short pattern) gets the signature its size
// calls for, a valid one, not a level raised by its repeats.
func TestReadQueryRepeats(t *testing.T) {
	p := fingerprint.DefaultParams()
	for _, c := range []struct {
		name    string
		pattern []byte
		size    int64
	}{
		{"zeros", []byte{0}, 16 << 20},
		{"one byte", []byte{'a'}, 16 << 20},
		{"0xff", []byte{0xff}, 9 << 20},
		{"a short pattern", []byte("0123456789abcdef0123456789ABCDEF!"), 16 << 20},
		{"zeros past MaxContent", []byte{0}, MaxContent + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			sk, d, err := ReadQuery(&repeatReader{pattern: c.pattern, n: c.size}, p, ReadOptions{Compressed: true})
			if err != nil {
				t.Fatal(err)
			}
			if sk.Size != c.size || d.Windows == nil {
				t.Fatalf("size %d, windows %v", sk.Size, d.Windows)
			}
			level := exact.SignatureLevel(c.size)
			if d.Windows.Level != level {
				t.Fatalf("level %d, want %d", d.Windows.Level, level)
			}
			sig := make([]uint64, len(d.Windows.Hashes)/8)
			for i := range sig {
				sig[i] = binary.BigEndian.Uint64(d.Windows.Hashes[8*i:])
			}
			if err := exact.CheckSignature(sig, d.Windows.Level); err != nil {
				t.Fatal(err)
			}
			want := streamSignature(t, &repeatReader{pattern: c.pattern, n: c.size}, level)
			if !slices.Equal(sig, want) {
				t.Fatalf("signature %x, want %x", sig, want)
			}
		})
	}
}

// TestReadQueryLevelBound: a long stream of distinct windows raises the
// sampling level as it goes (the collector holds about 2 × MaxSamples
// hashes at most), and the signature is still the one its size calls for.
func TestReadQueryLevelBound(t *testing.T) {
	p := fingerprint.DefaultParams()
	data := text(11, 24<<20)
	qc := &queryCollector{level: exact.MinSignatureLevel}
	most := 0
	for off := 0; off < len(data); off += 1 << 18 {
		qc.write(data[off:min(off+1<<18, len(data))])
		most = max(most, len(qc.hashes))
	}
	if most > compactAt+1<<18 || qc.level <= exact.MinSignatureLevel {
		t.Fatalf("held up to %d hashes, level %d", most, qc.level)
	}
	_, d, err := ReadQuery(bytes.NewReader(data), p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	level := exact.SignatureLevel(int64(len(data)))
	want := streamSignature(t, bytes.NewReader(data), level)
	if d.Windows.Level != level || !bytes.Equal(d.Windows.Hashes, NewWindows(level, want).Hashes) {
		t.Fatalf("level %d, %d hashes; want %d, %d", d.Windows.Level, len(d.Windows.Hashes)/8, level, len(want))
	}
}

// TestSignatureLevelCapped: however large the query, its signature's level
// is one the daemon takes (at most exact.MaxLevel).
func TestSignatureLevelCapped(t *testing.T) {
	for _, size := range []int64{0, 1 << 20, 3 << 30, 1 << 48, 1 << 62} {
		for _, level := range []int{exact.MinSignatureLevel, exact.MaxLevel} {
			l := signatureLevel(level, size)
			if l < exact.MinSignatureLevel || l > exact.MaxLevel || l < min(exact.SignatureLevel(size), exact.MaxLevel) {
				t.Errorf("signatureLevel(%d, %d) = %d", level, size, l)
			}
		}
	}
}

// TestRequestsCarryParams: the requests a client builds from a sketch
// carry the parameters it was made with, which the daemon requires.
func TestRequestsCarryParams(t *testing.T) {
	for _, p := range []fingerprint.Params{{}, {Scheme: fingerprint.Chunks}, fingerprint.DefaultParams()} {
		sk, d, err := ReadQuery(bytes.NewReader(text(1, 3000)), p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := p.Normalize()
		if got := NewSimilarRequest("", sk).Params; got != want {
			t.Errorf("similar request for %+v: params %+v, want %+v", p, got, want)
		}
		if got := NewBasisRequest("", sk, d).Params; got != want {
			t.Errorf("basis request for %+v: params %+v, want %+v", p, got, want)
		}
	}
}
