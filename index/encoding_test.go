package index

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/sif-dev/sif/index/fingerprint"
)

func randRecord(rng *rand.Rand) FileRecord {
	r := FileRecord{
		ID: rng.Uint32(),
		FileMeta: FileMeta{
			Path:    string([]byte{'/', byte(rng.IntN(256)), 0xff, 0, 'x'}),
			Size:    rng.Int64() - math.MaxInt64/2,
			MtimeNs: -rng.Int64(),
			Dev:     rng.Uint64(),
			Ino:     rng.Uint64(),
			Mode:    rng.Uint32(),
		},
		Weight:   rng.Uint64(),
		Features: rng.Uint32(),
	}
	r.Summary.Size = rng.Int64()
	for i := range r.Strong {
		r.Strong[i] = byte(rng.IntN(256))
	}
	r.Type = fingerprint.Type(rng.IntN(3))
	for i := range r.Sum {
		r.Sum[i] = rng.Uint32()
	}
	r.Key = rng.Uint32()
	return r
}

func TestRecordRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		want := randRecord(rng)
		if i == 0 {
			want = FileRecord{ID: 7} // the zero record, with an empty path
		}
		v := encodeRecord(nil, &want)
		got, err := decodeRecord(want.ID, v)
		if err != nil {
			t.Fatalf("decode %x: %v", v, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
		// Every truncation and an extra byte must fail cleanly.
		for n := 0; n < len(v); n++ {
			if _, err := decodeRecord(want.ID, v[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode of %d of %d bytes: err %v, want ErrCorrupt", n, len(v), err)
			}
		}
		if _, err := decodeRecord(want.ID, append(v, 0)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode with a trailing byte: err %v, want ErrCorrupt", err)
		}
	}
	v := encodeRecord(nil, &FileRecord{})
	v[0] = 9
	if _, err := decodeRecord(1, v); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("record version 9: err %v, want ErrCorrupt", err)
	}
}

func randFeatures(rng *rand.Rand, n int, knowsLengths bool) []fingerprint.Feature {
	seen := map[uint64]bool{}
	var fs []fingerprint.Feature
	for len(fs) < n {
		h := rng.Uint64()
		switch rng.IntN(8) {
		case 0:
			h = 0
		case 1:
			h = math.MaxUint64
		case 2:
			h = uint64(rng.IntN(16))
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		f := fingerprint.Feature{Hash: h, Count: 1 + uint32(rng.IntN(3))}
		if rng.IntN(10) == 0 {
			f.Count = math.MaxUint32
		}
		if knowsLengths {
			f.Len = 1 + uint32(rng.IntN(5000))
		}
		fs = append(fs, f)
	}
	return canonical(fs)
}

func TestForwardRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kl := range []bool{false, true} {
		for i := 0; i < 200; i++ {
			want := randFeatures(rng, rng.IntN(40), kl)
			v := encodeForward(nil, want, kl)
			got, err := decodeForward(v, kl)
			if err != nil {
				t.Fatalf("decode %x: %v", v, err)
			}
			if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip (lengths %v):\n got %v\nwant %v", kl, got, want)
			}
			for n := 0; n < len(v); n++ {
				if _, err := decodeForward(v[:n], kl); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("decode of %d of %d bytes: err %v, want ErrCorrupt", n, len(v), err)
				}
			}
			if _, err := decodeForward(append(v, 1), kl); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode with a trailing byte: err %v, want ErrCorrupt", err)
			}
		}
	}
	// Unsorted, repeated and zero-count lists are corrupt.
	for _, bad := range [][]byte{
		{2, 5, 1, 0, 1}, // second hash repeats the first
		{1, 5, 0},       // count 0
		{2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 1, 1, 1}, // hash overflows
	} {
		if fs, err := decodeForward(bad, false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, %v; want ErrCorrupt", bad, fs, err)
		}
	}
}

func TestPostingAndCountRoundTrip(t *testing.T) {
	for _, kl := range []bool{false, true} {
		for _, f := range []fingerprint.Feature{{Count: 1}, {Count: 3, Len: 77}, {Count: math.MaxUint32, Len: math.MaxUint32}} {
			if !kl {
				f.Len = 0
			}
			v := encodePosting(nil, f, kl)
			got, err := decodePosting(v, kl)
			if err != nil || got != f {
				t.Fatalf("posting %+v (lengths %v): got %+v, %v", f, kl, got, err)
			}
			if _, err := decodePosting(append(v, 0), kl); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("posting with a trailing byte: %v", err)
			}
		}
	}
	if _, err := decodePosting([]byte{0}, false); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("posting count 0: err %v, want ErrCorrupt", err)
	}
	for _, n := range []int64{0, 1, -1, 300, -300, math.MaxInt64, math.MinInt64} {
		got, err := decodeCount(encodeCount(nil, n))
		if err != nil || got != n {
			t.Fatalf("count %d: got %d, %v", n, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {2, 0}} {
		if _, err := decodeCount(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("count %x: err %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestKeysRoundTrip(t *testing.T) {
	h, id := uint64(0x0123456789abcdef), uint32(0xfedcba98)
	k := appendPostingKey(nil, h, id)
	if gh, gid, err := parsePostingKey(k); err != nil || gh != h || gid != id {
		t.Fatalf("posting key %x: %x %x %v", k, gh, gid, err)
	}
	if !bytes.HasPrefix(k, appendPostingPrefix(nil, h)) {
		t.Fatalf("posting key %x lacks its prefix", k)
	}
	if gh, err := parseDFKey(appendDFKey(nil, h)); err != nil || gh != h {
		t.Fatalf("count key: %x %v", gh, err)
	}
	for _, p := range []byte{prefixRecord, prefixForward} {
		k := appendIDKey(nil, p, id)
		if gid, err := parseIDKey(k, p); err != nil || gid != id {
			t.Fatalf("%c key: %x %v", p, gid, err)
		}
	}
	var strong [32]byte
	strong[0], strong[31] = 1, 2
	if s, gid, err := parseStrongKey(strongKey(strong, id)); err != nil || s != strong || gid != id {
		t.Fatalf("strong key: %x %x %v", s, gid, err)
	}
	if gid, err := decodeID(encodeID(id)); err != nil || gid != id {
		t.Fatalf("id: %x %v", gid, err)
	}
	// Keys sort numerically.
	if bytes.Compare(appendPostingKey(nil, 1, 0xffffffff), appendPostingKey(nil, 2, 0)) >= 0 {
		t.Fatal("posting keys do not sort by hash first")
	}
	for _, bad := range [][]byte{nil, {prefixPosting}, append(appendPostingKey(nil, 1, 1), 0)} {
		if _, _, err := parsePostingKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("posting key %x: err %v", bad, err)
		}
	}
	for _, c := range []struct{ in, want []byte }{
		{[]byte("p/a"), []byte("p/b")},
		{[]byte{'p', 0xff}, []byte{'q'}},
		{[]byte{0xff, 0xff}, nil},
	} {
		if got := prefixEnd(c.in); !bytes.Equal(got, c.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
	}
}

func TestCanonical(t *testing.T) {
	in := []fingerprint.Feature{{Hash: 5, Count: 1, Len: 3}, {Hash: 2, Count: 2}, {Hash: 5, Count: 2, Len: 3}, {Hash: 9, Count: 0}}
	want := []fingerprint.Feature{{Hash: 2, Count: 2}, {Hash: 5, Count: 3, Len: 3}}
	if got := canonical(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("canonical: got %v, want %v", got, want)
	}
	if in[0].Hash != 5 {
		t.Fatal("canonical modified its input")
	}
	sorted := []fingerprint.Feature{{Hash: 1, Count: 1}, {Hash: 2, Count: 1}}
	if got := canonical(sorted); &got[0] != &sorted[0] {
		t.Fatal("canonical copied a canonical list")
	}
}

func TestCountMerger(t *testing.T) {
	for _, c := range []struct {
		ops          []int64
		includesBase bool
		want         int64
		del          bool
	}{
		{[]int64{1, 1, 1}, true, 3, false},
		{[]int64{1, -1}, true, 0, true},
		{[]int64{1, -1}, false, 0, false}, // older operands may follow: keep
		{[]int64{-1}, false, -1, false},
		{[]int64{2, -1, -1, 1}, true, 1, false},
	} {
		for _, older := range []bool{false, true} {
			m, err := countMerger.Merge(nil, encodeCount(nil, c.ops[0]))
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range c.ops[1:] {
				if older {
					err = m.MergeOlder(encodeCount(nil, op))
				} else {
					err = m.MergeNewer(encodeCount(nil, op))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			v, del, _, err := m.(*countValueMerger).DeletableFinish(c.includesBase)
			if err != nil {
				t.Fatal(err)
			}
			if del != c.del {
				t.Fatalf("%v includesBase=%v: delete %v, want %v", c.ops, c.includesBase, del, c.del)
			}
			if !del {
				if n, err := decodeCount(v); err != nil || n != c.want {
					t.Fatalf("%v: sum %d (%v), want %d", c.ops, n, err, c.want)
				}
			}
		}
	}
	if _, err := countMerger.Merge(nil, []byte{0x80}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad operand: err %v", err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 4; i++ {
		r := randRecord(rng)
		f.Add(encodeRecord(nil, &r))
	}
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := decodeRecord(3, v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := decodeRecord(3, encodeRecord(nil, &r))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-encoding: %+v, %v; want %+v", again, err, r)
		}
	})
}

func FuzzDecodeForward(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	f.Add(encodeForward(nil, randFeatures(rng, 5, false), false), false)
	f.Add(encodeForward(nil, randFeatures(rng, 5, true), true), true)
	f.Add([]byte{0}, false)
	f.Fuzz(func(t *testing.T, v []byte, kl bool) {
		fs, err := decodeForward(v, kl)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if c := canonical(fs); len(fs) > 0 && &c[0] != &fs[0] {
			t.Fatalf("decoded list %v is not canonical", fs)
		}
		again, err := decodeForward(encodeForward(nil, fs, kl), kl)
		if err != nil || len(again) != len(fs) || len(fs) > 0 && !reflect.DeepEqual(again, fs) {
			t.Fatalf("re-encoding: %v, %v; want %v", again, err, fs)
		}
	})
}

// TestComparerIsBytewise: splitting posting keys after their hash keeps the
// order bytewise, as Pebble requires of a Split (prefixes order keys, and
// suffixes break ties), whatever the keys look like.
func TestComparerIsBytewise(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	randKey := func() []byte {
		k := make([]byte, rng.IntN(16))
		for i := range k {
			k[i] = byte(rng.IntN(4)) // few values, so prefixes collide
		}
		if len(k) > 0 && rng.IntN(2) == 0 {
			k[0] = prefixPosting
		}
		return k
	}
	sign := func(n int) int { return min(max(n, -1), 1) }
	for i := 0; i < 100000; i++ {
		a, b := randKey(), randKey()
		if i%3 == 0 {
			a, b = appendPostingKey(nil, uint64(rng.IntN(3)), uint32(rng.IntN(3))), appendPostingKey(nil, uint64(rng.IntN(3)), uint32(rng.IntN(3)))
		}
		an, bn := splitKey(a), splitKey(b)
		split := bytes.Compare(a[:an], b[:bn])
		if split == 0 {
			split = bytes.Compare(a[an:], b[bn:])
		}
		if sign(split) != sign(comparer.Compare(a, b)) {
			t.Fatalf("keys %x and %x: split order %d, bytewise %d", a, b, split, comparer.Compare(a, b))
		}
		if an < len(a) && bytes.Compare(a[:an], a) >= 0 {
			t.Fatalf("prefix of %x does not sort before it", a)
		}
	}
	if n := splitKey(appendPostingKey(nil, 1, 2)); n != 9 {
		t.Fatalf("posting key prefix %d bytes, want 9 (the hash)", n)
	}
}
