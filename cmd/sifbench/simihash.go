package main

// sifbench simihash: the experiments of the SimiHash paper (Sadowski and
// Levin, UCSC-SOE-11-07, §5), in process, with the sum tables and keys of
// package index/fingerprint. A tolerance t is a share of the file size: a
// pair is a key hit at t when its keys differ by at most t times the larger
// size (SimiFind asks, for each file, for the keys within t times its size,
// so a pair is found from its larger file at that bound), and a sum-table
// hit when it is a key hit and its sum tables' distance is also at most t
// times the larger size. Every pair is judged, by brute force, except in
// the growth experiment, which times SimiFind's sort and sweep, and the
// index's own (Index.SimiGroups) beside manber's groups.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/index/fingerprint"
)

// simiTolerances are the tolerances the hit counts are given at, as
// shares of the file size.
var simiTolerances = []float64{0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2}

// simiFile is what SimiHash keeps of a file.
type simiFile struct {
	size    int64
	sum     fingerprint.SumTable
	skew    uint32 // the skew key
	uniform uint64 // the uniform key: the sum of the 16 entries
	ext     uint64 // the extension-aware skew key
}

// simiSketch computes the SimiHash data of data, named name (for its
// extension).
func simiSketch(s *fingerprint.Sketcher, name string, data []byte) simiFile {
	s.Reset()
	s.Write(data)
	sum := s.Finish()
	f := simiFile{size: sum.Size, sum: sum.Sum, skew: sum.Key, ext: fingerprint.ExtKey(sum.Key, filepath.Ext(name))}
	for _, n := range sum.Sum {
		f.uniform += uint64(n)
	}
	return f
}

// simiHits is the number of pairs hit at one tolerance.
type simiHits struct {
	Tolerance float64 `json:"tolerance"`
	KeyHits   int64   `json:"key_hits"`
	SumHits   int64   `json:"sum_hits"`
}

// hitCounter counts, at every tolerance of simiTolerances, the pairs whose
// key hit and whose sum-table hit need at most that tolerance.
type hitCounter struct{ key, sum []int64 }

func newHitCounter() *hitCounter {
	return &hitCounter{key: make([]int64, len(simiTolerances)+1), sum: make([]int64, len(simiTolerances)+1)}
}

// add counts a pair whose keys differ by kd.
func (h *hitCounter) add(a, b *simiFile, kd uint64) {
	s := float64(max(a.size, b.size))
	need := float64(kd) / s
	i := sort.SearchFloat64s(simiTolerances, need)
	if i == len(simiTolerances) {
		return
	}
	h.key[i]++
	need = max(need, float64(a.sum.Distance(b.sum))/s)
	h.sum[sort.SearchFloat64s(simiTolerances, need)]++
}

// hits returns the cumulative counts.
func (h *hitCounter) hits() []simiHits {
	out := make([]simiHits, len(simiTolerances))
	var k, s int64
	for i, t := range simiTolerances {
		k += h.key[i]
		s += h.sum[i]
		out[i] = simiHits{Tolerance: t, KeyHits: k, SumHits: s}
	}
	return out
}

// within reports whether distance d is within tolerance t of size, as
// hitCounter judges it.
func within(d uint64, size int64, t float64) bool { return float64(d)/float64(size) <= t }

func keyDiff[T uint32 | uint64](a, b T) uint64 { return uint64(max(a, b) - min(a, b)) }

// allPairs counts the hits of every pair of fs under the key of each of
// keys.
func allPairs(fs []simiFile, keys ...func(a, b *simiFile) uint64) [][]simiHits {
	cs := make([]*hitCounter, len(keys))
	for i := range cs {
		cs[i] = newHitCounter()
	}
	for i := range fs {
		for j := i + 1; j < len(fs); j++ {
			for k, key := range keys {
				cs[k].add(&fs[i], &fs[j], key(&fs[i], &fs[j]))
			}
		}
	}
	out := make([][]simiHits, len(cs))
	for i, c := range cs {
		out[i] = c.hits()
	}
	return out
}

func uniformKey(a, b *simiFile) uint64 { return keyDiff(a.uniform, b.uniform) }
func skewKey(a, b *simiFile) uint64    { return keyDiff(a.skew, b.skew) }
func extKey(a, b *simiFile) uint64     { return keyDiff(a.ext, b.ext) }

func pairs(n int) int64 { return int64(n) * int64(n-1) / 2 }

// simiKeySet is Figure 6 on one set: hits under the uniform and skew keys.
type simiKeySet struct {
	Set     string     `json:"set"`
	Files   int        `json:"files"`
	Pairs   int64      `json:"pairs"`
	Uniform []simiHits `json:"uniform"`
	Skew    []simiHits `json:"skew"`
}

// simiExtension is Figure 7: hits under the skew key with and without the
// extension.
type simiExtension struct {
	Files      int        `json:"files"`
	Extensions int        `json:"extensions"`
	Pairs      int64      `json:"pairs"`
	Skew       []simiHits `json:"skew"`
	Ext        []simiHits `json:"skew_ext"`
}

// simiHeader is Figure 8 on one set: sum-table hits under the skew key, and
// the least tolerances at which a pair, half the pairs and every pair are
// sum-table hits.
type simiHeader struct {
	Set   string     `json:"set"`
	Files int        `json:"files"`
	Size  int64      `json:"size"`
	Pairs int64      `json:"pairs"`
	First float64    `json:"first_hit"`
	Half  float64    `json:"half_hit"`
	All   float64    `json:"all_hit"`
	Hits  []simiHits `json:"hits"`
}

// simiGrowth is Figure 9 at one set size: SimiFind's sweep over the sorted
// skew keys, all against all, on a set of very similar files.
type simiGrowth struct {
	Files       int     `json:"files"`
	Pairs       int64   `json:"pairs"`
	Comparisons int64   `json:"comparisons"` // sum-table comparisons: key hits
	Similar     int64   `json:"similar"`     // sum-table hits
	SketchMs    float64 `json:"sketch_ms"`   // computing the sum tables
	SweepMs     float64 `json:"sweep_ms"`    // sorting and sweeping
	// Manber's groups on the same set, in an index of its own: the time
	// of Index.EachGroup with sifctl groups' defaults, and the groups and
	// files grouped.
	GroupsMs     float64 `json:"groups_ms"`
	Groups       int     `json:"groups"`
	GroupedFiles int     `json:"grouped_files"`
	// The index's own sweep (Index.SimiGroups, sifctl groups --by
	// simihash) on the same index, at the growth tolerance for keys and
	// sum tables: its time, its sum-table comparisons, and the groups and
	// files grouped.
	IndexSweepMs      float64 `json:"index_sweep_ms"`
	IndexComparisons  int64   `json:"index_comparisons"`
	IndexGroups       int     `json:"index_groups"`
	IndexGroupedFiles int     `json:"index_grouped_files"`
}

type simiResult struct {
	Source    string        `json:"source"`
	Fig6      []simiKeySet  `json:"keys"`
	Fig7      simiExtension `json:"extension"`
	Fig8      []simiHeader  `json:"headers"`
	Fig9      []simiGrowth  `json:"growth"`
	Tolerance float64       `json:"growth_tolerance"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Load      string        `json:"load_average"`
	rng       *rand.Rand
	sketcher  *fingerprint.Sketcher
}

// simiBlock is the size the paper truncated its files to.
const simiBlock = 4096

// benchSimiHash runs the paper's four experiments on c.src.
func benchSimiHash(ctx context.Context, c *common, seed uint64) (*simiResult, error) {
	start := time.Now()
	sk, err := fingerprint.NewSketcher(fingerprint.DefaultParams(), nil)
	if err != nil {
		return nil, err
	}
	r := &simiResult{Source: c.src, rng: rand.New(rand.NewPCG(seed, 2011)), sketcher: sk, Tolerance: 0.01}
	tree, err := readTree(c.src)
	if err != nil {
		return nil, err
	}
	if err := r.keys(tree); err != nil {
		return nil, err
	}
	r.extension(tree)
	r.headers()
	if err := r.growth(ctx, c.workDir, tree); err != nil {
		return nil, err
	}
	r.Elapsed = time.Since(start)
	r.Load = loadAverage()
	if !c.json {
		r.print()
	}
	return r, nil
}

// treeFile is a file of the source tree, read whole.
type treeFile struct {
	path string
	data []byte
}

// readTree reads every non-empty regular file under dir, in path order.
func readTree(dir string) ([]treeFile, error) {
	var out []treeFile
	for _, p := range regularFiles(dir, 1, 1<<40) {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, treeFile{p, b})
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("%s: %d files, want at least 2", dir, len(out))
	}
	return out, nil
}

// simiSetSize is the number of files of each set of Figure 6.
const simiSetSize = 1000

// keys is Figure 6: a chain of successive small edits of one 4 KB file,
// and different real files cut to 4 KB.
func (r *simiResult) keys(tree []treeFile) error {
	var big []treeFile
	for _, f := range tree {
		if len(f.data) >= simiBlock {
			big = append(big, f)
		}
	}
	if len(big) == 0 {
		return fmt.Errorf("%s: no file of %d bytes or more", r.Source, simiBlock)
	}
	// Similar files: each is the previous one with 3 bytes replaced by
	// random printable ones.
	base := big[r.rng.IntN(len(big))]
	cur := bytes.Clone(base.data[:simiBlock])
	var similar []simiFile
	for range simiSetSize {
		for range 3 {
			cur[r.rng.IntN(len(cur))] = byte(' ' + r.rng.IntN(95))
		}
		similar = append(similar, simiSketch(r.sketcher, base.path, cur))
	}
	// Different files: distinct 4 KB beginnings, none sharing a quarter of
	// its 32-byte windows with one kept before it.
	r.rng.Shuffle(len(big), func(i, j int) { big[i], big[j] = big[j], big[i] })
	var different []simiFile
	seen := map[uint64][]int32{} // sampled window hash → kept files holding it
	for _, f := range big {
		if len(different) == simiSetSize {
			break
		}
		b := f.data[:simiBlock]
		hs := exact.Signature(b, 3)
		shared, most := map[int32]int{}, 0
		for _, h := range hs {
			for _, k := range seen[h] {
				shared[k]++
				most = max(most, shared[k])
			}
		}
		if 4*most >= len(hs) {
			continue
		}
		for _, h := range hs {
			seen[h] = append(seen[h], int32(len(different)))
		}
		different = append(different, simiSketch(r.sketcher, f.path, b))
	}
	for _, s := range []struct {
		name string
		fs   []simiFile
	}{{"similar: successive 3-byte edits of one 4 KB file", similar}, {"different: distinct real files cut to 4 KB", different}} {
		h := allPairs(s.fs, uniformKey, skewKey)
		r.Fig6 = append(r.Fig6, simiKeySet{Set: s.name, Files: len(s.fs), Pairs: pairs(len(s.fs)), Uniform: h[0], Skew: h[1]})
	}
	return nil
}

// extension is Figure 7: the whole tree, skew key with and without the
// extension.
func (r *simiResult) extension(tree []treeFile) {
	fs := make([]simiFile, len(tree))
	exts := map[uint64]bool{}
	for i, f := range tree {
		fs[i] = simiSketch(r.sketcher, f.path, f.data)
		exts[fs[i].ext>>32] = true
	}
	h := allPairs(fs, skewKey, extKey)
	r.Fig7 = simiExtension{Files: len(fs), Extensions: len(exts), Pairs: pairs(len(fs)), Skew: h[0], Ext: h[1]}
}

// simiRandomFiles is the number of random ASCII files of Figure 8.
const simiRandomFiles = 200

// headers is Figure 8: random 4 KB ASCII files, alone and after a constant
// header of 8 KB (a PDF's size in the paper) and of 248 KB (a PostScript
// file's).
func (r *simiResult) headers() {
	texts := make([][]byte, simiRandomFiles)
	for i := range texts {
		b := make([]byte, simiBlock)
		for j := range b {
			b[j] = byte(' ' + r.rng.IntN(95))
			if r.rng.IntN(64) == 0 {
				b[j] = '\n'
			}
		}
		texts[i] = b
	}
	header := func(n int) []byte {
		// A constant header of printable text of its own.
		hr := rand.New(rand.NewPCG(1, uint64(n)))
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(' ' + hr.IntN(95))
		}
		return b
	}
	for _, s := range []struct {
		name   string
		header []byte
	}{{"random ASCII, 4 KB", nil}, {"the same after an 8 KB header", header(8 << 10)}, {"the same after a 248 KB header", header(248 << 10)}} {
		fs := make([]simiFile, len(texts))
		for i, t := range texts {
			fs[i] = simiSketch(r.sketcher, "f.txt", slices.Concat(s.header, t))
		}
		var needs []float64
		for i := range fs {
			for j := i + 1; j < len(fs); j++ {
				a, b := &fs[i], &fs[j]
				sz := float64(max(a.size, b.size))
				needs = append(needs, max(float64(skewKey(a, b)), float64(a.sum.Distance(b.sum)))/sz)
			}
		}
		slices.Sort(needs)
		r.Fig8 = append(r.Fig8, simiHeader{Set: s.name, Files: len(fs), Size: fs[0].size, Pairs: int64(len(needs)),
			First: needs[0], Half: needs[len(needs)/2], All: needs[len(needs)-1], Hits: allPairs(fs, skewKey)[0]})
	}
}

// simiGrowthSizes are the set sizes of Figure 9.
var simiGrowthSizes = []int{500, 1000, 2000, 4000, 8000}

// growth is Figure 9: SimiFind all against all on sets of very similar
// files (one 4 KB file with 4 of its bytes replaced at random, a different
// 4 each time), by sorting the skew keys and sweeping them: each file is
// compared, by sum table, with the files after it whose key is within
// tolerance.
func (r *simiResult) growth(ctx context.Context, work string, tree []treeFile) error {
	var base []byte
	for _, f := range tree {
		if len(f.data) >= simiBlock {
			base = f.data[:simiBlock]
			break
		}
	}
	if base == nil {
		return fmt.Errorf("%s: no file of %d bytes or more", r.Source, simiBlock)
	}
	for _, n := range simiGrowthSizes {
		files := make([][]byte, n)
		for i := range files {
			b := bytes.Clone(base)
			for range 4 {
				b[r.rng.IntN(len(b))] = byte(' ' + r.rng.IntN(95))
			}
			files[i] = b
		}
		t0 := time.Now()
		fs := make([]simiFile, n)
		for i, b := range files {
			fs[i] = simiSketch(r.sketcher, "f.go", b)
		}
		t1 := time.Now()
		g := sweep(fs, r.Tolerance)
		g.SketchMs, g.SweepMs = ms(t1.Sub(t0)), ms(time.Since(t1))
		if err := indexGroups(ctx, filepath.Join(work, fmt.Sprint("groups-", n)), files, r.Tolerance, &g); err != nil {
			return err
		}
		r.Fig9 = append(r.Fig9, g)
	}
	return nil
}

// indexGroups indexes files under the default scheme, with SimiHash keys,
// in a new index in dir, and times into g its groups, with sifctl groups'
// defaults, and its SimiHash sweep at tolerance t.
func indexGroups(ctx context.Context, dir string, files [][]byte, t float64, g *simiGrowth) error {
	p := fingerprint.DefaultParams()
	on := true
	ix, err := index.Open(dir, &index.Options{Params: p, SimiHash: &on})
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer ix.Close()
	for i, b := range files {
		sk, err := fingerprint.SketchReader(bytes.NewReader(b), p)
		if err != nil {
			return err
		}
		meta := index.FileMeta{Path: fmt.Sprintf("/set/f%05d.go", i), Size: sk.Size, Ino: uint64(i + 1), Mode: 0o644}
		if _, err := ix.Put(meta, sk); err != nil {
			return err
		}
	}
	if err := ix.Compact(ctx); err != nil {
		return err
	}
	start := time.Now()
	err = ix.EachGroup(ctx, index.GroupOptions{SameType: true}, func(gr index.Group) error {
		g.Groups++
		g.GroupedFiles += 1 + len(gr.Reference.Copies)
		for _, m := range gr.Members {
			g.GroupedFiles += 1 + len(m.Copies)
		}
		return nil
	})
	g.GroupsMs = ms(time.Since(start))
	if err != nil {
		return err
	}
	start = time.Now()
	st, err := ix.SimiGroups(ctx, index.SimiGroupOptions{Tolerances: fingerprint.Tolerances{Key: t, Sum: t}}, func(gr index.SimiGroup) error {
		g.IndexGroups++
		g.IndexGroupedFiles += len(gr.Members)
		return nil
	})
	g.IndexSweepMs = ms(time.Since(start))
	if err != nil {
		return err
	}
	g.IndexComparisons = st.Comparisons
	return nil
}

// sweep finds the similar pairs of fs at tolerance t as SimiFind would with
// a sorted list of skew keys: sort them, then compare each file's sum table
// with those of the files after it whose key is within t times the larger
// size.
func sweep(fs []simiFile, t float64) simiGrowth {
	g := simiGrowth{Files: len(fs), Pairs: pairs(len(fs))}
	order := make([]int32, len(fs))
	var maxSize int64
	for i := range order {
		order[i] = int32(i)
		maxSize = max(maxSize, fs[i].size)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(fs[a].skew, fs[b].skew) })
	bound := uint64(t * float64(maxSize))
	for x, i := range order {
		a := &fs[i]
		for _, j := range order[x+1:] {
			b := &fs[j]
			kd := uint64(b.skew - a.skew)
			if kd > bound {
				break
			}
			sz := max(a.size, b.size)
			if !within(kd, sz, t) {
				continue
			}
			g.Comparisons++
			if within(a.sum.Distance(b.sum), sz, t) {
				g.Similar++
			}
		}
	}
	return g
}

// loadAverage is the first line of /proc/loadavg, or "" where there is
// none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// ratio formats n/d with 3 significant digits, or "-" when d is 0.
func ratio(n, d int64) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g", float64(n)/float64(d))
}

func tolPct(t float64) string { return fmt.Sprintf("%g%%", 100*t) }

func (r *simiResult) print() {
	fmt.Printf("SimiHash, the paper's experiments, on %s; a tolerance is a share of the larger file's size (key hit: keys within it; sum-table hit: key hit and sum tables within it)\n", r.Source)
	for _, s := range r.Fig6 {
		fmt.Printf("\nFigure 6, key strategies: %s (%d files, %d pairs): sum-table hits per key hit\n", s.Set, s.Files, s.Pairs)
		rows := [][]string{{"tolerance", "uniform key hits", "sum-table hits", "per key hit", "skew key hits", "sum-table hits", "per key hit"}}
		for i, u := range s.Uniform {
			k := s.Skew[i]
			rows = append(rows, []string{tolPct(u.Tolerance), fmt.Sprint(u.KeyHits), fmt.Sprint(u.SumHits), ratio(u.SumHits, u.KeyHits),
				fmt.Sprint(k.KeyHits), fmt.Sprint(k.SumHits), ratio(k.SumHits, k.KeyHits)})
		}
		fmt.Print(table(rows))
	}
	e := r.Fig7
	fmt.Printf("\nFigure 7, the extension: every file of the tree (%d files, %d extensions, %d pairs), skew key; hits per pair, and per file\n", e.Files, e.Extensions, e.Pairs)
	rows := [][]string{{"tolerance", "key hits/pair", "sum-table hits/pair", "with ext: key hits/pair", "sum-table hits/pair", "key hits per file", "with ext"}}
	for i, s := range e.Skew {
		x := e.Ext[i]
		rows = append(rows, []string{tolPct(s.Tolerance), ratio(s.KeyHits, e.Pairs), ratio(s.SumHits, e.Pairs), ratio(x.KeyHits, e.Pairs), ratio(x.SumHits, e.Pairs),
			ratio(2*s.KeyHits, int64(e.Files)), ratio(2*x.KeyHits, int64(e.Files))})
	}
	fmt.Print(table(rows))
	fmt.Printf("\nFigure 8, large headers: %d random 4 KB ASCII files; share of pairs that are sum-table hits (skew key)\n", simiRandomFiles)
	rows = [][]string{{"tolerance"}}
	for _, h := range r.Fig8 {
		rows[0] = append(rows[0], fmt.Sprintf("%s (%d B)", h.Set, h.Size))
	}
	for i, t := range simiTolerances {
		row := []string{tolPct(t)}
		for _, h := range r.Fig8 {
			row = append(row, ratio(h.Hits[i].SumHits, h.Pairs))
		}
		rows = append(rows, row)
	}
	for _, q := range []struct {
		name string
		v    func(simiHeader) float64
	}{{"first pair similar at", func(h simiHeader) float64 { return h.First }}, {"half the pairs at", func(h simiHeader) float64 { return h.Half }}, {"every pair at", func(h simiHeader) float64 { return h.All }}} {
		row := []string{q.name}
		for _, h := range r.Fig8 {
			row = append(row, fmt.Sprintf("%.4g%%", 100*q.v(h)))
		}
		rows = append(rows, row)
	}
	fmt.Print(table(rows))
	fmt.Printf("\nFigure 9, growth: SimiFind all against all (sorted skew keys, swept within tolerance %s of the size) on sets of very similar 4 KB files (one file, 4 random bytes replaced)\n", tolPct(r.Tolerance))
	rows = [][]string{{"files", "pairs", "sum-table comparisons", "per pair", "similar pairs", "sketch ms", "sort+sweep ms", "ns per comparison", "index sweep ms", "its comparisons", "its groups", "files grouped", "manber groups ms", "groups", "files grouped"}}
	for _, g := range r.Fig9 {
		rows = append(rows, []string{fmt.Sprint(g.Files), fmt.Sprint(g.Pairs), fmt.Sprint(g.Comparisons), ratio(g.Comparisons, g.Pairs), fmt.Sprint(g.Similar),
			fmt.Sprintf("%.1f", g.SketchMs), fmt.Sprintf("%.1f", g.SweepMs), fmt.Sprintf("%.1f", 1e6*g.SweepMs/float64(max(1, g.Comparisons))),
			fmt.Sprintf("%.1f", g.IndexSweepMs), fmt.Sprint(g.IndexComparisons), fmt.Sprint(g.IndexGroups), fmt.Sprint(g.IndexGroupedFiles),
			fmt.Sprintf("%.1f", g.GroupsMs), fmt.Sprint(g.Groups), fmt.Sprint(g.GroupedFiles)})
	}
	fmt.Print(table(rows))
	fmt.Printf("\n%s in all; load average %s\n", r.Elapsed.Round(time.Second), r.Load)
}
