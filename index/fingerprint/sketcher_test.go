package fingerprint

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/zeebo/xxh3"
)

// TestReferences checks the fast scanners against the naive references on
// inputs chosen to reach their corner cases.
func TestReferences(t *testing.T) {
	inputs := testInputs()
	for _, p := range testParams() {
		p := mustNormalize(t, p)
		for name, data := range inputs {
			if p.Window == 4096 && len(data) > 50000 {
				data = data[:50000] // the reference is O(n·W)
			}
			t.Run(p.String()+"/"+name, func(t *testing.T) {
				got, sum := sketch(t, p, data, nil)
				want := naive(data, p)
				if d := diffFingerprints(got, want); d != "" {
					t.Errorf("fingerprints differ from the reference: %s", d)
				}
				checkSummary(t, data, sum)
			})
		}
	}
}

// checkSummary checks a Summary against the definitions.
func checkSummary(t *testing.T, data []byte, sum Summary) {
	t.Helper()
	if sum.Size != int64(len(data)) {
		t.Errorf("Size = %d, want %d", sum.Size, len(data))
	}
	if sum.Strong != sha256.Sum256(data) {
		t.Errorf("Strong = %x, want %x", sum.Strong, sha256.Sum256(data))
	}
	if want := naiveType(data); sum.Type != want {
		t.Errorf("Type = %v, want %v", sum.Type, want)
	}
	if want := naiveSum(data); sum.Sum != want {
		t.Errorf("Sum = %v, want %v", sum.Sum, want)
	}
	if want := SkewKey(sum.Sum); sum.Key != want {
		t.Errorf("Key = %d, want %d", sum.Key, want)
	}
}

// diffFingerprints describes the first difference between two lists, or
// returns "".
func diffFingerprints(got, want []Fingerprint) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("#%d is %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d fingerprints, want %d", len(got), len(want))
	}
	return ""
}

// TestSimiHashShort compares the sum table with the reference on every short
// input over a small alphabet rich in overlapping tag matches.
func TestSimiHashShort(t *testing.T) {
	alphabet := []byte{0x00, 0x80, 0x01, 'e', 0xca, 0x32, 't', 0xe8, 0x3a, 0xe3, 0xc7, 0xff}
	r := rand.New(rand.NewPCG(11, 12))
	for n := range 40 {
		for range 200 {
			data := make([]byte, n)
			for i := range data {
				data[i] = alphabet[r.IntN(len(alphabet))]
			}
			var s simiHash
			for i := range data { // a byte per write, the worst case for the state
				s.write(data[i : i+1])
			}
			if got, want := s.sum(), naiveSum(data); got != want {
				t.Fatalf("% x: sum %v, want %v", data, got, want)
			}
			s.reset()
			s.write(data)
			if got, want := s.sum(), naiveSum(data); got != want {
				t.Fatalf("% x in one write: sum %v, want %v", data, got, want)
			}
		}
	}
}

// TestSplitInvariance checks that the way a stream is cut into Writes
// changes nothing.
func TestSplitInvariance(t *testing.T) {
	inputs := testInputs()
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range testParams() {
		p := mustNormalize(t, p)
		for name, data := range inputs {
			fps, sum := sketch(t, p, data, nil)
			for i := range 5 {
				sizes := randomSizes(r, len(data))
				if i == 0 {
					sizes = slices.Repeat([]int{1}, min(len(data), 5000))
				}
				got, gotSum := sketch(t, p, data, sizes)
				if d := diffFingerprints(got, fps); d != "" {
					t.Errorf("%v/%s, split %d: %s", p, name, i, d)
				}
				if gotSum != sum {
					t.Errorf("%v/%s, split %d: summary %+v, want %+v", p, name, i, gotSum, sum)
				}
			}
		}
	}
}

// TestChunkInvariants checks that chunks tile the stream and respect the
// length bounds.
func TestChunkInvariants(t *testing.T) {
	for _, p := range testParams() {
		p := mustNormalize(t, p)
		if p.Scheme != Chunks {
			continue
		}
		for name, data := range testInputs() {
			fps, _ := sketch(t, p, data, randomSizes(rand.New(rand.NewPCG(5, 6)), len(data)))
			if err := checkInvariants(p, data, fps); err != nil {
				t.Errorf("%v/%s: %v", p, name, err)
			}
		}
	}
}

// checkInvariants checks what must hold of any scheme's output for data.
func checkInvariants(p Params, data []byte, fps []Fingerprint) error {
	var end int64
	for i, f := range fps {
		if f.Offset < end || f.Offset < 0 || f.Offset+int64(f.Len) > int64(len(data)) {
			return fmt.Errorf("#%d %+v: overlaps the previous one (which ends at %d) or the stream's end (%d)", i, f, end, len(data))
		}
		switch p.Scheme {
		case Manber:
			if f.Len != uint32(p.Window) {
				return fmt.Errorf("#%d %+v: length is not the window %d", i, f, p.Window)
			}
			if f.Hash>>(uint(p.ModBits)-uint(p.Bits)) != 0 && p.ModBits < 64 {
				return fmt.Errorf("#%d %+v: hash wider than %d bits", i, f, p.ModBits-p.Bits)
			}
		case Chunks:
			if f.Offset != end {
				return fmt.Errorf("#%d %+v: a gap after the previous chunk, which ends at %d", i, f, end)
			}
			last := i == len(fps)-1
			if f.Len == 0 || f.Len > uint32(p.MaxChunk) || (!last && f.Len <= uint32(p.MinChunk)) {
				return fmt.Errorf("#%d %+v: length outside (%d, %d]", i, f, p.MinChunk, p.MaxChunk)
			}
			if h := xxh3.Hash(data[f.Offset : f.Offset+int64(f.Len)]); h != f.Hash {
				return fmt.Errorf("#%d %+v: hash is not the chunk's xxh3 %#x", i, f, h)
			}
		}
		end = f.Offset + int64(f.Len)
	}
	if p.Scheme == Chunks && end != int64(len(data)) {
		return fmt.Errorf("chunks end at %d, the stream at %d", end, len(data))
	}
	return nil
}

func TestSketcherLifecycle(t *testing.T) {
	data := randomBytes(21, 100000)
	for _, p := range []Params{{Scheme: Manber}, {Scheme: Chunks}} {
		var fps []Fingerprint
		s, err := NewSketcher(p, func(f Fingerprint) { fps = append(fps, f) })
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.Params(), mustNormalize(t, p); got != want {
			t.Errorf("Params() = %v, want %v", got, want)
		}
		want, wantSum := sketch(t, p, data, nil)

		s.Write(data[:500]) // abandoned halfway
		s.Reset()
		fps = nil
		s.Write(data)
		sum := s.Finish()
		if d := diffFingerprints(fps, want); d != "" || sum != wantSum {
			t.Errorf("%v: after Reset mid-stream: %s; summary %+v, want %+v", p, d, sum, wantSum)
		}
		n := len(fps)
		if again := s.Finish(); again != sum || len(fps) != n {
			t.Errorf("%v: second Finish gave %+v and %d more fingerprints", p, again, len(fps)-n)
		}
		if k, err := s.Write([]byte("x")); k != 0 || !errors.Is(err, ErrFinished) {
			t.Errorf("%v: Write after Finish = %d, %v; want 0, ErrFinished", p, k, err)
		}
		s.Reset()
		fps = nil
		s.Write(data)
		if sum := s.Finish(); sum != wantSum || diffFingerprints(fps, want) != "" {
			t.Errorf("%v: after Reset: summary %+v, want %+v", p, sum, wantSum)
		}
		s.Reset()
		if sum := s.Finish(); sum.Size != 0 || sum.Strong != sha256.Sum256(nil) || sum.Type != TypeText || sum.Sum != (SumTable{}) || sum.Key != 0 {
			t.Errorf("%v: empty stream: %+v", p, sum)
		}
	}
}

func TestNilEmit(t *testing.T) {
	data := textBytes(22, 50000)
	for _, p := range testParams() {
		s, err := NewSketcher(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Write(data)
		_, want := sketch(t, p, data, nil)
		if got := s.Finish(); got != want {
			t.Errorf("%v: summary %+v, want %+v", p, got, want)
		}
	}
}

// TestSkipSimiHash: a Sketcher told to skip SimiHash emits the same
// fingerprints and the same size, strong hash and type, with a zero sum
// table and key, across Resets.
func TestSkipSimiHash(t *testing.T) {
	data := textBytes(23, 50000)
	for _, p := range testParams() {
		var got []Fingerprint
		s, err := NewSketcher(p, func(f Fingerprint) { got = append(got, f) })
		if err != nil {
			t.Fatal(err)
		}
		s.SkipSimiHash()
		for range 2 {
			got = got[:0]
			s.Reset()
			s.Write(data[:777])
			s.Write(data[777:])
			sum := s.Finish()
			wantFps, want := sketch(t, p, data, nil)
			if want.Sum == (SumTable{}) || want.Key == 0 {
				t.Fatalf("%v: the data has no SimiHash: the test shows nothing", p)
			}
			want.Sum, want.Key = SumTable{}, 0
			if sum != want {
				t.Errorf("%v: summary %+v, want %+v", p, sum, want)
			}
			if !slices.Equal(got, wantFps) {
				t.Errorf("%v: %d fingerprints, want %d, or they differ", p, len(got), len(wantFps))
			}
		}
	}
}

func TestNewSketcherParams(t *testing.T) {
	for _, p := range []Params{
		{Scheme: "rabin"},
		{Scheme: Manber, Window: 7},
		{Scheme: Manber, Bits: 17},
		{Scheme: Manber, ModBits: 32},
		{Scheme: Chunks, AvgChunk: 100},
		{Scheme: Chunks, MinChunk: 256},
		{Scheme: Chunks, MaxChunk: 256},
	} {
		if s, err := NewSketcher(p, nil); s != nil || !errors.Is(err, ErrParams) {
			t.Errorf("NewSketcher(%+v) = %v, %v; want an ErrParams error", p, s, err)
		}
		if sk, err := SketchReader(strings.NewReader("x"), p); sk != nil || !errors.Is(err, ErrParams) {
			t.Errorf("SketchReader(%+v) = %v, %v; want an ErrParams error", p, sk, err)
		}
	}
	s, err := NewSketcher(Params{}, nil)
	if err != nil || s.Params() != DefaultParams() {
		t.Errorf("NewSketcher(Params{}) = %v, %v; want the default params", s.Params(), err)
	}
}

// TestWriteAllocs checks that a Write allocates nothing once the buffers
// are grown.
func TestWriteAllocs(t *testing.T) {
	data := randomBytes(23, 1<<20)
	for _, p := range []Params{{Scheme: Manber}, {Scheme: Chunks}} {
		n := 0
		s, _ := NewSketcher(p, func(Fingerprint) { n++ })
		s.Write(data)
		i := 0
		allocs := testing.AllocsPerRun(100, func() {
			s.Write(data[i : i+7777])
			i = (i + 7777) % (len(data) - 7777)
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per Write", p, allocs)
		}
	}
}

func TestSketchReader(t *testing.T) {
	data := textBytes(24, 700000)
	for _, p := range testParams() {
		p := mustNormalize(t, p)
		for name, r := range map[string]io.Reader{
			"plain":    bytes.NewReader(data),
			"onebyte":  iotest.OneByteReader(bytes.NewReader(data[:20000])),
			"half":     iotest.HalfReader(bytes.NewReader(data)),
			"dataeof":  iotest.DataErrReader(bytes.NewReader(data)),
			"timeout":  iotest.TimeoutReader(bytes.NewReader(data)), // a 0, ErrTimeout read: an error
			"emptyrds": &emptyReads{r: bytes.NewReader(data), every: 3},
		} {
			sk, err := SketchReader(r, p)
			want := data
			if name == "onebyte" {
				want = data[:20000]
			}
			if name == "timeout" {
				if sk != nil || !errors.Is(err, iotest.ErrTimeout) || !strings.HasPrefix(err.Error(), "fingerprint: read: ") {
					t.Errorf("%v/%s: %v, %v; want a wrapped ErrTimeout", p, name, sk, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%v/%s: %v", p, name, err)
			}
			fps, sum := sketch(t, p, want, nil)
			var c Collector
			for _, f := range fps {
				c.Add(f)
			}
			if sk.Summary != sum || sk.Params != p || !slices.Equal(sk.Features, c.Features()) {
				t.Errorf("%v/%s: sketch differs from the Sketcher's", p, name)
			}
			if !sort.SliceIsSorted(sk.Features, func(i, j int) bool { return sk.Features[i].Hash < sk.Features[j].Hash }) {
				t.Errorf("%v/%s: features not sorted", p, name)
			}
			if sk.Occurrences() != uint64(len(fps)) {
				t.Errorf("%v/%s: %d occurrences, want %d", p, name, sk.Occurrences(), len(fps))
			}
		}
	}
	if _, err := SketchReader(&emptyReads{every: 1}, Params{}); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("a reader that never reads: %v, want io.ErrNoProgress", err)
	}
	if _, err := SketchReader(badCount{}, Params{}); err == nil || !strings.HasPrefix(err.Error(), "fingerprint: read: ") {
		t.Errorf("a reader returning a bad count: %v, want an error", err)
	}
}

// emptyReads returns 0, nil on every every-th read.
type emptyReads struct {
	r     io.Reader
	every int
	n     int
}

func (e *emptyReads) Read(b []byte) (int, error) {
	if e.n++; e.n%e.every == 0 || e.r == nil {
		return 0, nil
	}
	return e.r.Read(b)
}

type badCount struct{}

func (badCount) Read(b []byte) (int, error) { return len(b) + 1, nil }

func TestType(t *testing.T) {
	ctrl := func(n, of int) []byte { // n control bytes among of
		b := bytes.Repeat([]byte("a"), of)
		for i := range n {
			b[i*of/n] = 0x01
		}
		return b
	}
	for _, c := range []struct {
		name string
		data []byte
		want Type
	}{
		{"empty", nil, TypeText},
		{"ascii", []byte("hello, world\n"), TypeText},
		{"utf8", []byte("héllo wörld ✓\n"), TypeText},
		{"latin1", []byte("h\xe9llo w\xf6rld\n"), TypeText},
		{"nul", []byte("hello\x00world"), TypeBinary},
		{"allowed controls", []byte("\t\n\v\f\r\b\x1b[0m"), TypeText},
		{"10%", ctrl(100, 1000), TypeText},
		{"10.1%", ctrl(101, 1000), TypeBinary},
		{"del", bytes.Repeat([]byte{0x7f}, 10), TypeBinary},
		{"nul after 8 KiB", append(bytes.Repeat([]byte("a"), 8192), 0), TypeText},
		{"nul at 8 KiB", append(bytes.Repeat([]byte("a"), 8191), 0), TypeBinary},
		{"controls after 8 KiB", append(bytes.Repeat([]byte("a"), 8192), bytes.Repeat([]byte{1}, 8192)...), TypeText},
	} {
		_, sum := sketch(t, Params{}, c.data, []int{1, 7, 4000})
		if sum.Type != c.want || naiveType(c.data) != c.want {
			t.Errorf("%s: %v (reference %v), want %v", c.name, sum.Type, naiveType(c.data), c.want)
		}
	}
}

func TestSkewKey(t *testing.T) {
	var s SumTable
	s[0], s[1], s[2], s[3], s[4] = 1, 10, 100, 1000, 1e6
	if got := SkewKey(s); got != 8+40+200+1000 {
		t.Errorf("SkewKey = %d, want 1248", got)
	}
	s[0] = math.MaxUint32 / 8
	s[1] = 1
	if got := SkewKey(s); got != math.MaxUint32 {
		t.Errorf("SkewKey does not saturate: %d", got)
	}
	if tags[0] != 0 || tags[1] != 'e' || tags[2] != 't' {
		t.Errorf("the skew-key tags moved: % x", tags[:4])
	}
	for i, t8 := range tags {
		if bordered := func() bool {
			for l := 1; l < 8; l++ {
				if t8>>(8-l) == t8&(1<<l-1) {
					return true
				}
			}
			return false
		}(); bordered != (i < 3) {
			t.Errorf("tag %#02x: bordered %v, want %v (only 0x00, 'e' and 't' may be)", t8, bordered, i < 3)
		}
	}
	seen := map[byte]bool{}
	for _, t8 := range tags {
		for k := range 8 {
			r := t8<<k | t8>>(8-k)
			if seen[r] && r != 0 {
				t.Errorf("tag %#02x is a rotation of another tag", t8)
			}
		}
		for k := range 8 {
			seen[t8<<k|t8>>(8-k)] = true
		}
	}
}

func TestExtKey(t *testing.T) {
	k := ExtKey(42, "txt")
	if uint32(k) != 42 {
		t.Errorf("low half %d, want 42", uint32(k))
	}
	if ExtKey(42, ".text") != ExtKey(42, "tex") {
		t.Errorf("only three bytes of the extension should count")
	}
	for _, e := range []string{".txt", "TXT", ".Txt", "txtx"} {
		if got := ExtKey(42, e); got != k {
			t.Errorf("ExtKey(42, %q) = %#x, want %#x as for txt", e, got, k)
		}
	}
	seen := map[uint64]string{}
	for _, e := range []string{"", "go", "c", "h", "pdf", "ps", "doc", "md", "json", "html", "png"} {
		h := ExtKey(0, e) >> 32
		if o, ok := seen[h]; ok {
			t.Errorf("%q and %q share the high half %#x", e, o, h)
		}
		seen[h] = e
	}
}
