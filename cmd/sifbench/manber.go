package main

// sifbench manber: Manber's edit test (sif, USENIX 1994, §5) over every
// query size. Files of 256 B to 1 MB are drawn from the indexed tree of an
// accuracy set, so the originals are indexed among many other versions of
// their project; each is edited by substituting random 50-byte runs until
// 20, 50 and 80 % of its bytes have changed, and the edited copy is asked
// about through the real sifd.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/sif-dev/sif/ipc"
)

// manberResult is one size bucket at one edit level.
type manberResult struct {
	Bucket  string  `json:"bucket"`
	Level   float64 `json:"edited_percent"`
	Changed float64 `json:"changed_percent"` // measured share of bytes that differ
	Queries int     `json:"queries"`
	// First counts the edited files whose first answer is the original or
	// a byte-identical copy of it; Among those where it is an answer.
	First int `json:"first"`
	Among int `json:"among"`
	// Tied counts the edited files whose original is an answer but not
	// the first, while the first has the same reported containment.
	Tied    int `json:"tied"`
	Nothing int `json:"answered_nothing"`
	TooFew  int `json:"too_few"`
}

// benchManber runs Manber's edit test on the indexed tree of af.set.
func benchManber(ctx context.Context, c *common, af *accFlags) ([]manberResult, error) {
	corpus, indexed, err := assembleIndexed(ctx, af)
	if err != nil {
		return nil, err
	}
	copies := map[[32]byte][]string{}
	var total int64
	for _, f := range indexed {
		copies[f.Strong] = append(copies[f.Strong], f.Path)
		total += f.Size
	}
	rng := rand.New(rand.NewPCG(af.seed, 50))
	originals := make([][]corpusFile, len(sizeBuckets))
	for bi := range sizeBuckets {
		var pool []corpusFile
		for _, f := range indexed {
			if bucketOf(f.Size) == bi {
				pool = append(pool, f)
			}
		}
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		seen := map[[32]byte]bool{}
		for _, f := range pool {
			if len(originals[bi]) == af.perBucket {
				break
			}
			if !seen[f.Strong] {
				seen[f.Strong] = true
				originals[bi] = append(originals[bi], f)
			}
		}
	}
	sifd, _, err := buildBinaries(c.workDir)
	if err != nil {
		return nil, err
	}
	work := filepath.Join(c.workDir, "sifd-run")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	d, err := startDaemon(ctx, sifd, corpus.IndexRoot, work, "--no-watch", "--config", af.sifdConfig)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	cl := ipc.NewClient(d.socket)
	info, err := cl.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []manberResult
	for bi, b := range sizeBuckets {
		for _, lv := range editLevels {
			r := manberResult{Bucket: b.Name, Level: 100 * lv, Queries: len(originals[bi])}
			var diff, size int
			for i, f := range originals[bi] {
				orig, err := os.ReadFile(f.Path)
				if err != nil {
					return nil, err
				}
				e := substitute(rng, orig, lv)
				for j := range orig {
					if orig[j] != e[j] {
						diff++
					}
				}
				size += len(orig)
				q := filepath.Join(c.workDir, "edited", fmt.Sprintf("b%d-%02.0f-%04d-%s", bi, 100*lv, i, filepath.Base(f.Path)))
				if err := os.MkdirAll(filepath.Dir(q), 0o755); err != nil {
					return nil, err
				}
				if err := os.WriteFile(q, e, 0o644); err != nil {
					return nil, err
				}
				sk, data, err := ipc.QueryFile(q, info.Params, ipc.ReadOptions{})
				if err != nil {
					return nil, err
				}
				req := ipc.NewSimilarRequest(q, sk)
				req.Attach(data) // checked, as sifctl similar asks
				thr := af.threshold
				req.Threshold = &thr
				resp, err := cl.Similar(ctx, req)
				if err != nil {
					return nil, fmt.Errorf("similar %s: %w", q, err)
				}
				isOrig := map[string]bool{}
				for _, p := range copies[f.Strong] {
					isOrig[p] = true
				}
				for mi, m := range resp.Matches {
					if isOrig[m.Path] {
						switch {
						case mi == 0:
							r.First++
						case m.Containment == resp.Matches[0].Containment:
							r.Tied++
						}
						r.Among++
						break
					}
				}
				if len(resp.Matches) == 0 {
					r.Nothing++
				}
				if resp.TooFew {
					r.TooFew++
				}
				os.Remove(q)
			}
			if size > 0 {
				r.Changed = 100 * float64(diff) / float64(size)
			}
			out = append(out, r)
		}
	}
	if !c.json {
		fmt.Printf("Manber's edit test, %s set: originals drawn from %d indexed files (%.1f MB), edited by random 50-byte substitutions; the original is it or a byte-identical copy; sif threshold %g %%\n",
			af.set, len(indexed), mb(total), af.threshold)
		rows := [][]string{{"bucket", "edited (changed)", "queries", "original first", "original among answers", "not first, tied", "nothing", "too few"}}
		for _, r := range out {
			pct := func(n int) string { return fmt.Sprintf("%d (%.0f%%)", n, 100*float64(n)/float64(max(1, r.Queries))) }
			rows = append(rows, []string{r.Bucket, fmt.Sprintf("%.0f%% (%.0f%%)", r.Level, r.Changed), fmt.Sprint(r.Queries),
				pct(r.First), pct(r.Among), fmt.Sprint(r.Tied), fmt.Sprint(r.Nothing), fmt.Sprint(r.TooFew)})
		}
		fmt.Print(table(rows))
	}
	return out, nil
}
