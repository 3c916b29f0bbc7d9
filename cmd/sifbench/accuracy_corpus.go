package main

// The accuracy corpus: several versions of real Go modules, fetched from
// the Go module proxy and kept in a directory that later runs reuse. Each
// set's older versions are indexed; its newer versions are where most
// queries come from, so a query has true near-matches (the file changed
// between versions), identical matches (it did not) or nothing (it is new).

import (
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
)

// moduleVersions are the versions of one module in an accuracy set.
type moduleVersions struct {
	Path    string   `json:"path"`
	Indexed []string `json:"indexed"` // older versions: indexed
	Newer   []string `json:"newer"`   // newer versions: queries come from them
}

// accuracySets split the modules by project: a project is in one set only,
// so what is tuned on the tuning set is judged on projects it never saw.
var accuracySets = map[string][]moduleVersions{
	"tuning": {
		{"golang.org/x/text", []string{"v0.9.0", "v0.14.0", "v0.20.0"}, []string{"v0.24.0", "v0.30.0"}},
		{"golang.org/x/net", []string{"v0.20.0", "v0.25.0", "v0.30.0"}, []string{"v0.33.0", "v0.40.0"}},
		{"golang.org/x/crypto", []string{"v0.20.0", "v0.25.0"}, []string{"v0.30.0", "v0.33.0"}},
		{"github.com/spf13/cobra", []string{"v1.2.1", "v1.5.0", "v1.7.0"}, []string{"v1.8.0", "v1.9.1"}},
		{"github.com/spf13/viper", []string{"v1.10.0", "v1.14.0", "v1.16.0"}, []string{"v1.18.2", "v1.20.1"}},
		{"github.com/BurntSushi/toml", []string{"v0.4.1", "v1.1.0", "v1.2.1"}, []string{"v1.3.2", "v1.5.0"}},
		{"github.com/pkg/errors", []string{"v0.8.0", "v0.8.1"}, []string{"v0.9.1"}},
		{"github.com/google/uuid", []string{"v1.1.2", "v1.3.0"}, []string{"v1.5.0", "v1.6.0"}},
		{"github.com/gorilla/mux", []string{"v1.6.2", "v1.7.4"}, []string{"v1.8.1"}},
	},
	"heldout": {
		{"golang.org/x/tools", []string{"v0.20.0", "v0.24.0", "v0.28.0"}, []string{"v0.30.0", "v0.36.0"}},
		{"golang.org/x/sys", []string{"v0.20.0", "v0.25.0", "v0.30.0"}, []string{"v0.33.0", "v0.40.0"}},
		{"go.uber.org/zap", []string{"v1.19.0", "v1.21.0", "v1.24.0", "v1.26.0"}, []string{"v1.27.0", "v1.28.0"}},
		{"github.com/stretchr/testify", []string{"v1.6.1", "v1.7.0", "v1.8.0", "v1.8.4"}, []string{"v1.9.0", "v1.11.1"}},
		{"github.com/sirupsen/logrus", []string{"v1.4.2", "v1.6.0", "v1.8.1"}, []string{"v1.9.0", "v1.9.3"}},
		{"gopkg.in/yaml.v2", []string{"v2.2.2", "v2.2.8", "v2.3.0"}, []string{"v2.4.0"}},
		{"github.com/google/go-cmp", []string{"v0.4.0", "v0.5.0", "v0.5.5"}, []string{"v0.5.9", "v0.7.0"}},
		{"github.com/spf13/pflag", []string{"v1.0.3", "v1.0.5"}, []string{"v1.0.7", "v1.1.0"}},
	},
}

// accCorpus is an assembled set: IndexRoot holds the older versions, one
// directory per module version, NewerRoot the newer ones.
type accCorpus struct {
	Set       string
	IndexRoot string
	NewerRoot string
	Modules   []moduleVersions
}

// assembleSet fetches the modules of set into dir/set unless a complete
// copy of the same module list is there already. It runs `go mod
// download` outside any module, so no go.mod or go.sum is touched.
func assembleSet(ctx context.Context, dir, set string) (*accCorpus, error) {
	mods, ok := accuracySets[set]
	if !ok {
		return nil, fmt.Errorf("set %q: want tuning or heldout", set)
	}
	root, err := filepath.Abs(filepath.Join(dir, set))
	if err != nil {
		return nil, err
	}
	c := &accCorpus{Set: set, IndexRoot: filepath.Join(root, "index"), NewerRoot: filepath.Join(root, "newer"), Modules: mods}
	want, _ := json.MarshalIndent(mods, "", "  ")
	marker := filepath.Join(root, "complete.json")
	if have, err := os.ReadFile(marker); err == nil && bytes.Equal(have, want) {
		return c, nil
	}
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("assemble %s: %w", root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("assemble %s: %w", root, err)
	}
	for _, m := range mods {
		for _, grp := range []struct {
			dst string
			vs  []string
		}{{c.IndexRoot, m.Indexed}, {c.NewerRoot, m.Newer}} {
			for _, v := range grp.vs {
				src, err := downloadModule(ctx, root, m.Path, v)
				if err != nil {
					return nil, err
				}
				dst := filepath.Join(grp.dst, strings.ReplaceAll(m.Path, "/", "_")+"@"+v)
				if _, _, err := copyTree(src, dst); err != nil {
					return nil, fmt.Errorf("copy %s@%s: %w", m.Path, v, err)
				}
			}
		}
	}
	if err := os.WriteFile(marker, want, 0o644); err != nil {
		return nil, err
	}
	return c, nil
}

// downloadModule fills the module cache with path@version and returns the
// directory it was unpacked in.
func downloadModule(ctx context.Context, workDir, path, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", path+"@"+version)
	cmd.Dir = workDir
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	json.Unmarshal(out, &info)
	switch {
	case info.Error != "":
		return "", fmt.Errorf("go mod download %s@%s: %s", path, version, info.Error)
	case err != nil:
		return "", fmt.Errorf("go mod download %s@%s: %v: %s", path, version, err, strings.TrimSpace(stderr.String()))
	case info.Dir == "":
		return "", fmt.Errorf("go mod download %s@%s: no directory in its answer", path, version)
	}
	return info.Dir, nil
}

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
