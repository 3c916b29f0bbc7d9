package fingerprint

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// An edit replaces the bytes [at, at+del) of the original with ins new bytes.
// In the edited stream the new bytes are [at, at+ins): everything before at is
// untouched, and the edited stream from at+ins on is the original from at+del
// on, shifted by ins-del.
type edit struct {
	at, del, ins int
}

func (e edit) apply(r *rand.Rand, data []byte) []byte {
	ins := make([]byte, e.ins)
	for i := range ins {
		ins[i] = byte(r.Uint32())
	}
	return slices.Concat(data[:e.at], ins, data[e.at+e.del:])
}

// randomEdits returns seeded insertions and deletions at random places.
func randomEdits(r *rand.Rand, n int) []edit {
	e := edit{at: r.IntN(n)}
	switch r.IntN(3) {
	case 0:
		e.ins = 1 + r.IntN(300)
	case 1:
		e.del = 1 + r.IntN(min(300, n-e.at))
	default:
		e.ins, e.del = 1+r.IntN(20), r.IntN(min(20, n-e.at))
	}
	return []edit{e}
}

// TestManberEditLocality checks what an edit can change in the manber
// fingerprints.
//
// Before the edit nothing changes: which windows are kept up to a point
// depends only on the bytes up to that point, so every fingerprint that ends
// before the edit is the same in both streams.
//
// After the edit, with editEnd = at+ins in the edited stream, every window
// starting at or after editEnd has the same hash as its shifted twin, so the
// candidates (windows with k low zero bits) agree from editEnd on. The kept
// windows need not: the non-overlap rule is a greedy scan, and the two scans
// enter the common region with different last kept windows. They keep the
// same windows from the first candidate y on that both must keep, and one
// such is any candidate y >= editEnd+W-1 with no candidate in [y-W+1, y): a
// window kept before y either starts before editEnd, so ends before
// editEnd+W-1 <= y, or is a candidate at or before y-W, so ends before y.
// From y on the two greedy scans see the same candidates in the same state.
//
// There is no bound on where y falls that holds for all data. In a long run
// of zero bytes every window is a candidate, the scans keep every W-th window
// in two different phases, and they never agree until the run ends; the same
// goes for any stretch whose candidates lie less than W apart. In particular
// "every fingerprint starting at or after editEnd+2W matches the original"
// fails whenever a chain of candidates closer than W to each other crosses
// editEnd+2W. On random data a candidate is followed by another within W-1
// bytes with probability 1-(1-2^-k)^(W-1), about 18 % for k = 8 and W = 50 and
// 54 % for k = 6, so chains are short: the test checks that y comes within
// editEnd + W + 32·2^k (32 candidates on average, each with a 46 % or better
// chance of ending the chain) and counts, for information, how often the
// editEnd+2W rule fails.
func TestManberEditLocality(t *testing.T) {
	cases := 300
	if testing.Short() {
		cases = 60
	}
	for _, p := range []Params{{Scheme: Manber}, {Scheme: Manber, Bits: 6}, {Scheme: Manber, ModBits: 30, Window: 16}} {
		p := mustNormalize(t, p)
		r := rand.New(rand.NewPCG(42, uint64(p.Bits)))
		late := 0 // cases where a fingerprint at or after editEnd+2W differs
		for c := range cases {
			data := randomBytes(uint64(c), 20000+r.IntN(40000))
			if c%3 == 0 {
				data = textBytes(uint64(c), len(data))
			}
			for _, e := range randomEdits(r, len(data)) {
				edited := e.apply(r, data)
				a, _ := sketch(t, p, data, nil)
				b, _ := sketch(t, p, edited, nil)
				w := int64(p.Window)
				at, end, shift := int64(e.at), int64(e.at+e.ins), int64(e.ins-e.del)

				// Before the edit.
				var pa, pb []Fingerprint
				for _, f := range a {
					if f.Offset+w <= at {
						pa = append(pa, f)
					}
				}
				for _, f := range b {
					if f.Offset+w <= at {
						pb = append(pb, f)
					}
				}
				if d := diffFingerprints(pb, pa); d != "" {
					t.Fatalf("%v, case %d, %+v: before the edit: %s", p, c, e, d)
				}

				// After the edit, from the first candidate both scans keep.
				y := int64(-1)
				cands := rollingCandidates(edited, p)
				for i, x := range cands {
					if x >= end+w-1 && (i == 0 || cands[i-1] <= x-w) {
						y = x
						break
					}
				}
				if y < 0 {
					// No such candidate: the stream ends first. Nothing to check.
					continue
				}
				if limit := end + w + 32<<p.Bits; y > limit {
					t.Errorf("%v, case %d, %+v: first common kept window at %d, past editEnd+W+32·2^k = %d", p, c, e, y, limit)
				}
				var ta, tb []Fingerprint
				for _, f := range a {
					if f.Offset+shift >= y {
						f.Offset += shift
						ta = append(ta, f)
					}
				}
				for _, f := range b {
					if f.Offset >= y {
						tb = append(tb, f)
					}
				}
				if d := diffFingerprints(tb, ta); d != "" {
					t.Fatalf("%v, case %d, %+v: from %d on: %s", p, c, e, y, d)
				}
				if len(tb) == 0 {
					t.Fatalf("%v, case %d, %+v: no fingerprint from %d on, though a candidate is there", p, c, e, y)
				}

				// The editEnd+2W rule, for information.
				orig := map[Fingerprint]bool{}
				for _, f := range a {
					f.Offset += shift
					orig[f] = true
				}
				for _, f := range b {
					if f.Offset >= end+2*w && !orig[f] {
						late++
						break
					}
				}
			}
		}
		t.Logf("%v: in %d of %d edits a fingerprint at or after editEnd+2W is not in the original", p, late, cases)
	}
}

// rollingCandidates returns the start of every window whose hash has its low
// k bits zero, with the plain one-byte rolling update (the fast scanner's
// strides are checked against Horner's rule in TestReferences).
func rollingCandidates(data []byte, p Params) []int64 {
	m := newManber(p, func(Fingerprint) {})
	var out []int64
	var h uint64
	for i, c := range data {
		var old byte
		if i >= p.Window {
			old = data[i-p.Window]
		}
		h = h*m.p + uint64(c) - m.out[old]
		if i >= p.Window-1 && h&m.sel == 0 {
			out = append(out, int64(i-p.Window+1))
		}
	}
	return out
}

// TestChunksEditLocality checks what an edit can change in the chunks.
//
// Write H(q) for the gear hash of a stream at byte q (a function of the 64
// bytes ending at q) and, for a stream with its chunking, s(q) for the start
// of the chunk that holds q and d(q) = q − s(q). By definition a chunk ends
// just after q, a cut at q+1, exactly when
//
//	q+1 is the stream's end, or d(q)+1 = MaxChunk, or
//	d(q) ≥ MinChunk and H(q) passes the mask for d(q)
//	(strict while d(q) < AvgChunk, loose after).
//
// Take an edit that ends at end = at+ins in the edited stream (which is the
// original shifted by shift = ins−del from there on).
//
// Before the edit nothing changes: the cut decisions at bytes q < at see the
// same hashes and, inductively, the same chunk starts, so every chunk that
// ends at or before at is the same in both streams.
//
// After the edit, every byte c ≥ end+63 has the same 64 bytes behind it in
// both streams, so the same hash: the test checks this, and then checks the
// rule above at every such c in both streams, with each stream's own d(c).
// So a cut candidate c is taken by both streams exactly when each stream's
// chunk holding c began at or before c − MinChunk (its previous cut is at
// most c − MinChunk and none intervenes) and H(c) passes both streams' masks
// (a hash passing the strict mask passes both), or a MaxChunk limit falls
// there. Once the streams share a cut x with x ≥ end and x+MinChunk ≥ end+63
// (x ≥ syncFrom = end + max(0, 63−MinChunk)), every byte either tests after
// x has the same hash and the same d in both, so they cut alike from there
// on: the test finds the first shared cut M ≥ syncFrom and checks that the
// chunks from M on are the same. (A shared cut in [end, syncFrom) does not
// suffice when MinChunk < 63: the next tested bytes may still see the edit.)
//
// Where M falls has no bound that holds for all data: a long run of one byte
// passes the test either everywhere or nowhere, and the two chunkings then
// cut every MinChunk+1 or MaxChunk bytes in two phases that meet only where
// the run ends. On random data the streams meet at the first candidate past
// end+63 where both are MinChunk past their last cut (and, for a candidate
// that passes only the loose mask, both AvgChunk past it). That takes a
// chunk or two on average, but the normalization makes it a race with a
// long tail: each stream takes the first loose candidate after its own
// start+AvgChunk, so two streams out of phase by more than about a quarter
// of AvgChunk tend to stay out of phase until a strict candidate comes where
// neither has just cut. Measured over 20000 random edits per setting, M − end
// averages 0.37, 0.29, 0.24 and 0.16·MaxChunk for AvgChunk 64, 128, 256 and
// 1024 (about MinChunk + 63 + 1 to 1.7·AvgChunk), with 99th percentiles of
// 0.9 to 1.3·MaxChunk and maxima of 2.4 to 3.1·MaxChunk. (Before the hash
// was made content-defined, AvgChunk 64 averaged 2.4·MaxChunk, with a
// maximum of 24.) The test requires, on random data, M − end ≤ 4·MaxChunk
// for every edit and a mean of at most MinChunk + 63 + 3·AvgChunk, and
// reports the farthest M − end it saw on random and on text-like data. (When
// the streams only meet at their end, M − end is a lower bound, and still
// held to the bound.)
func TestChunksEditLocality(t *testing.T) {
	cases := 300
	if testing.Short() {
		cases = 60
	}
	for _, p := range []Params{
		{Scheme: Chunks},
		{Scheme: Chunks, AvgChunk: 1024},
		{Scheme: Chunks, AvgChunk: 128},
		{Scheme: Chunks, AvgChunk: 64},
	} {
		p := mustNormalize(t, p)
		ch := newChunker(p, func(Fingerprint) {})
		cutRule := func(h uint64, d int, last bool) bool {
			switch {
			case last || d+1 == p.MaxChunk:
				return true
			case d < p.MinChunk:
				return false
			case d < p.AvgChunk:
				return h&ch.maskS == 0
			default:
				return h&ch.maskL == 0
			}
		}
		bound, meanBound := 4*p.MaxChunk, float64(p.MinChunk+63+3*p.AvgChunk)
		r := rand.New(rand.NewPCG(43, uint64(p.AvgChunk)))
		var farthest [2]int // random, text
		sum, n := 0, 0      // of M − end on random data
		for c := range cases {
			data := randomBytes(uint64(c), 30000+r.IntN(60000))
			text := c%3 == 0
			if text {
				data = textBytes(uint64(c), len(data))
			}
			for _, e := range randomEdits(r, len(data)) {
				edited := e.apply(r, data)
				a, _ := sketch(t, p, data, nil)
				b, _ := sketch(t, p, edited, nil)
				at, end, shift := e.at, e.at+e.ins, e.ins-e.del

				// Before the edit.
				i := 0
				for ; i < len(a) && a[i].Offset+int64(a[i].Len) <= int64(at); i++ {
					if i >= len(b) || b[i] != a[i] {
						t.Fatalf("%v, case %d, %+v: chunk #%d %+v before the edit became %+v", p, c, e, i, a[i], b[min(i, len(b)-1)])
					}
				}

				// After the edit: the rule, at every byte from end+63 on,
				// in original (q) and edited (x = q+shift) coordinates.
				ga, gb := gearHashes(data), gearHashes(edited)
				sa, cutA := chunkStarts(a, len(data))
				sb, cutB := chunkStarts(b, len(edited))
				for x := end + 63; x < len(edited); x++ {
					q := x - shift
					if ga[q] != gb[x] {
						t.Fatalf("%v, case %d, %+v: hash at %d differs from the original's at %d", p, c, e, x, q)
					}
					wantA := cutRule(ga[q], q-sa[q], q+1 == len(data))
					wantB := cutRule(gb[x], x-sb[x], x+1 == len(edited))
					if cutA[q+1] != wantA || cutB[x+1] != wantB {
						t.Fatalf("%v, case %d, %+v: after byte %d (original %d): cut %v, original %v; the rule says %v and %v (chunks began at %d, original %d)",
							p, c, e, x, q, cutB[x+1], cutA[q+1], wantB, wantA, sb[x], sa[q])
					}
				}

				// From the first shared cut at or after syncFrom on, the
				// same chunks.
				syncFrom := end + max(0, 63-p.MinChunk)
				ja, jb := -1, -1
				for j := range b {
					x := int(b[j].Offset)
					if x >= syncFrom && x-shift < len(data) && cutA[x-shift] {
						jb = j
						ja, _ = slices.BinarySearchFunc(a, int64(x-shift), func(f Fingerprint, o int64) int { return int(f.Offset - o) })
						break
					}
				}
				meet := len(edited) // the streams' shared end
				if jb >= 0 {
					meet = int(b[jb].Offset)
					ta := slices.Clone(a[ja:])
					for j := range ta {
						ta[j].Offset += int64(shift)
					}
					if d := diffFingerprints(b[jb:], ta); d != "" {
						t.Fatalf("%v, case %d, %+v: after meeting at %d: %s", p, c, e, meet, d)
					}
				}
				if text {
					farthest[1] = max(farthest[1], meet-end)
				} else {
					farthest[0] = max(farthest[0], meet-end)
					sum, n = sum+meet-end, n+1
					if meet-end > bound {
						t.Errorf("%v, case %d, %+v: chunkings meet at %d, %d bytes after the edit, past 4·MaxChunk", p, c, e, meet, meet-end)
					}
				}
			}
		}
		mean := float64(sum) / float64(n)
		if mean > meanBound {
			t.Errorf("%v: chunkings meet on average %.0f bytes after the edit on random data, past MinChunk+63+3·AvgChunk = %.0f", p, mean, meanBound)
		}
		t.Logf("%v: chunkings met on average %.0f bytes (%.2f·MaxChunk) and at most %d (%.2f·MaxChunk) after the edit on random data, at most %d (%.2f·MaxChunk) on text",
			p, mean, mean/float64(p.MaxChunk), farthest[0], float64(farthest[0])/float64(p.MaxChunk), farthest[1], float64(farthest[1])/float64(p.MaxChunk))
	}
}

// gearHashes returns the gear hash of data at every byte (rolled; the
// references compute it afresh, and TestGearHash checks the two agree).
func gearHashes(data []byte) []uint64 {
	out := make([]uint64, len(data))
	var h uint64
	for i, c := range data {
		h = h<<1 + gear[c]
		out[i] = h
	}
	return out
}

func TestGearHash(t *testing.T) {
	for name, data := range testInputs() {
		data = data[:min(len(data), 5000)]
		for q, h := range gearHashes(data) {
			if want := naiveGear(data, q); h != want {
				t.Fatalf("%s: hash at %d is %#x, want %#x", name, q, h, want)
			}
		}
	}
}

// chunkStarts returns, for a stream of n bytes cut into fps, the start of the
// chunk that holds each byte, and which offsets in [0, n] are cuts (chunk
// ends, and 0).
func chunkStarts(fps []Fingerprint, n int) (starts []int, cut []bool) {
	starts, cut = make([]int, n), make([]bool, n+1)
	cut[0] = true
	for _, f := range fps {
		for q := f.Offset; q < f.Offset+int64(f.Len); q++ {
			starts[q] = int(f.Offset)
		}
		cut[f.Offset+int64(f.Len)] = true
	}
	return starts, cut
}
