package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPostingListRoundTrip(t *testing.T) {
	const b = 0x1234
	key := func(low uint32) uint32 { return b<<lowBits | low }
	for _, es := range [][]postingEntry{
		{{key(0), 1, 1}},
		{{key(1<<lowBits - 1), math.MaxUint32, math.MaxUint64}},
		{{key(5), 1, 1}, {key(5), 2, 2}, {key(5), 9, 77}, {key(6), 1, 1}, {key(900), 3, 1 << 20}},
		{{key(7), 3, tombstone}, {key(8), 3, 1}},
	} {
		v, _ := encodePostingList(nil, es, nil)
		tomb := slices.ContainsFunc(es, func(e postingEntry) bool { return e.weight == tombstone })
		got, err := decodePostingList(nil, b, v, true)
		if err != nil || !slices.Equal(got, es) {
			t.Fatalf("list %v: encoded %x, decoded %v, %v", es, v, got, err)
		}
		if _, err := decodePostingList(nil, b, v, false); tomb != (err != nil) {
			t.Fatalf("list %v read as merged: %v", es, err)
		}
		if _, err := decodePostingList(nil, b, append(v, 0), true); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("list with a trailing byte: %v", err)
		}
		if _, err := decodePostingList(nil, b, v[:len(v)-1], true); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated list: %v", err)
		}
	}
	// Two postings of weight 1 whose keys differ by 1, ids of 1 bit:
	// n=2, k, cb=1, then 0 (gap 0 in unary) + k zero bits, id 1, weight 0;
	// new key 1, gap 0 again, id 1, weight 0.
	v, _ := encodePostingList(nil, []postingEntry{{key(0), 1, 1}, {key(1), 1, 1}}, nil)
	if want := []byte{2, 0, 1, 0b0_1_0_1_0_1_0_0}; !bytes.Equal(v, want) {
		t.Fatalf("encoded %08b, want %08b", v, want)
	}
	if es, err := decodePostingList(nil, b, nil, false); err != nil || len(es) != 0 {
		t.Fatalf("empty list: %v, %v", es, err)
	}
	for _, bad := range [][]byte{
		{0, 0, 1},                    // no postings, not stored empty
		{1, 0, 0, 0},                 // ids of 0 bits
		{1, 0, 33, 0},                // ids of 33 bits
		{1, lowBits + 1, 1, 0},       // Rice parameter above the low bits
		{1, 0, 1, 0b1111_1111},       // truncated unary
		{1, 0, 1, 0b0_1_0_0_0001},    // stray bits after the last posting
		{2, 0, 1, 0b0_1_0_0_1_1_0_0}, // second posting of the same key and id
	} {
		if es, err := decodePostingList(nil, b, bad, true); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, %v; want ErrCorrupt", bad, es, err)
		}
	}
	if got, err := parseBucketKey(appendBucketKey(nil, b)); err != nil || got != b {
		t.Fatalf("bucket key: %x, %v", got, err)
	}
	for _, bad := range [][]byte{{prefixPosting}, {prefixPosting, 1, 2, 3}, {prefixContent, 1, 2}} {
		if _, err := parseBucketKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bucket key %x: %v", bad, err)
		}
	}
}

// FuzzPostingCodec holds the posting list codec and the bit packing under
// it to their contracts, reading each input three ways:
//
//   - as a posting list: decoding it never panics, fails only with
//     ErrCorrupt, and what it decodes is canonical (one bucket, in order)
//     and comes back from encoding it;
//   - as a recipe for a list of postings (postingsOf): encoding them and
//     decoding the result gives them back, tombstones and all, and a
//     reader of merged lists refuses exactly the lists with a tombstone;
//   - as a recipe for fields (bitFieldsOf): what bitWriter writes,
//     bitReader reads back, field by field, from a buffer of its own
//     length or a zero-padded one, and not one bit more.
func FuzzPostingCodec(f *testing.F) {
	f.Add([]byte{1, 0, 1, 0b0_1_0_00000})
	f.Add([]byte{2, 3, 4, 0xff, 0x01, 0x80})
	f.Add([]byte{})
	rng := rand.New(rand.NewPCG(21, 6))
	for _, n := range []int{1, 3, 40, 300} {
		seed := make([]byte, n)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		f.Add(seed)
		f.Add(encodePostingListOf(postingsOf(3, seed)))
	}
	// A key gap far above the mean (a quotient past one word), a weight
	// past 32 bits, a tombstone, the largest content id.
	f.Add(encodePostingListOf([]postingEntry{
		{3<<lowBits | 0, 1, 1}, {3<<lowBits | 1, 1, 1}, {3<<lowBits | 2, 1, 1},
		{3<<lowBits | 1<<lowBits - 1, 2, 1 << 40}, {3<<lowBits | 1<<lowBits - 1, math.MaxUint32, tombstone},
	}))
	f.Fuzz(func(t *testing.T, v []byte) {
		const b = 3
		// The input as a posting list.
		es, err := decodePostingList(nil, b, v, true)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		} else {
			for i, e := range es {
				if bucketOf(e.key) != b || i > 0 && comparePostings(es[i-1], e) >= 0 {
					t.Fatalf("decoded list %v is not canonical", es)
				}
			}
			again, err := decodePostingList(nil, b, encodePostingListOf(es), true)
			if err != nil || !slices.Equal(again, es) {
				t.Fatalf("re-encoding: %v, %v; want %v", again, err, es)
			}
		}

		// The input as postings: encode, then decode. Appended to a
		// prefix, with scratch space from an earlier list.
		ps := postingsOf(b, v)
		prefix := []byte("head")
		_, gaps := encodePostingList(nil, postingsOf(b, v[len(v)/2:]), nil)
		enc, _ := encodePostingList(slices.Clone(prefix), ps, gaps)
		if !bytes.HasPrefix(enc, prefix) {
			t.Fatalf("encodePostingList overwrote its dst: %q", enc)
		}
		enc = enc[len(prefix):]
		got, err := decodePostingList(nil, b, enc, true)
		if err != nil || !slices.Equal(got, ps) {
			t.Fatalf("postings %v: encoded %x, decoded %v, %v", ps, enc, got, err)
		}
		tomb := slices.ContainsFunc(ps, func(e postingEntry) bool { return e.weight == tombstone })
		if _, err := decodePostingList(nil, b, enc, false); tomb != (err != nil) {
			t.Fatalf("postings %v read as merged: %v", ps, err)
		}

		// The input as bit fields: write, then read back.
		fs := bitFieldsOf(v)
		var w bitWriter
		for _, f := range fs {
			switch f.kind {
			case fieldBits:
				w.write(f.v, f.n)
			case fieldRice:
				w.rice(f.v, f.n)
			case fieldGamma:
				w.gamma(f.v)
			}
		}
		buf := w.flush()
		padded := append(slices.Clone(buf), make([]byte, 8)...)[:len(buf)]
		for _, r := range []bitReader{{b: buf[:len(buf):len(buf)]}, {b: padded}} {
			for i, f := range fs {
				var got uint64
				ok := true
				switch f.kind {
				case fieldBits:
					got, ok = r.read(f.n)
					f.v &= 1<<f.n - 1
				case fieldRice:
					got, ok = r.rice(f.n, f.v>>f.n)
				case fieldGamma:
					got, ok = r.gamma()
				}
				if !ok || got != f.v {
					t.Fatalf("field %d of %v (cap %d): read %#x, %v", i, fs, cap(r.b), got, ok)
				}
			}
			if left := r.left(); left >= 8 {
				t.Fatalf("%d bits left after the last field (cap %d)", left, cap(r.b))
			} else if rest, ok := r.read(left); !ok || rest != 0 {
				t.Fatalf("padding %#x, %v; want zero bits", rest, ok)
			}
			if _, ok := r.read(1); ok {
				t.Fatalf("read a bit past the end (cap %d)", cap(r.b))
			}
			if _, ok := r.bit(); ok {
				t.Fatalf("read a bit past the end (cap %d)", cap(r.b))
			}
		}
	})
}

// postingsOf reads data as a recipe for postings of bucket b and returns
// them in order, without duplicates. Each posting takes a control byte,
// whose bits say how its key, content id and weight follow:
//
//	bits 0-1  key: the previous one, the next one, a gap of a byte, or
//	          low bits of two bytes
//	bits 2-3  content id: the previous one plus one, a byte, four
//	          bytes, or the largest less a byte
//	bits 4-5  weight: 1, a tombstone, a byte plus 2, or eight bytes
//
// and the input runs out as zero bytes.
func postingsOf(b uint32, data []byte) []postingEntry {
	next := func(n int) uint64 {
		var v uint64
		for range n {
			v <<= 8
			if len(data) > 0 {
				v |= uint64(data[0])
				data = data[1:]
			}
		}
		return v
	}
	var (
		es  []postingEntry
		low uint64
		cid uint32
	)
	for len(data) > 0 {
		ctl := next(1)
		switch ctl & 3 {
		case 1:
			low++
		case 2:
			low += next(1)
		case 3:
			low = next(2)
		}
		switch ctl >> 2 & 3 {
		case 0:
			cid++
		case 1:
			cid = uint32(next(1))
		case 2:
			cid = uint32(next(4))
		case 3:
			cid = math.MaxUint32 - uint32(next(1))
		}
		e := postingEntry{key: b<<lowBits | uint32(low&(1<<lowBits-1)), cid: cid, weight: 1}
		switch ctl >> 4 & 3 {
		case 1:
			e.weight = tombstone
		case 2:
			e.weight = next(1) + 2
		case 3:
			e.weight = next(8)
		}
		es = append(es, e)
	}
	slices.SortStableFunc(es, comparePostings)
	return slices.CompactFunc(es, func(x, y postingEntry) bool { return comparePostings(x, y) == 0 })
}

// A bitField is one field bitWriter writes: n bits of v, v Rice-coded with
// parameter n, or v ≥ 1 in Elias gamma.
type bitField struct {
	kind fieldKind
	v    uint64
	n    uint
}

type fieldKind uint8

const (
	fieldBits fieldKind = iota
	fieldRice
	fieldGamma
)

// bitFieldsOf reads data as a recipe for bit fields: a control byte, whose
// low bits choose the kind and high bits the width or Rice parameter,
// then eight bytes of value (big-endian, zero past the end). A Rice
// quotient takes the low 16 bits of the value, so that it stays small.
func bitFieldsOf(data []byte) []bitField {
	var fs []bitField
	for len(data) > 0 {
		ctl := data[0]
		var word [8]byte
		data = data[1+copy(word[:], data[1:]):]
		v := binary.BigEndian.Uint64(word[:])
		switch ctl % 3 {
		case 0:
			fs = append(fs, bitField{fieldBits, v, uint(ctl/3) % 65})
		case 1:
			k := uint(ctl/3) % 33
			q := v & (1<<16 - 1)
			fs = append(fs, bitField{fieldRice, q<<k | v>>16&(1<<k-1), k})
		case 2:
			fs = append(fs, bitField{fieldGamma, max(v>>(ctl/3%64), 1), 0})
		}
	}
	return fs
}

func encodePostingListOf(es []postingEntry) []byte { v, _ := encodePostingList(nil, es, nil); return v }
