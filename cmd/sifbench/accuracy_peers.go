package main

// The peers of the accuracy benchmark, run through their own command-line
// tools (Debian packages ssdeep and tlsh-tools) on the same queries and
// the same indexed files as sif:
//
//   - ssdeep (context-triggered piecewise hashes): `ssdeep -r` hashes the
//     indexed tree, `ssdeep -c -m KNOWN QUERY...` scores each query against
//     every known hash, 1 to 100 (it lists pairs that score above 0).
//   - TLSH (locality-sensitive digest): `tlsh -r` digests both trees,
//     `tlsh -c DIGEST -l LIST -T 400` gives the distance of a query's
//     digest to each listed one, 0 for identical and larger when less
//     alike; pairs farther than 400 are not listed (TLSH's authors read
//     distances past about 100 to 200 as unrelated). TLSH refuses files
//     under 50 bytes and files with too little variety: such a query is
//     counted as answered with nothing, such an indexed file is never an
//     answer.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// tlshMaxDistance is the largest TLSH distance listed as an answer.
const tlshMaxDistance = 400

// answer is one file a tool lists for a query. Cont is the tool's score
// for containment relations, Res for resemblance; higher is closer.
type answer struct {
	File int32
	Cont float64
	Res  float64
}

// toolRun is what one tool answered to every query, each query's answers
// in the tool's order (its first answer first).
type toolRun struct {
	Name     string
	Answers  [][]answer
	Unhashed map[int]bool // queries the tool could not hash at all
	TooFew   map[int]bool // sif: queries it found too small to judge
	// Template and Skipped (sif, sif fleet) are the queries answered as
	// template queries (ipc.SimilarResponse.Template,
	// fleet.Result.Template), and those some of whose fingerprints were
	// skipped as too common.
	Template map[int]bool
	Skipped  map[int]bool
	// Capped (sif fleet) are the queries whose answer the fleet's bounds
	// may have cut: more candidate contents than fleet.MaxContents, of
	// which only the best are read, or a content listed with
	// fleet.MaxFilesPerContent files.
	Capped  map[int]bool
	Seconds float64
}

// checkPeers reports whether the peers' commands are installed.
func checkPeers() error {
	var missing []string
	for _, c := range []string{"ssdeep", "tlsh"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not found: install the Debian packages ssdeep and tlsh-tools (apt-get install ssdeep tlsh-tools), or pass --peers=false", strings.Join(missing, ", "))
	}
	return nil
}

// sortByScore orders answers best first, ties by file (path order), so
// the first answer of a tool that only scores is its best-scored file.
func sortByScore(as []answer) {
	slices.SortStableFunc(as, func(a, b answer) int {
		switch {
		case a.Cont > b.Cont:
			return -1
		case a.Cont < b.Cont:
			return 1
		}
		return int(a.File) - int(b.File)
	})
}

// runSsdeep scores every query against every indexed file with ssdeep.
// fileID maps an indexed file's path to its number.
func runSsdeep(ctx context.Context, work, indexRoot string, fileID map[string]int32, queries []string) (*toolRun, error) {
	known := filepath.Join(work, "ssdeep-known.txt")
	out, err := os.Create(known)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "ssdeep", "-s", "-r", indexRoot)
	cmd.Stdout = out
	err = cmd.Run()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("ssdeep -r %s: %w", indexRoot, err)
	}
	qid := map[string]int{}
	for i, q := range queries {
		qid[q] = i
	}
	run := &toolRun{Name: "ssdeep", Answers: make([][]answer, len(queries))}
	var mu sync.Mutex
	const batch = 100
	err = parallel((len(queries)+batch-1)/batch, func(b int) error {
		args := append([]string{"-s", "-c", "-m", known}, queries[b*batch:min(len(queries), (b+1)*batch)]...)
		cmd := exec.CommandContext(ctx, "ssdeep", args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		o, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("ssdeep -m: %v: %s", err, strings.TrimSpace(stderr.String()))
		}
		r := csv.NewReader(bytes.NewReader(o))
		r.FieldsPerRecord = 3
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("ssdeep -m output: %w", err)
			}
			q, ok1 := qid[rec[0]]
			f, ok2 := fileID[strings.TrimPrefix(rec[1], known+":")]
			score, err := strconv.Atoi(rec[2])
			if !ok1 || !ok2 || err != nil {
				return fmt.Errorf("ssdeep -m output: unexpected line %q", strings.Join(rec, ","))
			}
			mu.Lock()
			run.Answers[q] = append(run.Answers[q], answer{File: f, Cont: float64(score), Res: float64(score)})
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, as := range run.Answers {
		sortByScore(as)
	}
	return run, nil
}

// tlshDigests digests every file under root with `tlsh -r` and writes the
// list (digest, tab, path per line) to list. Files TLSH cannot digest are
// left out.
func tlshDigests(ctx context.Context, root, list string) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, "tlsh", "-r", root)
	cmd.Stderr = io.Discard // "file too small" for each file it cannot digest
	o, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tlsh -r %s: %w", root, err)
	}
	digests := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(o))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		d, p, ok := strings.Cut(s.Text(), "\t")
		if !ok {
			continue
		}
		digests[filepath.Clean(p)] = d
	}
	if list != "" {
		if err := os.WriteFile(list, o, 0o644); err != nil {
			return nil, err
		}
	}
	return digests, s.Err()
}

// runTLSH scores every query against every indexed file with TLSH.
func runTLSH(ctx context.Context, work, indexRoot, queryRoot string, fileID map[string]int32, queries []string) (*toolRun, error) {
	list := filepath.Join(work, "tlsh-known.txt")
	if _, err := tlshDigests(ctx, indexRoot, list); err != nil {
		return nil, err
	}
	qd, err := tlshDigests(ctx, queryRoot, "")
	if err != nil {
		return nil, err
	}
	run := &toolRun{Name: "tlsh", Answers: make([][]answer, len(queries)), Unhashed: map[int]bool{}}
	var mu sync.Mutex
	err = parallel(len(queries), func(qi int) error {
		d, ok := qd[queries[qi]]
		if !ok {
			mu.Lock()
			run.Unhashed[qi] = true
			mu.Unlock()
			return nil
		}
		cmd := exec.CommandContext(ctx, "tlsh", "-c", d, "-l", list, "-T", strconv.Itoa(tlshMaxDistance))
		o, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("tlsh -c (query %s): %w", queries[qi], err)
		}
		var as []answer
		for _, line := range strings.Split(string(o), "\n") {
			f := strings.Split(line, "\t")
			if len(f) != 3 {
				continue
			}
			id, ok := fileID[filepath.Clean(f[1])]
			dist, err := strconv.Atoi(strings.TrimSpace(f[2]))
			if !ok || err != nil {
				return fmt.Errorf("tlsh -c output: unexpected line %q", line)
			}
			as = append(as, answer{File: id, Cont: -float64(dist), Res: -float64(dist)})
		}
		sortByScore(as)
		run.Answers[qi] = as
		return nil
	})
	if err != nil {
		return nil, err
	}
	return run, nil
}
