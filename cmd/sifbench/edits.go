package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// defaultSchemes are the configurations the edit experiment compares.
var defaultSchemes = []string{
	"manber:window=50,bits=8,mod_bits=30", // the paper's parameters
	"manber:window=50,bits=8",
	"manber:window=40,bits=8",
	"manber:window=40,bits=9", // sif's default
	"manber:window=32,bits=8",
	"manber:window=24,bits=8",
	"manber:window=40,bits=7",
	"manber:window=40,bits=6",
	"chunks:avg=256",
	"chunks:avg=128",
	"chunks:avg=64",
}

// parseScheme reads "manber:bits=8,window=40,mod_bits=64" or
// "chunks:avg=256,min=64,max=2048".
func parseScheme(s string) (fingerprint.Params, error) {
	name, rest, _ := strings.Cut(s, ":")
	p := fingerprint.Params{Scheme: fingerprint.Scheme(name)}
	if rest != "" {
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				return p, fmt.Errorf("scheme %q: bad parameter %q", s, kv)
			}
			switch k {
			case "bits":
				p.Bits = n
			case "window":
				p.Window = n
			case "mod_bits":
				p.ModBits = n
			case "avg":
				p.AvgChunk = n
			case "min":
				p.MinChunk = n
			case "max":
				p.MaxChunk = n
			default:
				return p, fmt.Errorf("scheme %q: unknown parameter %q", s, k)
			}
		}
	}
	return p.Normalize()
}

// buildIndex indexes every regular file under root into a fresh index in
// dir, in process, with one worker per core, and closes it.
func buildIndex(ctx context.Context, dir, root string, p fingerprint.Params) (secs float64, diskBytes int64, err error) {
	ix, err := index.Open(dir, &index.Options{Params: p})
	if err != nil {
		return 0, 0, err
	}
	paths := regularFiles(root, 0, 256<<20)
	start := time.Now()
	ch := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range runtime.NumCPU() {
		wg.Go(func() {
			for path := range ch {
				f, err := os.Open(path)
				if err != nil {
					continue
				}
				st, _ := f.Stat()
				sk, err := fingerprint.SketchReader(f, p)
				f.Close()
				if err == nil {
					_, err = ix.Put(index.FileMeta{Path: path, Size: st.Size(), MtimeNs: st.ModTime().UnixNano(), Mode: uint32(st.Mode())}, sk)
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		})
	}
	for _, path := range paths {
		if ctx.Err() != nil {
			break
		}
		ch <- path
	}
	close(ch)
	wg.Wait()
	secs = since(start)
	if err := ix.Close(); err != nil {
		return 0, 0, err
	}
	if firstErr != nil {
		return 0, 0, firstErr
	}
	return secs, dirSize(dir), ctx.Err()
}

// editLevels are the shares of each query file overwritten.
var editLevels = []float64{0.2, 0.5, 0.8}

// editResult is one scheme at one edit level.
type editResult struct {
	Scheme     string  `json:"scheme"`
	IndexMB    float64 `json:"index_mb"`
	IndexShare float64 `json:"index_share_percent"`
	BuildSecs  float64 `json:"build_seconds"`
	Level      float64 `json:"edited_percent"`
	Changed    float64 `json:"changed_percent"` // measured share of bytes that differ
	Top1       int     `json:"top1"`            // queries whose top match is the original (or a copy)
	Found25    int     `json:"found_at_25"`     // original listed at threshold 25 %
	Found50    int     `json:"found_at_50"`
	MinPct     float64 `json:"min_percent"`
	MeanPct    float64 `json:"mean_percent"`
	MaxPct     float64 `json:"max_percent"`
	Others25   float64 `json:"mean_others_at_25"` // other files passing 25 %, per query
	TooFew     int     `json:"too_few"`
	Queries    int     `json:"queries"`
	// Foreign25 is the mean number of indexed files that contain 25 % or
	// more of a query taken from a tree that is not indexed: a proxy for
	// false positives.
	Foreign25 float64 `json:"foreign_at_25"`
}

// benchEdits is Manber's experiment (§5): query files of 10-100 KB are
// edited by random 50-byte substitutions until about 20, 50 and 80 % has
// changed, and queried against an index of the whole corpus.
func benchEdits(ctx context.Context, c *common, schemes string) ([]editResult, error) {
	specs := defaultSchemes
	if schemes != "" {
		specs = strings.Split(schemes, ",")
		specs = rejoin(specs)
	}
	corpus := c.src
	var size int64
	for _, p := range regularFiles(corpus, 0, 256<<20) {
		if fi, err := os.Stat(p); err == nil {
			size += fi.Size()
		}
	}
	queries := pickText(regularFiles(corpus, 10_000, 100_000), c.n)
	var foreign []string
	if c.foreign != "" {
		foreign = pickText(regularFiles(c.foreign, 2_000, 100_000), c.n)
	}
	rng := rand.New(rand.NewPCG(1994, 50))
	edited := map[float64][][]byte{}
	changed := map[float64]float64{}
	for _, lv := range editLevels {
		var diff, total int
		for _, q := range queries {
			b, _ := os.ReadFile(q)
			e := substitute(rng, b, lv)
			edited[lv] = append(edited[lv], e)
			for i := range b {
				if b[i] != e[i] {
					diff++
				}
			}
			total += len(b)
		}
		changed[lv] = 100 * float64(diff) / float64(total)
	}
	var out []editResult
	if !c.json {
		fmt.Printf("corpus %s (%.1f MB); %d query files of 10-100 KB, edited by random 50-byte substitutions\n", corpus, mb(size), len(queries))
	}
	rows := [][]string{{"scheme", "index", "build", "edited", "top1", "found@25", "found@50", "pct min/mean/max", "others@25", "too few", "foreign@25"}}
	for i, spec := range specs {
		p, err := parseScheme(spec)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(c.workDir, fmt.Sprintf("ix%d", i))
		secs, disk, err := buildIndex(ctx, dir, corpus, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		ix, err := index.Open(dir, &index.Options{Params: p, ReadOnly: true})
		if err != nil {
			return nil, err
		}
		foreign25, err := foreignMatches(ctx, ix, p, foreign)
		if err != nil {
			return nil, err
		}
		for _, lv := range editLevels {
			r := editResult{Scheme: p.String(), IndexMB: mb(disk), IndexShare: 100 * float64(disk) / float64(size),
				BuildSecs: secs, Level: 100 * lv, Changed: changed[lv], MinPct: 101, Queries: len(queries)}
			var others int
			for qi, q := range queries {
				orig, err := ix.Lookup(q)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", q, err)
				}
				sk, err := fingerprint.SketchReader(bytes.NewReader(edited[lv][qi]), p)
				if err != nil {
					return nil, err
				}
				res, err := ix.Similar(ctx, index.Query{Sketch: sk}, index.QueryOptions{Threshold: 0.05})
				if err != nil {
					return nil, err
				}
				if res.TooFew {
					r.TooFew++
				}
				pctOrig := 0.0
				for mi, m := range res.Matches {
					isOrig := m.Path == q || m.Strong == orig.Strong && m.FileMeta.Size == orig.FileMeta.Size
					if isOrig {
						if mi == 0 {
							r.Top1++
						}
						pctOrig = max(pctOrig, 100*m.Containment)
					} else if m.Containment >= 0.25 {
						others++
					}
				}
				if pctOrig >= 25 {
					r.Found25++
				}
				if pctOrig >= 50 {
					r.Found50++
				}
				r.MinPct = min(r.MinPct, pctOrig)
				r.MaxPct = max(r.MaxPct, pctOrig)
				r.MeanPct += pctOrig / float64(len(queries))
			}
			r.Others25 = float64(others) / float64(len(queries))
			r.Foreign25 = foreign25
			out = append(out, r)
			rows = append(rows, []string{r.Scheme, fmt.Sprintf("%.1f MB (%.1f%%)", r.IndexMB, r.IndexShare), f2(secs) + " s",
				fmt.Sprintf("%.0f%% (%.0f%%)", r.Level, r.Changed), fmt.Sprintf("%d/%d", r.Top1, r.Queries),
				fmt.Sprintf("%d", r.Found25), fmt.Sprintf("%d", r.Found50),
				fmt.Sprintf("%.0f/%.0f/%.0f", r.MinPct, r.MeanPct, r.MaxPct), fmt.Sprintf("%.2f", r.Others25), strconv.Itoa(r.TooFew), fmt.Sprintf("%.2f", r.Foreign25)})
		}
		ix.Close()
		os.RemoveAll(dir)
	}
	if !c.json {
		fmt.Print(table(rows))
	}
	return out, nil
}

// rejoin undoes the split of "manber:bits=8,mod_bits=30,chunks:avg=256" at
// commas inside one spec.
func rejoin(parts []string) []string {
	var out []string
	for _, p := range parts {
		if strings.Contains(p, ":") || len(out) == 0 {
			out = append(out, p)
		} else if strings.Contains(p, "=") {
			out[len(out)-1] += "," + p
		} else {
			out = append(out, p)
		}
	}
	return out
}

// pickText picks n text files spread over paths.
func pickText(paths []string, n int) []string {
	var text []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && !bytes.Contains(b[:min(len(b), 8000)], []byte{0}) {
			text = append(text, p)
		}
	}
	return pick(text, n)
}

// substitute overwrites random 50-byte stretches of a copy of b with random
// printable text until about frac of its bytes have been overwritten
// (substitutions may overlap, as in Manber's experiment).
func substitute(r *rand.Rand, b []byte, frac float64) []byte {
	out := append([]byte(nil), b...)
	if len(out) <= 50 {
		return out
	}
	hit := make([]bool, len(out))
	n := 0
	for float64(n) < frac*float64(len(out)) {
		at := r.IntN(len(out) - 50)
		for i := range 50 {
			out[at+i] = byte(' ' + r.IntN(95))
			if !hit[at+i] {
				hit[at+i] = true
				n++
			}
		}
	}
	return out
}

// foreignMatches returns the mean number of indexed files that contain at
// least 25 % of each of the given files, which are not indexed.
func foreignMatches(ctx context.Context, ix *index.Index, p fingerprint.Params, files []string) (float64, error) {
	if len(files) == 0 {
		return 0, nil
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		sk, err := fingerprint.SketchReader(bytes.NewReader(b), p)
		if err != nil {
			return 0, err
		}
		res, err := ix.Similar(ctx, index.Query{Sketch: sk}, index.QueryOptions{Threshold: 0.25})
		if err != nil {
			return 0, err
		}
		for _, m := range res.Matches {
			if !m.Identical {
				n++
			}
		}
	}
	return float64(n) / float64(len(files)), nil
}
