package fingerprint

import (
	"encoding/binary"
	"runtime"
	"testing"
)

// TestBoundedMemory streams memTestBytes (4 GiB, or 256 MiB under the race
// detector or with -short) through Sketchers and checks that the heap does
// not grow with the stream: a Sketcher keeps at most about MaxChunk bytes of
// it.
func TestBoundedMemory(t *testing.T) {
	const limit = 16 << 20
	total := int64(memTestBytes)
	if testing.Short() {
		total = min(total, 256<<20)
	}
	for _, c := range []struct {
		p     Params
		bytes int64
	}{
		{Params{Scheme: Chunks}, total},
		{Params{Scheme: Manber}, total / 16},
	} {
		block := randomBytes(77, 1<<20)
		buf := make([]byte, len(block))
		n := 0
		s, err := NewSketcher(c.p, func(Fingerprint) { n++ })
		if err != nil {
			t.Fatal(err)
		}
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		base, peak := m.HeapInuse, m.HeapInuse
		blocks := c.bytes / int64(len(block))
		for i := range blocks {
			// Each block differs: the random block XORed with its number.
			for j := 0; j < len(buf); j += 8 {
				binary.LittleEndian.PutUint64(buf[j:], binary.LittleEndian.Uint64(block[j:])^uint64(i))
			}
			s.Write(buf)
			if i%256 == 255 {
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
		sum := s.Finish()
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapInuse)
		if sum.Size != blocks*int64(len(block)) || n == 0 {
			t.Fatalf("%v: size %d and %d fingerprints", c.p, sum.Size, n)
		}
		t.Logf("%v: %d MiB, %d fingerprints, heap in use %d KiB before, at most %d KiB during", s.Params(), sum.Size>>20, n, base>>10, peak>>10)
		if peak > base+limit {
			t.Errorf("%v: heap in use grew from %d to %d KiB over %d MiB", c.p, base>>10, peak>>10, sum.Size>>20)
		}
	}
}
