package main

// The accuracy queries: what sifbench accuracy asks about, drawn from an
// assembled set (see accuracy_sources.go). Each set's older versions are
// indexed; its newer versions are where most queries come from, so a
// query has true near-matches (the file changed between versions),
// identical matches (it did not) or nothing (it is new).

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// sizeBuckets are the query size classes, [lo, hi) in bytes.
var sizeBuckets = []struct {
	Name   string
	Lo, Hi int64
}{
	{"256 B-4 KB", 256, 4 << 10},
	{"4-32 KB", 4 << 10, 32 << 10},
	{"32 KB-1 MB", 32 << 10, 1<<20 + 1},
}

// bucketOf returns the size bucket of n bytes, or -1.
func bucketOf(n int64) int {
	for i, b := range sizeBuckets {
		if n >= b.Lo && n < b.Hi {
			return i
		}
	}
	return -1
}

// corpusFile is a file of the corpus with its content hash.
type corpusFile struct {
	Path   string
	Size   int64
	Strong [32]byte
}

// hashFiles lists the regular files under root of at least minSize bytes,
// sorted by path, with their SHA-256.
func hashFiles(root string, minSize int64) ([]corpusFile, error) {
	paths := regularFiles(root, minSize, 1<<62)
	out := make([]corpusFile, len(paths))
	err := parallel(len(paths), func(i int) error {
		b, err := os.ReadFile(paths[i])
		if err != nil {
			return err
		}
		out[i] = corpusFile{Path: paths[i], Size: int64(len(b)), Strong: sha256.Sum256(b)}
		return nil
	})
	return out, err
}

// accQuery is one query file of the accuracy benchmark.
type accQuery struct {
	Path   string `json:"path"`   // the file queried, outside the indexed tree
	Source string `json:"source"` // the corpus file it was made from
	Kind   string `json:"kind"`   // identical, newer, edited, excerpt or spliced
	Bucket int    `json:"bucket"`
	Size   int64  `json:"size"`
}

// sampleQueries writes perBucket queries per size bucket into dir, from a
// fixed seed: a fifth are files of the newer versions identical to an
// indexed file, half are other files of the newer versions (changed,
// moved or new), and the rest are indexed files modified here (lines
// edited, an excerpt, or spliced with part of another file). A pool that
// runs short is made up from the others.
func sampleQueries(dir string, indexed, newer []corpusFile, perBucket int, seed uint64) ([]accQuery, error) {
	rng := rand.New(rand.NewPCG(seed, 8))
	have := map[[32]byte]bool{}
	for _, f := range indexed {
		have[f.Strong] = true
	}
	var out []accQuery
	used := map[[32]byte]bool{}
	for bi, b := range sizeBuckets {
		var ident, changed []corpusFile
		for _, f := range newer {
			if bucketOf(f.Size) == bi {
				if have[f.Strong] {
					ident = append(ident, f)
				} else {
					changed = append(changed, f)
				}
			}
		}
		var sources []corpusFile // indexed files that modified may fall in the bucket
		for _, f := range indexed {
			if f.Size >= b.Lo/2 && f.Size < 2*b.Hi {
				sources = append(sources, f)
			}
		}
		rng.Shuffle(len(ident), func(i, j int) { ident[i], ident[j] = ident[j], ident[i] })
		rng.Shuffle(len(changed), func(i, j int) { changed[i], changed[j] = changed[j], changed[i] })
		nIdent, nModified := perBucket/5, perBucket*3/10
		nChanged := perBucket - nIdent - nModified
		var qs []accQuery
		add := func(content []byte, src, kind string) error {
			h := sha256.Sum256(content)
			if used[h] {
				return nil
			}
			used[h] = true
			name := fmt.Sprintf("q%d-%04d-%s", bi, len(qs), filepath.Base(src))
			p := filepath.Join(dir, fmt.Sprintf("b%d", bi), name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				return err
			}
			qs = append(qs, accQuery{Path: p, Source: src, Kind: kind, Bucket: bi, Size: int64(len(content))})
			return nil
		}
		take := func(pool []corpusFile, n int, kind string) ([]corpusFile, error) {
			for len(pool) > 0 && n > 0 {
				f := pool[0]
				pool = pool[1:]
				b, err := os.ReadFile(f.Path)
				if err != nil {
					return nil, err
				}
				before := len(qs)
				if err := add(b, f.Path, kind); err != nil {
					return nil, err
				}
				if len(qs) > before {
					n--
				}
			}
			return pool, nil
		}
		var err error
		if ident, err = take(ident, nIdent, "identical"); err != nil {
			return nil, err
		}
		if changed, err = take(changed, nChanged, "newer"); err != nil {
			return nil, err
		}
		for tries := 0; len(qs) < perBucket && tries < 50*perBucket && len(sources) > 1; tries++ {
			f := sources[rng.IntN(len(sources))]
			b, err := os.ReadFile(f.Path)
			if err != nil {
				return nil, err
			}
			var m []byte
			kind := []string{"edited", "excerpt", "spliced"}[rng.IntN(3)]
			switch kind {
			case "edited":
				m = editLines(rng, b, 0.05+0.45*rng.Float64())
			case "excerpt":
				m = excerpt(rng, b, 0.2+0.7*rng.Float64())
			case "spliced":
				o, err := os.ReadFile(sources[rng.IntN(len(sources))].Path)
				if err != nil {
					return nil, err
				}
				m = splice(rng, b, o, 0.2+0.8*rng.Float64())
			}
			if bucketOf(int64(len(m))) != bi {
				continue
			}
			if err := add(m, f.Path, kind); err != nil {
				return nil, err
			}
		}
		// Make up a short pool of modified files from the newer versions.
		if _, err := take(slices.Concat(changed, ident), perBucket-len(qs), "newer"); err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	return out, nil
}

// editLines changes about frac of the bytes of b a line at a time: a line
// is deleted, replaced by a line of random words, or such a line is
// inserted before it.
func editLines(rng *rand.Rand, b []byte, frac float64) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) < 2 {
		return substitute(rng, b, frac)
	}
	changed, target := 0, int(frac*float64(len(b)))
	for changed < target && len(lines) > 1 {
		i := rng.IntN(len(lines))
		n := len(lines[i])
		line := append(randomText(rng, max(8, min(n, 120))-1), '\n')
		switch rng.IntN(3) {
		case 0:
			lines = slices.Delete(lines, i, i+1)
			changed += n
		case 1:
			lines[i] = line
			changed += max(n, len(line))
		case 2:
			lines = slices.Insert(lines, i, line)
			changed += len(line)
		}
	}
	return bytes.Join(lines, nil)
}

// excerpt returns a contiguous part of about frac of b, cut at line ends
// when there are some.
func excerpt(rng *rand.Rand, b []byte, frac float64) []byte {
	n := int(frac * float64(len(b)))
	at := rng.IntN(len(b) - n + 1)
	if i := bytes.IndexByte(b[at:], '\n'); i >= 0 && i < 200 && at+i+1 < len(b) {
		at += i + 1
	}
	end := min(len(b), at+n)
	if i := bytes.IndexByte(b[end:], '\n'); i >= 0 && i < 200 {
		end += i + 1
	}
	return append([]byte(nil), b[at:end]...)
}

// splice inserts a part of other, of about frac of b's length, into b at a
// line start.
func splice(rng *rand.Rand, b, other []byte, frac float64) []byte {
	part := excerpt(rng, other, min(1, frac*float64(len(b))/float64(max(1, len(other)))))
	at := rng.IntN(len(b) + 1)
	if i := bytes.IndexByte(b[at:], '\n'); i >= 0 {
		at += i + 1
	}
	return slices.Concat(b[:at], part, b[at:])
}
