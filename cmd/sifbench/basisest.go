package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sif-dev/sif/ipc"
)

// The estimate from fingerprints alone (sifctl basis --signature, or any
// client that sends no bytes) against rdiff: each held-out file is
// sketched with sifctl sketch and asked with basis --signature, and every
// candidate estimated from fingerprints is weighed against the size of
// rdiff's real delta from it.

// basisTuning names the modules whose pairs the range of a
// fingerprint-only estimate was calibrated on (ipc/server's
// fingerprintRange); the others' are held out.
var basisTuning = map[string]bool{
	"golang.org/x/tools":              true,
	"github.com/spf13/cobra":          true,
	"github.com/fsnotify/fsnotify":    true,
	"github.com/pelletier/go-toml/v2": true,
}

// basisPair is one candidate of a fingerprint-only answer and the delta
// rdiff makes from it.
type basisPair struct {
	Query     string  `json:"query"`
	Module    string  `json:"module"`
	Basis     string  `json:"basis"`
	First     bool    `json:"first"` // the answer's first candidate
	Size      int64   `json:"size"`
	BasisSize int64   `json:"basis_size"`
	Copied    float64 `json:"copied"`
	Estimate  int64   `json:"estimated_bytes"`
	Low       int64   `json:"estimated_bytes_low"`
	High      int64   `json:"estimated_bytes_high"`
	Rdiff     int64   `json:"rdiff_bytes"`
}

// basisEstRow sums up the pairs of one kind: the ratio of the estimate
// to rdiff's delta (median, 10th and 90th percentiles, the least and the
// greatest) and how often rdiff's delta lies in the range.
type basisEstRow struct {
	Pairs    string  `json:"pairs"`
	N        int     `json:"n"`
	Median   float64 `json:"median_ratio"`
	P10      float64 `json:"p10_ratio"`
	P90      float64 `json:"p90_ratio"`
	Least    float64 `json:"least_ratio"`
	Greatest float64 `json:"greatest_ratio"`
	Below    float64 `json:"below_range"` // rdiff under the range
	Within   float64 `json:"within_range"`
	Above    float64 `json:"above_range"`
	// MedianWidth is the median of high / low.
	MedianWidth float64 `json:"median_width"`
}

// fingerprintAnswers sketches each query with sifctl sketch and asks
// sifctl basis --signature with the sketches, as a sync tool asks a
// receiver: the answers the daemon gives without the bytes, by path.
func fingerprintAnswers(ctx context.Context, sifctl, socket, work string, qs []*basisQuery) (map[string]*basisLineJSON, error) {
	sigs := filepath.Join(work, "queries.sig")
	f, err := os.Create(sigs)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(qs); i += 100 {
		args := []string{"--socket", socket, "sketch"}
		for _, q := range qs[i:min(i+100, len(qs))] {
			args = append(args, q.Path)
		}
		cmd := exec.CommandContext(ctx, sifctl, args...)
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = f, &errb
		if err := cmd.Run(); err != nil {
			f.Close()
			return nil, fmt.Errorf("sifctl sketch: %v: %s", err, errb.String())
		}
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, sifctl, "--socket", socket, "basis", "--json", "--signature", sigs)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		return nil, fmt.Errorf("sifctl basis --signature: %v: %s", err, errb.String())
	}
	answers := map[string]*basisLineJSON{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l basisLineJSON
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("sifctl basis --json --signature: %v: %s", err, sc.Text())
		}
		answers[l.Query] = &l
	}
	return answers, nil
}

// fingerprintPairs runs rdiff from each candidate of a's that was
// estimated from fingerprints (not identical) to the query q.
func fingerprintPairs(rd *rdiffer, q *basisQuery, a *basisLineJSON) ([]basisPair, error) {
	var out []basisPair
	for i, c := range a.Candidates {
		if c.Method != ipc.BasisFingerprints || c.Identical {
			continue
		}
		n, err := rd.delta(c.Path, q.Path)
		if err != nil {
			return nil, err
		}
		out = append(out, basisPair{Query: q.Path, Module: q.Module, Basis: c.Path, First: i == 0,
			Size: q.Size, BasisSize: c.Size, Copied: c.Copied, Estimate: c.EstimatedBytes,
			Low: c.EstimatedBytesLow, High: c.EstimatedBytesHigh, Rdiff: n})
	}
	return out, nil
}

// basisEstRows sums up the pairs: every candidate and the first ones, on
// the tuning modules and on the held-out ones.
func basisEstRows(pairs []basisPair) []basisEstRow {
	var rows []basisEstRow
	for _, set := range []struct {
		name string
		keep func(p *basisPair) bool
	}{
		{"all candidates, tuning modules", func(p *basisPair) bool { return basisTuning[p.Module] }},
		{"all candidates, held-out modules", func(p *basisPair) bool { return !basisTuning[p.Module] }},
		{"first candidates, tuning modules", func(p *basisPair) bool { return p.First && basisTuning[p.Module] }},
		{"first candidates, held-out modules", func(p *basisPair) bool { return p.First && !basisTuning[p.Module] }},
		{"all candidates, all modules", func(p *basisPair) bool { return true }},
	} {
		row := basisEstRow{Pairs: set.name}
		var ratios, widths []float64
		var below, within, above int
		for i := range pairs {
			p := &pairs[i]
			if !set.keep(p) || p.Rdiff <= 0 {
				continue
			}
			ratios = append(ratios, float64(p.Estimate)/float64(p.Rdiff))
			switch {
			case p.Rdiff < p.Low:
				below++
			case p.Rdiff > p.High:
				above++
			default:
				within++
			}
			if p.Low > 0 {
				widths = append(widths, float64(p.High)/float64(p.Low))
			}
		}
		row.N = len(ratios)
		if row.N == 0 {
			continue
		}
		row.Median, row.P10, row.P90 = median(ratios), percentile(ratios, 0.1), percentile(ratios, 0.9)
		row.Least, row.Greatest = percentile(ratios, 0), percentile(ratios, 1)
		n := float64(row.N)
		row.Below, row.Within, row.Above = float64(below)/n, float64(within)/n, float64(above)/n
		row.MedianWidth = median(widths)
		rows = append(rows, row)
	}
	return rows
}

func printBasisEstTable(r *basisResult) {
	fmt.Println()
	fmt.Println("Estimates from fingerprints alone (sifctl basis --signature) against rdiff's delta from the same candidate:")
	fmt.Println()
	fmt.Println("| pairs | n | estimate / rdiff: median | p10 | p90 | least | greatest | rdiff in range | under | over | range width (high / low), median |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, row := range r.EstRows {
		fmt.Printf("| %s | %d | %s | %s | %s | %s | %s | %s %% | %s %% | %s %% | %s× |\n", row.Pairs, row.N,
			f3(row.Median), f3(row.P10), f3(row.P90), f3(row.Least), f3(row.Greatest),
			f1(100*row.Within), f1(100*row.Below), f1(100*row.Above), f1(row.MedianWidth))
	}
}
