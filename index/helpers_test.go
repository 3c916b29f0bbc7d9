package index_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

var (
	// manber is the scheme the scripts in testdata were written for: top
	// level 8, small files sampled for at least 8 fingerprints. Their levels
	// and counts are spelled out there, so they are pinned here rather than
	// following the default.
	manber = mustParams(fingerprint.Params{Scheme: fingerprint.Manber, Bits: 8, Target: 8})
	chunks = mustParams(fingerprint.Params{Scheme: fingerprint.Chunks})
)

func mustParams(p fingerprint.Params) fingerprint.Params {
	p, err := p.Normalize()
	if err != nil {
		panic(err)
	}
	return p
}

// openMem opens an index in /db on fs (a new MemFS when nil) and closes it
// when the test ends.
func openMem(t testing.TB, fs vfs.FS, p fingerprint.Params) *index.Index {
	t.Helper()
	if fs == nil {
		fs = vfs.NewMem()
	}
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Close(); err != nil && !errors.Is(err, index.ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
	return ix
}

func strongOf(label string) [32]byte {
	if label == "" {
		return [32]byte{}
	}
	return sha256.Sum256([]byte(label))
}

// lenOf is the chunk length of a hash in test sketches: equal hashes must
// have equal lengths.
func lenOf(h uint64) uint32 { return 1 + uint32(h%3000) }

// sketchOf builds a sketch by hand. For chunks, features without a length
// get lenOf(hash).
func sketchOf(p fingerprint.Params, label string, size int64, fs ...fingerprint.Feature) *fingerprint.Sketch {
	sk := &fingerprint.Sketch{Params: p, Features: slices.Clone(fs)}
	sk.Size = size
	sk.Strong = strongOf(label)
	sk.Type = fingerprint.TypeText
	for i := range sk.Features {
		if p.KnowsLengths() && sk.Features[i].Len == 0 {
			sk.Features[i].Len = lenOf(sk.Features[i].Hash)
		}
		if !p.KnowsLengths() {
			sk.Features[i].Len = uint32(p.Window)
		}
	}
	slices.SortFunc(sk.Features, func(a, b fingerprint.Feature) int {
		return cmpU64(a.Hash, b.Hash)
	})
	return sk
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// randSketch draws n distinct features from a pool of poolSize hashes, so
// random sketches overlap, with a random strong hash.
func randSketch(rng *rand.Rand, p fingerprint.Params, n, poolSize int) *fingerprint.Sketch {
	seen := map[uint64]bool{}
	var fs []fingerprint.Feature
	for len(fs) < n && len(seen) < poolSize {
		h := poolHash(rng.IntN(poolSize))
		if seen[h] {
			continue
		}
		seen[h] = true
		c := uint32(1)
		if rng.IntN(5) == 0 {
			c += uint32(rng.IntN(3))
		}
		fs = append(fs, fingerprint.Feature{Hash: h, Count: c})
	}
	sk := sketchOf(p, fmt.Sprint(rng.Uint64()), int64(256*n+rng.IntN(256)), fs...)
	if rng.IntN(4) == 0 {
		sk.Type = fingerprint.TypeBinary
	}
	sk.Key = rng.Uint32()
	sk.Sum[rng.IntN(fingerprint.NumTags)] = rng.Uint32()
	return sk
}

// poolHash spreads small numbers over the hash space. Its hashes have their
// low 8 bits zero: with manber they are of the top level, which a file of
// any size keeps (fingerprint.Params.HashLevel).
func poolHash(i int) uint64 { return topHash(uint64(i+1) * 0x9e3779b97f4a7c15) }

// topHash turns any number into a manber hash of the top level (with Bits
// up to 8 more than MinBits), which files of every size keep.
func topHash(h uint64) uint64 { return h << 8 }

// entriesOf is what the index should store of sk's features: per
// fingerprint key, the total weight of the features with that key, sorted by
// key. It is computed here independently of the index's own code, from the
// key function alone.
func entriesOf(p fingerprint.Params, sk *fingerprint.Sketch) []index.Entry {
	weights := map[uint32]uint64{}
	for _, f := range sk.Features {
		if w := uint64(f.Count) * p.Weight(f); w > 0 {
			weights[index.FingerprintKey(f.Hash)] += w
		}
	}
	var es []index.Entry
	for _, k := range slices.Sorted(maps.Keys(weights)) {
		es = append(es, index.Entry{Key: k, Weight: weights[k]})
	}
	return es
}

// mustClean fails the test when Check finds a problem.
func mustClean(t testing.TB, ix *index.Index) *index.CheckReport {
	t.Helper()
	rep, err := ix.Check()
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("check found %d problems (+%d):\n%s", len(rep.Problems), rep.More, strings.Join(rep.Problems, "\n"))
	}
	return rep
}

// model is what an index should hold: path → file.
type model map[string]modelFile

type modelFile struct {
	meta index.FileMeta
	sk   *fingerprint.Sketch
}

func (m model) clone() model { return maps.Clone(m) }

func metaFor(path string, sk *fingerprint.Sketch, rng *rand.Rand) index.FileMeta {
	return index.FileMeta{Path: path, Size: sk.Size, MtimeNs: rng.Int64(), Dev: 1, Ino: rng.Uint64(), Mode: 0o644}
}

// verifyModel checks that ix holds exactly m: records, forward lists, file
// listing, files by inode and counts.
func verifyModel(t testing.TB, ix *index.Index, m model) {
	t.Helper()
	p := ix.Params()
	var listed []string
	err := ix.Files("", func(r index.FileRecord) error {
		listed = append(listed, r.Path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(maps.Keys(m))
	if !slices.Equal(listed, want) {
		t.Fatalf("files:\n got %q\nwant %q", listed, want)
	}
	var bytes, features uint64
	for _, path := range want {
		f := m[path]
		rec, err := ix.Lookup(path)
		if err != nil {
			t.Fatal(err)
		}
		if rec.FileMeta != f.meta || rec.Summary != f.sk.Summary {
			t.Fatalf("%q: record %+v, want %+v %+v", path, rec, f.meta, f.sk.Summary)
		}
		if rec.Weight != f.sk.Weight() || int(rec.Features) != len(f.sk.Features) {
			t.Fatalf("%q: weight %d features %d, want %d %d", path, rec.Weight, rec.Features, f.sk.Weight(), len(f.sk.Features))
		}
		fwd, err := ix.ForwardList(path)
		if err != nil {
			t.Fatal(err)
		}
		if wantFwd := entriesOf(p, f.sk); !slices.Equal(fwd, wantFwd) {
			t.Fatalf("%q: forward list %v, want %v", path, fwd, wantFwd)
		}
		bytes += uint64(f.meta.Size)
		features += uint64(len(f.sk.Features))
	}
	verifyInodes(t, ix, m)
	st, err := ix.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != uint64(len(m)) || st.Bytes != bytes || st.Features != features || st.Fingerprints != 0 {
		t.Fatalf("stats %+v, want files %d bytes %d features %d fingerprints 0 (not tracked)", st, len(m), bytes, features)
	}
}

// verifyInodes checks that LookupInode finds, for every device and inode
// of m, exactly the files of m with them, in file id order.
func verifyInodes(t testing.TB, ix *index.Index, m model) {
	t.Helper()
	type inode struct{ dev, ino uint64 }
	want := map[inode][]string{}
	for path, f := range m {
		in := inode{f.meta.Dev, f.meta.Ino}
		want[in] = append(want[in], path)
	}
	for in, paths := range want {
		recs, err := ix.LookupInode(in.dev, in.ino)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, r := range recs {
			if i > 0 && r.ID <= recs[i-1].ID {
				t.Fatalf("inode %d:%d: file id %d listed after %d", in.dev, in.ino, r.ID, recs[i-1].ID)
			}
			got = append(got, r.Path)
		}
		slices.Sort(got)
		slices.Sort(paths)
		if !slices.Equal(got, paths) {
			t.Fatalf("inode %d:%d: files %q, want %q", in.dev, in.ino, got, paths)
		}
	}
}

// verifySimilar runs q against ix with no document-frequency cap and the
// least threshold, and checks that every file sharing weight with q (or
// identical to it) is listed with exactly fingerprint.Compare's numbers, in
// order.
func verifySimilar(t testing.TB, ix *index.Index, m model, qpath string, q *fingerprint.Sketch) {
	t.Helper()
	res, err := ix.Similar(context.Background(), index.Query{Path: qpath, Sketch: q}, index.QueryOptions{Threshold: 1e-12, MaxDF: -1, MinFeatures: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fingerprint.Comparison{}
	for path, f := range m {
		if path == qpath {
			continue
		}
		c := fingerprint.Compare(q, f.sk)
		if c.SharedWeight > 0 || c.Identical {
			want[path] = c
		}
	}
	if res.QueryWeight != q.Weight() || res.QueryFeatures != len(q.Features) || res.Skipped != 0 {
		t.Fatalf("query %q: weight %d features %d skipped %d, want %d %d 0",
			qpath, res.QueryWeight, res.QueryFeatures, res.Skipped, q.Weight(), len(q.Features))
	}
	if len(res.Matches) != len(want) {
		var got []string
		for _, mt := range res.Matches {
			got = append(got, mt.Path)
		}
		t.Fatalf("query %q: %d matches %q, want %d", qpath, len(res.Matches), got, len(want))
	}
	for i, mt := range res.Matches {
		c, ok := want[mt.Path]
		if !ok {
			t.Fatalf("query %q: unexpected match %q", qpath, mt.Path)
		}
		if mt.SharedWeight != c.SharedWeight || mt.Containment != c.AInB || mt.ReverseContainment != c.BInA ||
			mt.Resemblance != c.Resemblance || mt.SharedBytes != c.SharedBytes || mt.Identical != c.Identical {
			t.Fatalf("query %q, match %q: got shared %d contain %v reverse %v resemble %v bytes %d identical %v; Compare says %+v",
				qpath, mt.Path, mt.SharedWeight, mt.Containment, mt.ReverseContainment, mt.Resemblance, mt.SharedBytes, mt.Identical, c)
		}
		if i > 0 {
			prev := res.Matches[i-1]
			ordered := prev.Identical && !mt.Identical ||
				prev.Identical == mt.Identical && (prev.Containment > mt.Containment ||
					prev.Containment == mt.Containment && (prev.Resemblance > mt.Resemblance ||
						prev.Resemblance == mt.Resemblance && (prev.SharedWeight > mt.SharedWeight ||
							prev.SharedWeight == mt.SharedWeight && prev.Path < mt.Path)))
			if !ordered {
				t.Fatalf("query %q: match %q listed before %q", qpath, prev.Path, mt.Path)
			}
		}
	}
}
