package index

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

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
		r := randRecord(rng)
		if i == 0 {
			r = FileRecord{ID: 7} // the zero record, with an empty path
		}
		cid := rng.Uint32()
		v := encodeRecord(nil, &r.FileMeta, cid)
		got, gcid, err := decodeRecord(v)
		if err != nil {
			t.Fatalf("decode %x: %v", v, err)
		}
		if got != r.FileMeta || gcid != cid {
			t.Fatalf("round trip:\n got %+v %d\nwant %+v %d", got, gcid, r.FileMeta, cid)
		}
		// Every truncation and an extra byte must fail cleanly.
		for n := 0; n < len(v); n++ {
			if _, _, err := decodeRecord(v[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode of %d of %d bytes: err %v, want ErrCorrupt", n, len(v), err)
			}
		}
		if _, _, err := decodeRecord(append(v, 0)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode with a trailing byte: err %v, want ErrCorrupt", err)
		}
	}
	v := encodeRecord(nil, &FileMeta{}, 0)
	v[0] = 9
	if _, _, err := decodeRecord(v); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("record version 9: err %v, want ErrCorrupt", err)
	}
}

func TestContentRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200; i++ {
		r := randRecord(rng)
		switch i {
		case 0:
			r = FileRecord{}
		case 1:
			r.Level, r.LevelWeights = 3, []uint64{5, 4, 1}
		}
		want := FileRecord{Summary: r.Summary, Weight: r.Weight, Features: r.Features, Level: r.Level, LevelWeights: r.LevelWeights}
		v := encodeContent(nil, &r)
		got := FileRecord{ID: 3, FileMeta: FileMeta{Path: "/kept"}}
		holder, err := decodeContent(v, &got)
		if err != nil || holder != r.ID {
			t.Fatalf("decode %x: holder %d, %v; want holder %d", v, holder, err, r.ID)
		}
		if got.ID != 3 || got.Path != "/kept" {
			t.Fatalf("decodeContent changed the file's fields: %+v", got)
		}
		got.ID, got.FileMeta = 0, FileMeta{}
		if !reflect.DeepEqual(got, want) || !sameContent(&got, &r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
		for n := 0; n < len(v); n++ {
			if _, err := decodeContent(v[:n], &got); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode of %d of %d bytes: err %v, want ErrCorrupt", n, len(v), err)
			}
		}
		if _, err := decodeContent(append(v, 0), &got); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode with a trailing byte: err %v, want ErrCorrupt", err)
		}
	}
	v := encodeContent(nil, &FileRecord{})
	v[0] = 9
	if _, err := decodeContent(v, &FileRecord{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("content version 9: err %v, want ErrCorrupt", err)
	}
}

func randEntries(rng *rand.Rand, n int) []entry {
	seen := map[uint32]bool{}
	var es []entry
	for len(es) < n {
		k := rng.Uint32()
		switch rng.IntN(8) {
		case 0:
			k = 0
		case 1:
			k = math.MaxUint32
		case 2:
			k = uint32(rng.IntN(16))
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		e := entry{key: k, weight: 1 + uint64(rng.IntN(3))}
		switch rng.IntN(10) {
		case 0:
			e.weight = math.MaxUint64
		case 1:
			e.weight = 1 + uint64(rng.IntN(5000))
		}
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.key, b.key) })
	return es
}

func TestForwardRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 400; i++ {
		want := randEntries(rng, rng.IntN(40))
		v := encodeForward(nil, want)
		got, err := decodeForward(v)
		if err != nil {
			t.Fatalf("decode %x: %v", v, err)
		}
		if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %v\nwant %v", got, want)
		}
		for n := 0; n < len(v); n++ {
			if _, err := decodeForward(v[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode of %d of %d bytes: err %v, want ErrCorrupt", n, len(v), err)
			}
		}
		if _, err := decodeForward(append(v, 1)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode with a trailing byte: err %v, want ErrCorrupt", err)
		}
	}
	// The layout, bit for bit: gaps 5 and 9-5-1 = 3 Rice-coded with k = 1
	// (110 1, 10 1), weights 1 and 3 in Elias gamma (1, 011) unless
	// every weight is 1.
	for _, c := range []struct {
		es   []entry
		want []byte
	}{
		{nil, []byte{0}},
		{[]entry{{key: 5, weight: 1}, {key: 9, weight: 1}}, []byte{2, 0x81, 0b1101_101_0}},
		{[]entry{{key: 5, weight: 1}, {key: 9, weight: 3}}, []byte{2, 0x01, 0b1101_1_101, 0b011_00000}},
	} {
		if got := encodeForward(nil, c.es); !bytes.Equal(got, c.want) {
			t.Errorf("encodeForward(%v) = %08b, want %08b", c.es, got, c.want)
		}
	}
	// Out-of-range, malformed and short lists are corrupt (repeated keys
	// and zero weights cannot be written).
	bitsOf := func(n uint64, hdr byte, fields ...[2]uint64) []byte {
		w := bitWriter{buf: append(binary.AppendUvarint(nil, n), hdr)}
		for _, f := range fields {
			w.write(f[0], uint(f[1]))
		}
		return w.flush()
	}
	for _, bad := range [][]byte{
		bitsOf(2, 0x80|32, [2]uint64{0, 1}, [2]uint64{math.MaxUint32, 32}, [2]uint64{0, 1}, [2]uint64{0, 32}), // second key past 32 bits
		bitsOf(1, 0x80|31, [2]uint64{0b110, 3}, [2]uint64{0, 31}),                                             // key gap past 32 bits
		bitsOf(1, 33, [2]uint64{0, 34}, [2]uint64{1, 1}),                                                      // k above 32
		bitsOf(1, 0x40, [2]uint64{0, 1}, [2]uint64{1, 1}),                                                     // unknown header bit
		bitsOf(1, 0, [2]uint64{0, 1}, [2]uint64{0, 64}, [2]uint64{1, 1}),                                      // weight of 65 bits
		bitsOf(1, 0x80, [2]uint64{1, 8}),                                                                      // non-zero padding
		bitsOf(9, 0x80, [2]uint64{0, 8}),                                                                      // too short for its length
		{3},                                                                                                   // no header
		{0, 0},                                                                                                // trailing byte of an empty list
		{},
	} {
		if es, err := decodeForward(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, %v; want ErrCorrupt", bad, es, err)
		}
	}
}

// TestPostingMerger: operands merge newest first, tombstones stay until the
// oldest operand is in the merge, and a bucket left with no posting has an
// empty list; merging in either direction agrees.
func TestPostingMerger(t *testing.T) {
	const b = 7
	key := func(low uint32) uint32 { return b<<lowBits | low }
	enc := func(es ...postingEntry) []byte { v, _ := encodePostingList(nil, es, nil); return v }
	bk := appendBucketKey(nil, b)
	ops := [][]byte{ // oldest first
		enc(postingEntry{key(1), 1, 1}, postingEntry{key(2), 1, 5}),
		enc(postingEntry{key(1), 2, 3}),
		enc(postingEntry{key(1), 1, tombstone}, postingEntry{key(2), 1, tombstone}),
		enc(postingEntry{key(1), 1, 4}), // re-added after its removal
	}
	finish := func(base bool, newer bool, ops [][]byte) ([]postingEntry, bool) {
		t.Helper()
		m, err := mergeOperands(bk, ops, newer)
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := m.Finish(base)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) == 0 {
			return nil, true
		}
		es, err := decodePostingList(nil, b, v, true)
		if err != nil {
			t.Fatal(err)
		}
		return es, false
	}
	for _, newer := range []bool{true, false} {
		if got, _ := finish(true, newer, ops); !slices.Equal(got, []postingEntry{{key(1), 1, 4}, {key(1), 2, 3}}) {
			t.Fatalf("all operands (newer %v): %v", newer, got)
		}
		if got, _ := finish(false, newer, ops[1:]); !slices.Equal(got, []postingEntry{{key(1), 1, 4}, {key(1), 2, 3}, {key(2), 1, tombstone}}) {
			t.Fatalf("without the base (newer %v): %v", newer, got)
		}
		if _, del := finish(true, newer, ops[:3][2:]); !del {
			t.Fatalf("only tombstones, with the base: not an empty list")
		}
	}
	if _, err := postingMerger.Merge(bk, []byte{0x80}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("merging an undecodable operand: %v", err)
	}
}

func TestKeysRoundTrip(t *testing.T) {
	id := uint32(0xfedcba98)
	for _, p := range []byte{prefixRecord, prefixContent, prefixForward} {
		k := appendIDKey(nil, p, id)
		if gid, err := parseIDKey(k, p); err != nil || gid != id {
			t.Fatalf("%c key: %x %v", p, gid, err)
		}
	}
	var strong [32]byte
	strong[0], strong[31] = 1, 2
	cid := uint32(0x13579bdf)
	ck := copyKey(cid, id)
	if gcid, gid, err := parseCopyKey(ck); err != nil || gcid != cid || gid != id {
		t.Fatalf("copy key: %x %x %v", gcid, gid, err)
	}
	if len(ck) != 9 || !bytes.HasPrefix(ck, copyPrefix(nil, cid)) {
		t.Fatalf("copy key %x: want 9 bytes starting with its prefix", ck)
	}
	for _, bad := range [][]byte{ck[:copyKeyLen-1], append(ck, 0), {prefixCopy}} {
		if _, _, err := parseCopyKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("copy key %x: err %v", bad, err)
		}
	}
	hk := hashKey(strong, cid)
	if h, gcid, err := parseHashKey(hk); err != nil || h != [hashBytes]byte(strong[:hashBytes]) || gcid != cid {
		t.Fatalf("hash key: %x %x %v", h, gcid, err)
	}
	if len(hk) != 9 || !bytes.HasPrefix(hk, hashPrefix(nil, strong)) {
		t.Fatalf("hash key %x: want 9 bytes starting with its prefix", hk)
	}
	for _, bad := range [][]byte{hk[:hashKeyLen-1], append(hk, 0), {prefixHash}, ck} {
		if _, _, err := parseHashKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("hash key %x: err %v", bad, err)
		}
	}
	dev, ino := uint64(0x0102030405060708), uint64(0xf1f2f3f4f5f6f7f8)
	ik := inodeKey(dev, ino, id)
	if len(ik) != 21 || !bytes.HasPrefix(ik, inodePrefix(nil, dev, ino)) {
		t.Fatalf("inode key %x: want 21 bytes starting with its prefix", ik)
	}
	if gdev, gino, gid, err := parseInodeKey(ik); err != nil || gdev != dev || gino != ino || gid != id {
		t.Fatalf("inode key %x: %x %x %x %v", ik, gdev, gino, gid, err)
	}
	for _, bad := range [][]byte{{prefixInode}, ik[:20], append(ik, 0), copyKey(cid, id)} {
		if _, _, _, err := parseInodeKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("inode key %x: err %v", bad, err)
		}
	}
	if gid, err := decodeID(encodeID(id)); err != nil || gid != id {
		t.Fatalf("id: %x %v", gid, err)
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

// TestFingerprintKey: the key is the high half of murmur3's fmix64 (the
// expected values were computed by an independent implementation; fmix64(1)
// = 0xb456bcfc34c2cb2c is well known), and the mixer is a bijection (unmix
// inverts it). The keys are part of the storage format: they must never
// change within a format version.
func TestFingerprintKey(t *testing.T) {
	for _, c := range []struct {
		hash uint64
		key  uint32
	}{
		{0, 0},
		{1, 0xb456bcfc},
		{0x0123456789abcdef, 0x87cbfbfe},
		{math.MaxUint64, 0x64b5720b},
	} {
		if got := fingerprintKey(c.hash); got != c.key {
			t.Errorf("fingerprintKey(%#x) = %#08x, want %#08x", c.hash, got, c.key)
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 10000; i++ {
		k, low := rng.Uint32(), rng.Uint32()
		h := HashWithKey(k, low)
		if got := fingerprintKey(h); got != k {
			t.Fatalf("HashWithKey(%#x, %#x) = %#x, whose key is %#x", k, low, h, got)
		}
		if x := rng.Uint64(); unmix(mix(x)) != x {
			t.Fatalf("unmix(mix(%#x)) = %#x", x, unmix(mix(x)))
		}
	}
	// Manber hashes of 22 significant bits spread over all 32 key bits.
	var or, and uint32 = 0, math.MaxUint32
	for h := uint64(0); h < 1<<22; h += 997 {
		or |= fingerprintKey(h)
		and &= fingerprintKey(h)
	}
	if or != math.MaxUint32 || and != 0 {
		t.Fatalf("keys of small hashes: or %#x and %#x, want every bit both ways", or, and)
	}
}

// mix is the full 64-bit fmix64 of fingerprintKey.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func TestEntriesOf(t *testing.T) {
	manber := fingerprint.DefaultParams()
	chunks, _ := fingerprint.Params{Scheme: fingerprint.Chunks}.Normalize()
	k := func(h uint64) uint32 { return fingerprintKey(h) }
	in := []fingerprint.Feature{{Hash: 5, Count: 1, Len: 3}, {Hash: 2, Count: 2}, {Hash: 5, Count: 2, Len: 3}, {Hash: 9, Count: 0}}
	// Levels: MinBits plus the hash's trailing zeros, at most Bits.
	want := []entry{{k(2), 2, 3}, {k(5), 3, 2}}
	if k(5) < k(2) {
		want[0], want[1] = want[1], want[0]
	}
	if got := entriesOf(manber, in, 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("manber entries: got %v, want %v", got, want)
	}
	if in[0].Hash != 5 {
		t.Fatal("entriesOf modified its input")
	}
	// Features below the file's level are not the file's: dropped.
	if got := entriesOf(manber, in, 3); !reflect.DeepEqual(got, []entry{{k(2), 2, 3}}) {
		t.Fatalf("manber entries at level 3: got %v", got)
	}
	// Chunks weigh count × length; a zero length weighs nothing.
	in = []fingerprint.Feature{{Hash: 2, Count: 3, Len: 10}, {Hash: 7, Count: 1, Len: 0}}
	if got := entriesOf(chunks, in, 0); !reflect.DeepEqual(got, []entry{{k(2), 30, 0}}) {
		t.Fatalf("chunks entries: got %v", got)
	}
	// Distinct hashes with one key merge, their weights added.
	a, b := HashWithKey(0xabcd, 1), HashWithKey(0xabcd, 2)
	in = []fingerprint.Feature{{Hash: a, Count: 2, Len: 100}, {Hash: HashWithKey(0xabce, 0), Count: 1, Len: 8}, {Hash: b, Count: 1, Len: 30}}
	if got := entriesOf(chunks, in, 0); !reflect.DeepEqual(got, []entry{{0xabcd, 230, 0}, {0xabce, 8, 0}}) {
		t.Fatalf("colliding entries: got %v", got)
	}
	// Weights saturate rather than wrap.
	in = []fingerprint.Feature{{Hash: a, Count: math.MaxUint32, Len: 1 << 24}, {Hash: b, Count: math.MaxUint32, Len: 1 << 24}}
	for range 10 {
		in = append(in, in...)
	}
	if got := entriesOf(chunks, in, 0); len(got) != 1 || got[0].weight != math.MaxUint64 {
		t.Fatalf("saturated entries: got %v", got)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 4; i++ {
		r := randRecord(rng)
		f.Add(encodeRecord(nil, &r.FileMeta, rng.Uint32()))
	}
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, v []byte) {
		m, cid, err := decodeRecord(v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, acid, err := decodeRecord(encodeRecord(nil, &m, cid))
		if err != nil || again != m || acid != cid {
			t.Fatalf("re-encoding: %+v %d, %v; want %+v %d", again, acid, err, m, cid)
		}
	})
}

func FuzzDecodeContent(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 4; i++ {
		r := randRecord(rng)
		r.Level, r.LevelWeights = uint8(i), make([]uint64, i)
		f.Add(encodeContent(nil, &r))
	}
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, v []byte) {
		var r FileRecord
		holder, err := decodeContent(v, &r)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		r.ID = holder
		var again FileRecord
		h, err := decodeContent(encodeContent(nil, &r), &again)
		again.ID = h
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-encoding: %+v, %v; want %+v", again, err, r)
		}
	})
}

func FuzzDecodeForward(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	f.Add(encodeForward(nil, randEntries(rng, 5)))
	f.Add(encodeForward(nil, randEntries(rng, 30)))
	ones := randEntries(rng, 30)
	for i := range ones {
		ones[i].weight = 1
	}
	f.Add(encodeForward(nil, ones))
	f.Add([]byte{0})
	f.Add([]byte{2, 0x81, 0b1101_101_0})
	f.Fuzz(func(t *testing.T, v []byte) {
		es, err := decodeForward(v)
		// The reader that queries use agrees with decodeForward.
		r := newForwardReader(v)
		var streamed []entry
		for {
			e, ok := r.next()
			if !ok {
				break
			}
			streamed = append(streamed, e)
		}
		if rerr := r.err(); (rerr != nil) != (err != nil) || err == nil && !slices.Equal(streamed, es) {
			t.Fatalf("forwardReader: %v, %v; decodeForward: %v, %v", streamed, rerr, es, err)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for i, e := range es {
			if e.weight == 0 || i > 0 && es[i-1].key >= e.key {
				t.Fatalf("decoded list %v is not canonical", es)
			}
		}
		again, err := decodeForward(encodeForward(nil, es))
		if err != nil || len(again) != len(es) || len(es) > 0 && !reflect.DeepEqual(again, es) {
			t.Fatalf("re-encoding: %v, %v; want %v", again, err, es)
		}
	})
}

// mergeOperands starts the posting merger on the operands ops of bucket
// key bk, oldest first, handing them over newest first (MergeOlder) or
// oldest first (MergeNewer), as Pebble does in reads and compactions.
func mergeOperands(bk []byte, ops [][]byte, newer bool) (pebble.ValueMerger, error) {
	if newer {
		m, err := postingMerger.Merge(bk, ops[0])
		for _, op := range ops[1:] {
			if err == nil {
				err = m.MergeNewer(op)
			}
		}
		return m, err
	}
	m, err := postingMerger.Merge(bk, ops[len(ops)-1])
	for i := len(ops) - 2; i >= 0 && err == nil; i-- {
		err = m.MergeOlder(ops[i])
	}
	return m, err
}

// TestPostingMergerRuns: Finish merges the operands' sorted runs pairwise;
// the order it reaches is the one sorting all the postings by key, content
// id and age gives, for any number of operands merged in either direction.
func TestPostingMergerRuns(t *testing.T) {
	const b = 11
	r := rand.New(rand.NewPCG(9, 9))
	bk := appendBucketKey(nil, b)
	for trial := range 400 {
		ops := make([][]byte, 1+r.IntN(9))
		for i := range ops {
			var es []postingEntry
			for range r.IntN(40) {
				w := uint64(1 + r.IntN(5))
				if r.IntN(6) == 0 {
					w = tombstone
				}
				es = append(es, postingEntry{b<<lowBits | uint32(r.IntN(30)), uint32(1 + r.IntN(12)), w})
			}
			slices.SortFunc(es, comparePostings)
			es = slices.CompactFunc(es, func(a, b postingEntry) bool { return comparePostings(a, b) == 0 })
			ops[i], _ = encodePostingList(nil, es, nil)
		}
		newer := r.IntN(2) == 0
		vm, err := mergeOperands(bk, ops, newer)
		if err != nil {
			t.Fatal(err)
		}
		m := vm.(*listMerger)
		want := slices.Clone(m.es)
		slices.SortFunc(want, compareRanked)
		m.order()
		if !slices.Equal(m.es, want) {
			t.Fatalf("trial %d (%d operands, newer %v): merged %v, want %v", trial, len(ops), newer, m.es, want)
		}
		if _, _, err := m.Finish(r.IntN(2) == 0); err != nil {
			t.Fatal(err)
		}
		m.Close()
	}
}
