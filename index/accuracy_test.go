package index_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestSmallFileAccuracy measures, on small files of Go's own sources and
// edited copies of them, how well the containment sif estimates separates
// the pairs whose exact containment (over 32-byte windows, by brute force)
// is at least 50 % and 80 % from the others: the best F1 over thresholds,
// the queries with fewer than MinFeatures fingerprints (before boilerplate
// is skipped: a file that is mostly a licence header has few distinctive
// ones, rightly), and the share of queries whose first answer has the
// highest true containment. It compares
// the default parameters with the one-density sampling sif used before
// (min_bits = bits) and with denser targets, and holds the default to being
// at least as good as the old sampling, and to leaving few files of 256 bytes
// or more with too few fingerprints. go test -v prints the table.
func TestSmallFileAccuracy(t *testing.T) {
	root := filepath.Join(runtime.GOROOT(), "src")
	files := smallCorpus(t, root)
	if len(files) < 200 {
		t.Fatalf("%s: only %d files of 256 B to 4 KiB: the measure needs Go's sources", root, len(files))
	}
	c := buildAccuracyCorpus(files)
	truth := c.truth()

	schemes := []struct {
		name string
		p    fingerprint.Params
	}{
		{"one density (bits 8, min_bits 8)", fingerprint.Params{Scheme: fingerprint.Manber, Bits: 8, MinBits: 8}},
		{"target 8, bits 8", fingerprint.Params{Scheme: fingerprint.Manber, Bits: 8, Target: 8}},
		{"default (target 16, bits 9)", fingerprint.DefaultParams()},
		{"target 32, bits 9", fingerprint.Params{Scheme: fingerprint.Manber, Target: 32}},
	}
	results := make([]accuracy, len(schemes))
	for i, s := range schemes {
		results[i] = c.measure(t, s.p, truth)
	}
	t.Logf("%d queries (edited copies of %d files of 256 B–4 KiB from %s) against %d indexed files",
		len(c.queries), len(files), root, len(c.docs))
	t.Logf("| scheme | fingerprints per query | too few | F1 ≥50 %% (P/R) | F1 ≥80 %% (P/R) | first answer right |")
	t.Logf("|---|---|---|---|---|---|")
	for i, s := range schemes {
		r := results[i]
		t.Logf("| %s | %.1f | %d | %.3f (%.2f/%.2f) | %.3f (%.2f/%.2f) | %.3f |", s.name, r.features, r.tooFew,
			r.f1[0].f1, r.f1[0].p, r.f1[0].r, r.f1[1].f1, r.f1[1].p, r.f1[1].r, r.first)
	}
	old, def := results[0], results[1]
	// The level is a function of the size alone, so a file's number of
	// fingerprints is a sample: about 1 in 100 small files falls below
	// MinFeatures by chance (one in two did before).
	if def.tooFew*50 > len(c.queries) || def.tooFew*10 > old.tooFew {
		t.Errorf("default: %d of %d queries of 256 bytes or more had fewer than %d fingerprints (one density: %d)",
			def.tooFew, len(c.queries), index.DefaultMinFeatures, old.tooFew)
	}
	for k := range def.f1 {
		if def.f1[k].f1 < old.f1[k].f1 {
			t.Errorf("default: F1 %.3f at %v, below the one-density sampling's %.3f", def.f1[k].f1, levelsOfTruth[k], old.f1[k].f1)
		}
	}
	if def.first < old.first {
		t.Errorf("default: first answer right %.3f, below the one-density sampling's %.3f", def.first, old.first)
	}
}

var levelsOfTruth = [2]float64{0.5, 0.8}

type doc struct {
	path string
	data []byte
}

type accuracyCorpus struct {
	docs    []doc // indexed: the originals and their edited copies
	queries []doc // edited copies of the originals, indexed too
}

type accuracy struct {
	features float64
	tooFew   int
	f1       [2]struct{ f1, p, r float64 }
	first    float64
}

// smallCorpus returns a deterministic sample of Go's source files of 256 B
// to 4 KiB.
func smallCorpus(t *testing.T, root string) []doc {
	var all []doc
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() < 256 || info.Size() > 4096 {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil {
			all = append(all, doc{path, b})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []doc
	for i := 0; i < len(all); i += max(1, len(all)/300) {
		out = append(out, all[i])
	}
	return out
}

// buildAccuracyCorpus makes two edited copies of each file: lines deleted,
// inserted (from another file) and changed until about 10 % and 30 % of the
// bytes differ. The copies are the queries; every file and copy is
// indexed.
func buildAccuracyCorpus(files []doc) *accuracyCorpus {
	rng := rand.New(rand.NewPCG(8, 1))
	c := &accuracyCorpus{}
	for i, f := range files {
		c.docs = append(c.docs, f)
		for j, rate := range []float64{0.1, 0.3} {
			other := files[(i+1+j)%len(files)].data
			e := doc{fmt.Sprintf("%s.edit%d", f.path, j), editLines(rng, f.data, other, rate)}
			c.docs = append(c.docs, e)
			c.queries = append(c.queries, e)
		}
	}
	return c
}

// editLines changes lines of data until about rate of its bytes are new.
func editLines(rng *rand.Rand, data, other []byte, rate float64) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	donor := bytes.SplitAfter(other, []byte("\n"))
	changed := 0
	for float64(changed) < rate*float64(len(data)) && len(lines) > 1 {
		i := rng.IntN(len(lines))
		switch rng.IntN(3) {
		case 0: // delete
			changed += len(lines[i])
			lines = slices.Delete(lines, i, i+1)
		case 1: // insert a line of another file
			l := donor[rng.IntN(len(donor))]
			changed += len(l)
			lines = slices.Insert(lines, i, l)
		default: // change a few bytes of the line
			l := slices.Clone(lines[i])
			for range 1 + rng.IntN(3) {
				if len(l) > 1 {
					l[rng.IntN(len(l)-1)] = byte('a' + rng.IntN(26))
				}
			}
			changed += len(l)
			lines[i] = l
		}
	}
	return bytes.Join(lines, nil)
}

// windows returns the distinct 32-byte windows of b, as strings.
func windows(b []byte) map[string]bool {
	w := make(map[string]bool, len(b))
	for i := 0; i+32 <= len(b); i++ {
		w[string(b[i:i+32])] = true
	}
	return w
}

// truth returns, per query, the exact containment of the query in every
// indexed file that shares a window with it, by path.
func (c *accuracyCorpus) truth() []map[string]float64 {
	qw := make([]map[string]bool, len(c.queries))
	holders := map[string][]int{}
	for i, q := range c.queries {
		qw[i] = windows(q.data)
		for w := range qw[i] {
			holders[w] = append(holders[w], i)
		}
	}
	out := make([]map[string]float64, len(c.queries))
	for i := range out {
		out[i] = map[string]float64{}
	}
	for _, d := range c.docs {
		counts := map[int]int{}
		for w := range windows(d.data) {
			for _, q := range holders[w] {
				counts[q]++
			}
		}
		for q, n := range counts {
			if c.queries[q].path != d.path {
				out[q][d.path] = float64(n) / float64(len(qw[q]))
			}
		}
	}
	return out
}

// measure indexes the corpus with p and scores every query's estimates
// against the truth.
func (c *accuracyCorpus) measure(t *testing.T, p fingerprint.Params, truth []map[string]float64) accuracy {
	p, err := p.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	ix := openMem(t, nil, p)
	sketches := map[string]*fingerprint.Sketch{}
	for _, d := range c.docs {
		sk, err := fingerprint.SketchReader(bytes.NewReader(d.data), p)
		if err != nil {
			t.Fatal(err)
		}
		sketches[d.path] = sk
		if _, err := ix.Put(index.FileMeta{Path: d.path, Size: int64(len(d.data))}, sk); err != nil {
			t.Fatal(err)
		}
	}
	type pair struct{ est, truth float64 }
	var pairs []pair
	var acc accuracy
	firstRight := 0
	for i, q := range c.queries {
		res, err := ix.Similar(context.Background(), index.Query{Path: q.path, Sketch: sketches[q.path]}, index.QueryOptions{Threshold: 1e-9})
		if err != nil {
			t.Fatal(err)
		}
		acc.features += float64(res.QueryFeatures)
		if res.QueryFeatures < index.DefaultMinFeatures {
			acc.tooFew++ // too few before any is skipped as boilerplate
		}
		est := map[string]float64{}
		for _, m := range res.Matches {
			est[m.Path] = m.Containment
		}
		for path, tc := range truth[i] {
			pairs = append(pairs, pair{est[path], tc})
			delete(est, path)
		}
		for _, e := range est {
			pairs = append(pairs, pair{e, 0})
		}
		best := 0.0
		for _, tc := range truth[i] {
			best = max(best, tc)
		}
		if len(res.Matches) > 0 && truth[i][res.Matches[0].Path] == best {
			firstRight++
		}
	}
	acc.features /= float64(len(c.queries))
	acc.first = float64(firstRight) / float64(len(c.queries))
	slices.SortFunc(pairs, func(a, b pair) int {
		switch {
		case a.est > b.est:
			return -1
		case a.est < b.est:
			return 1
		}
		return 0
	})
	for k, lvl := range levelsOfTruth {
		pos := 0
		for _, p := range pairs {
			if p.truth >= lvl {
				pos++
			}
		}
		tp, n := 0, 0
		for j, p := range pairs {
			if p.est == 0 {
				break // not listed: never retrieved
			}
			n++
			if p.truth >= lvl {
				tp++
			}
			if j+1 < len(pairs) && pairs[j+1].est == p.est {
				continue // one threshold takes ties together
			}
			prec, rec := float64(tp)/float64(n), float64(tp)/float64(pos)
			if f := 2 * prec * rec / (prec + rec); tp > 0 && f > acc.f1[k].f1 {
				acc.f1[k].f1, acc.f1[k].p, acc.f1[k].r = f, prec, rec
			}
		}
	}
	return acc
}
