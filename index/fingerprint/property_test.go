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
// Chunks that end at or before the edit are the same in both streams: where a
// chunk ends depends only on its own bytes.
//
// After the edit the two chunkings see the same bytes but start from
// different cut points. Where a chunking cuts next depends only on its last
// cut and the bytes after it, so from the first cut point they share they
// agree forever. Once a chunk has had 64 bytes hashed, its gear hash depends
// only on the last 64 bytes, so both chunkings compute the same hash at every
// position they both scan, and they differ only in the mask (strict or loose,
// by the position in the chunk) and in where they skip. A point whose hash
// passes the strict mask (and so the loose one) is a cut for both as soon as
// both are past their skips and have not cut since; the chunkings therefore
// meet at about the first such point that comes a chunk or so after the
// edit. For the parameters here (MinChunk+64 at most about AvgChunk) that
// takes a few chunks on random data: the test asks for 8·MaxChunk, 64 average
// chunks at the defaults, and reports the farthest meeting point it saw.
//
// No bound holds for all data: a long run of one byte passes the test either
// everywhere or nowhere, and the two chunkings then cut every MinChunk+1 or
// MaxChunk bytes in two phases that meet only where the run ends. Nor does
// the argument hold when most chunks end before 64 bytes are hashed (say
// AvgChunk 64, MinChunk 8): those cut points depend on where the chunk began,
// and the chunkings can run side by side for many chunks.
func TestChunksEditLocality(t *testing.T) {
	cases := 300
	if testing.Short() {
		cases = 60
	}
	for _, p := range []Params{{Scheme: Chunks}, {Scheme: Chunks, AvgChunk: 1024}, {Scheme: Chunks, AvgChunk: 128}} {
		p := mustNormalize(t, p)
		r := rand.New(rand.NewPCG(43, uint64(p.AvgChunk)))
		farthest := int64(0)
		for c := range cases {
			data := randomBytes(uint64(c), 30000+r.IntN(60000))
			if c%3 == 0 {
				data = textBytes(uint64(c), len(data))
			}
			for _, e := range randomEdits(r, len(data)) {
				edited := e.apply(r, data)
				a, _ := sketch(t, p, data, nil)
				b, _ := sketch(t, p, edited, nil)
				at, end, shift := int64(e.at), int64(e.at+e.ins), int64(e.ins-e.del)

				// Before the edit.
				i := 0
				for ; i < len(a) && a[i].Offset+int64(a[i].Len) <= at; i++ {
					if i >= len(b) || b[i] != a[i] {
						t.Fatalf("%v, case %d, %+v: chunk #%d %+v before the edit became %+v", p, c, e, i, a[i], b[min(i, len(b)-1)])
					}
				}

				// After the edit, from the first common cut.
				cutsA := map[int64]int{} // cut (in edited coordinates) -> index of the chunk starting there
				for j, f := range a {
					if f.Offset >= at+int64(e.del) {
						cutsA[f.Offset+shift] = j
					}
				}
				ja, jb := -1, -1
				for j, f := range b {
					if k, ok := cutsA[f.Offset]; ok && f.Offset >= end {
						ja, jb = k, j
						break
					}
				}
				if jb < 0 {
					// The streams end before meeting; then they must end
					// within 8·MaxChunk of the edit.
					if int64(len(edited))-end > 8*int64(p.MaxChunk) {
						t.Fatalf("%v, case %d, %+v: chunkings never meet after the edit", p, c, e)
					}
					continue
				}
				meet := b[jb].Offset
				farthest = max(farthest, meet-end)
				if meet-end > 8*int64(p.MaxChunk) {
					t.Errorf("%v, case %d, %+v: chunkings meet at %d, %d bytes after the edit, past 8·MaxChunk", p, c, e, meet, meet-end)
				}
				ta := slices.Clone(a[ja:])
				for j := range ta {
					ta[j].Offset += shift
				}
				if d := diffFingerprints(b[jb:], ta); d != "" {
					t.Fatalf("%v, case %d, %+v: after meeting at %d: %s", p, c, e, meet, d)
				}
			}
		}
		t.Logf("%v: chunkings met at most %d bytes (%.1f·MaxChunk) after the edit", p, farthest, float64(farthest)/float64(p.MaxChunk))
	}
}
