package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/ipc"
)

// basisModules are the corpora of `sifbench basis`: two versions of each
// module, fetched with `go mod download`. The older ones are indexed; the
// files of the newer ones that differ, moved or are new (and a sample of
// the unchanged ones) are the held-out queries.
var basisModules = [][3]string{
	{"github.com/spf13/cobra", "v1.7.0", "v1.8.0"},
	{"github.com/fsnotify/fsnotify", "v1.6.0", "v1.7.0"},
	{"github.com/pelletier/go-toml/v2", "v2.0.8", "v2.1.0"},
	{"github.com/kardianos/service", "v1.2.1", "v1.2.2"},
	{"golang.org/x/net", "v0.20.0", "v0.21.0"},
	{"golang.org/x/tools", "v0.16.0", "v0.17.0"},
	{"github.com/cockroachdb/pebble", "v1.0.0", "v1.1.0"},
}

// Bounds of the brute force: every indexed file sharing a sampled window
// with the query is a candidate; rdiff is run against the bruteMax that
// share the most, plus the same path and sif's choice.
const (
	bruteLevel     = 3
	bruteMax       = 24
	identicalQuota = 10 // unchanged files sampled per module
)

// basisQuery is one held-out file and what each way of sending it costs.
type basisQuery struct {
	Path   string `json:"path"`
	Module string `json:"module"`
	Rel    string `json:"rel"`
	Kind   string `json:"kind"` // changed, moved, identical, new
	Size   int64  `json:"size"`
	Sif    int64  `json:"sif"`  // bytes sent with sif's basis (0 for identical, gzip for none)
	Best   int64  `json:"best"` // the least of all below
	Same   int64  `json:"same_path"`
	Gzip   int64  `json:"gzip"`
	// SifBasis and BestBasis are indexed paths ("" for none); SifEst is
	// sif's estimate for its basis.
	SifBasis  string `json:"sif_basis,omitempty"`
	BestBasis string `json:"best_basis,omitempty"`
	SifEst    int64  `json:"sif_estimate"`
	Tried     int    `json:"brute_candidates"`
}

type basisRow struct {
	Kind       string  `json:"kind"`
	Files      int     `json:"files"`
	Sif        int64   `json:"sif_bytes"`
	Best       int64   `json:"best_bytes"`
	SameBytes  int64   `json:"same_path_bytes"`
	GzipBytes  int64   `json:"gzip_bytes"`
	SifRatio   float64 `json:"sif_ratio"`
	SameRatio  float64 `json:"same_path_ratio"`
	GzipRatio  float64 `json:"gzip_ratio"`
	Within5    float64 `json:"within_5pct"`
	SameWithin float64 `json:"same_path_within_5pct"`
}

type basisResult struct {
	Modules  []string     `json:"modules"`
	Indexed  int          `json:"indexed_files"`
	Rows     []basisRow   `json:"rows"`
	Queries  []basisQuery `json:"queries"`
	Seconds  float64      `json:"seconds"`
	SifdSecs float64      `json:"sif_seconds"`
	// EstPairs are the candidates of the fingerprint-only answers and
	// rdiff's delta from each; EstRows sums them up.
	EstPairs []basisPair   `json:"fingerprint_pairs"`
	EstRows  []basisEstRow `json:"fingerprint_rows"`
}

// benchBasis measures POST /v1/basis (through sifctl basis) against
// librsync's rdiff: for each held-out file, the bytes rdiff's delta from
// sif's basis takes, against the best basis a brute force over the index
// finds, the old version at the same path, and gzip -6 of the file.
func benchBasis(ctx context.Context, c *common) (*basisResult, error) {
	start := time.Now()
	for _, tool := range []string{"rdiff", "gzip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is needed (Debian packages rdiff, gzip): %w", tool, err)
		}
	}
	sifd, sifctl, err := buildBinaries(c.workDir)
	if err != nil {
		return nil, err
	}
	oldRoot := filepath.Join(c.workDir, "old")
	newRoot := filepath.Join(c.workDir, "new")
	res := &basisResult{}
	type modFiles struct{ mod, oldDir, newDir string }
	var mods []modFiles
	for _, m := range basisModules {
		var dirs [2]string
		for i, ver := range []string{m[1], m[2]} {
			d, err := modDownload(ctx, m[0]+"@"+ver)
			if err != nil {
				return nil, err
			}
			dirs[i] = d
		}
		name := strings.ReplaceAll(m[0], "/", "_")
		od, nd := filepath.Join(oldRoot, name), filepath.Join(newRoot, name)
		if _, _, err := copyTree(dirs[0], od); err != nil {
			return nil, err
		}
		if _, _, err := copyTree(dirs[1], nd); err != nil {
			return nil, err
		}
		mods = append(mods, modFiles{m[0], od, nd})
		res.Modules = append(res.Modules, m[0]+" "+m[1]+" → "+m[2])
	}
	oldFiles := regularFiles(oldRoot, 1, 1<<40)
	res.Indexed = len(oldFiles)

	// The brute force's view of the index: sampled windows → files, and
	// content hashes.
	fmt.Fprintf(os.Stderr, "sifbench basis: %d indexed files; sampling their windows\n", len(oldFiles))
	post := map[uint64][]int32{}
	byHash := map[[32]byte]string{}
	for i, f := range oldFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if _, ok := byHash[sha256.Sum256(b)]; !ok {
			byHash[sha256.Sum256(b)] = f
		}
		for _, h := range exact.Signature(b, bruteLevel) {
			post[h] = append(post[h], int32(i))
		}
	}

	// The held-out queries.
	r := rand.New(rand.NewPCG(8, 8))
	var qs []*basisQuery
	for _, m := range mods {
		var identical []*basisQuery
		for _, f := range regularFiles(m.newDir, 1, 1<<40) {
			rel, _ := filepath.Rel(m.newDir, f)
			q := &basisQuery{Path: f, Module: m.mod, Rel: rel}
			nb, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			q.Size = int64(len(nb))
			ob, err := os.ReadFile(filepath.Join(m.oldDir, rel))
			switch {
			case err == nil && bytes.Equal(ob, nb):
				q.Kind = "identical"
				identical = append(identical, q)
				continue
			case err == nil:
				q.Kind = "changed"
			default:
				q.Kind = "new" // "moved" once the brute force finds a basis
			}
			qs = append(qs, q)
		}
		r.Shuffle(len(identical), func(i, j int) { identical[i], identical[j] = identical[j], identical[i] })
		qs = append(qs, identical[:min(identicalQuota, len(identical))]...)
	}
	fmt.Fprintf(os.Stderr, "sifbench basis: %d held-out files; starting sifd\n", len(qs))

	d, err := startDaemon(ctx, sifd, oldRoot, c.workDir)
	if err != nil {
		return nil, err
	}
	defer d.stop()

	// sif's answers, through the real sifctl, in batches.
	sifStart := time.Now()
	answers := map[string]*basisLineJSON{}
	for i := 0; i < len(qs); i += 100 {
		args := []string{"--socket", d.socket, "basis", "--json"}
		for _, q := range qs[i:min(i+100, len(qs))] {
			args = append(args, q.Path)
		}
		cmd := exec.CommandContext(ctx, sifctl, args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			return nil, fmt.Errorf("sifctl basis: %v: %s", err, errb.String())
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var l basisLineJSON
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				return nil, fmt.Errorf("sifctl basis --json: %v: %s", err, sc.Text())
			}
			answers[l.Query] = &l
		}
	}
	res.SifdSecs = time.Since(sifStart).Seconds()
	sigAnswers, err := fingerprintAnswers(ctx, sifctl, d.socket, c.workDir, qs)
	if err != nil {
		return nil, err
	}

	// What each way costs, with the real rdiff and gzip.
	rd := &rdiffer{dir: filepath.Join(c.workDir, "rdiff"), sigs: map[string]string{}}
	os.MkdirAll(rd.dir, 0o755)
	for n, q := range qs {
		if n%100 == 0 {
			fmt.Fprintf(os.Stderr, "sifbench basis: rdiff for query %d of %d\n", n, len(qs))
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		nb, err := os.ReadFile(q.Path)
		if err != nil {
			return nil, err
		}
		if q.Gzip, err = gzipSize(q.Path); err != nil {
			return nil, err
		}
		identicalTo := byHash[sha256.Sum256(nb)]
		same := filepath.Join(oldRoot, strings.ReplaceAll(q.Module, "/", "_"), q.Rel)
		// Same path.
		q.Same = q.Gzip
		if sb, err := os.ReadFile(same); err == nil {
			if bytes.Equal(sb, nb) {
				q.Same = 0
			} else if q.Same, err = rd.delta(same, q.Path); err != nil {
				return nil, err
			}
		}
		// sif.
		a := answers[q.Path]
		if a == nil {
			return nil, fmt.Errorf("sifctl basis gave no answer for %s", q.Path)
		}
		switch {
		case a.Basis == nil:
			q.Sif = q.Gzip
		case a.Basis.Identical:
			q.Sif, q.SifBasis = 0, a.Basis.Path
		default:
			q.SifBasis, q.SifEst = a.Basis.Path, a.Basis.EstimatedBytes
			if q.Sif, err = rd.delta(a.Basis.Path, q.Path); err != nil {
				return nil, err
			}
		}
		// The brute force.
		q.Best = q.Gzip
		if identicalTo != "" {
			q.Best, q.BestBasis = 0, identicalTo
		} else {
			counts := map[int32]int{}
			for _, h := range exact.Signature(nb, bruteLevel) {
				for _, id := range post[h] {
					counts[id]++
				}
			}
			ids := make([]int32, 0, len(counts))
			for id := range counts {
				ids = append(ids, id)
			}
			slices.SortFunc(ids, func(a, b int32) int { return counts[b] - counts[a] })
			cands := []string{}
			for _, id := range ids[:min(bruteMax, len(ids))] {
				cands = append(cands, oldFiles[id])
			}
			if _, err := os.Stat(same); err == nil {
				cands = append(cands, same)
			}
			if q.SifBasis != "" {
				cands = append(cands, q.SifBasis)
			}
			slices.Sort(cands)
			cands = slices.Compact(cands)
			q.Tried = len(cands)
			for _, cand := range cands {
				n, err := rd.delta(cand, q.Path)
				if err != nil {
					return nil, err
				}
				if n < q.Best {
					q.Best, q.BestBasis = n, cand
				}
			}
		}
		if q.Kind == "new" && q.BestBasis != "" {
			q.Kind = "moved"
		}
		// The fingerprint-only answer's candidates.
		if a := sigAnswers[q.Path]; a != nil {
			ps, err := fingerprintPairs(rd, q, a)
			if err != nil {
				return nil, err
			}
			res.EstPairs = append(res.EstPairs, ps...)
		} else {
			return nil, fmt.Errorf("sifctl basis --signature gave no answer for %s", q.Path)
		}
		res.Queries = append(res.Queries, *q)
	}
	for _, kind := range []string{"changed", "moved", "identical", "new", "all"} {
		row := basisRow{Kind: kind}
		var within, sameWithin int
		for _, q := range res.Queries {
			if kind != "all" && q.Kind != kind {
				continue
			}
			row.Files++
			row.Sif += q.Sif
			row.Best += q.Best
			row.SameBytes += q.Same
			row.GzipBytes += q.Gzip
			if float64(q.Sif) <= 1.05*float64(q.Best) {
				within++
			}
			if float64(q.Same) <= 1.05*float64(q.Best) {
				sameWithin++
			}
		}
		if row.Files == 0 {
			continue
		}
		if row.Best > 0 {
			row.SifRatio = float64(row.Sif) / float64(row.Best)
			row.SameRatio = float64(row.SameBytes) / float64(row.Best)
			row.GzipRatio = float64(row.GzipBytes) / float64(row.Best)
		}
		row.Within5 = float64(within) / float64(row.Files)
		row.SameWithin = float64(sameWithin) / float64(row.Files)
		res.Rows = append(res.Rows, row)
	}
	res.EstRows = basisEstRows(res.EstPairs)
	res.Seconds = time.Since(start).Seconds()
	printBasisTable(res)
	printBasisEstTable(res)
	return res, nil
}

// basisLineJSON is one line of sifctl basis --json.
type basisLineJSON struct {
	Query      string               `json:"query"`
	Size       int64                `json:"size"`
	Basis      *ipc.BasisCandidate  `json:"basis"`
	Compressed int64                `json:"compressed_bytes"`
	Candidates []ipc.BasisCandidate `json:"candidates"`
}

func printBasisTable(r *basisResult) {
	fmt.Printf("Basis for a sync tool: %d held-out files, %d indexed (%.0f s; sifctl basis %.1f s)\n",
		len(r.Queries), r.Indexed, r.Seconds, r.SifdSecs)
	for _, m := range r.Modules {
		fmt.Printf("  %s\n", m)
	}
	fmt.Println()
	fmt.Println("| files | n | best (brute force) | sif basis | sif / best | sif within 5 % | same path / best | same path within 5 % | gzip / best |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, row := range r.Rows {
		fmt.Printf("| %s | %d | %d | %d | %s | %s %% | %s | %s %% | %s |\n", row.Kind, row.Files, row.Best, row.Sif,
			ratioText(row.SifRatio, row.Sif), f1(100*row.Within5), ratioText(row.SameRatio, row.SameBytes), f1(100*row.SameWithin),
			ratioText(row.GzipRatio, row.GzipBytes))
	}
}

func ratioText(ratio float64, bytes int64) string {
	if ratio == 0 {
		if bytes == 0 {
			return "= (0 bytes)"
		}
		return fmt.Sprintf("%d bytes vs 0", bytes)
	}
	return f3(ratio) + "×"
}

// modDownload fetches a module version into the module cache and returns
// its directory.
func modDownload(ctx context.Context, modVer string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", modVer).Output()
	var info struct{ Dir, Error string }
	json.Unmarshal(out, &info)
	switch {
	case info.Error != "":
		return "", fmt.Errorf("go mod download %s: %s", modVer, info.Error)
	case err != nil:
		return "", fmt.Errorf("go mod download %s: %w", modVer, err)
	}
	return info.Dir, nil
}

// gzipSize is the size of gzip -6 of the file.
func gzipSize(path string) (int64, error) {
	out, err := exec.Command("gzip", "-6", "-n", "-c", path).Output()
	if err != nil {
		return 0, fmt.Errorf("gzip %s: %w", path, err)
	}
	return int64(len(out)), nil
}

// rdiffer runs rdiff, keeping each basis's signature.
type rdiffer struct {
	dir  string
	sigs map[string]string
	n    int
}

// delta is the size of rdiff's delta of target from basis.
func (r *rdiffer) delta(basis, target string) (int64, error) {
	sig, ok := r.sigs[basis]
	if !ok {
		r.n++
		sig = filepath.Join(r.dir, fmt.Sprintf("%d.sig", r.n))
		if out, err := exec.Command("rdiff", "signature", basis, sig).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("rdiff signature %s: %v: %s", basis, err, out)
		}
		r.sigs[basis] = sig
	}
	d := filepath.Join(r.dir, "delta")
	os.Remove(d)
	if out, err := exec.Command("rdiff", "delta", sig, target, d).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("rdiff delta %s %s: %v: %s", basis, target, err, out)
	}
	st, err := os.Stat(d)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
