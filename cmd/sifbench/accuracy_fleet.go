package main

// sifbench accuracy --fleet: the fleet's answers beside the local daemon's
// for the same queries. sifd publishes the indexed tree to a PostgreSQL
// server of sifbench's own, and every query is also asked of that fleet
// index in process (package daemon/fleet), as sifd's similar --fleet asks
// it. The fleet's answers are scored as the others ("sif fleet"), and
// compared pair by pair with the local estimates ("sif --fast", which
// should agree: both come from the same fingerprints) and the checked
// answers ("sif").

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/daemon/fleet"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// accFleetHost is the indexing sifd's name in the fleet.
const accFleetHost = "acc"

// accFleet is the fleet side of an accuracy run: the database sifd
// publishes to, and the pool sifbench asks it through.
type accFleet struct {
	db   fleetDatabase
	pool *pgxpool.Pool
}

// startAccFleet starts the fleet's database and writes, in work, the
// configuration sifd runs with: base's contents (--sifd-config; "" for
// none) and a [fleet] table publishing root, whose URL is in a file of
// mode 0600 beside it. It returns the configuration's path. Relative paths
// in base would be taken from work: --fleet wants absolute ones.
func startAccFleet(ctx context.Context, work, root, base string) (*accFleet, string, error) {
	var text []byte
	if base != "" {
		f, err := config.Load(base)
		if err != nil {
			return nil, "", err
		}
		if f.Fleet != nil {
			return nil, "", fmt.Errorf("--sifd-config %s: has a [fleet] table already; --fleet adds its own", base)
		}
		if text, err = os.ReadFile(base); err != nil {
			return nil, "", err
		}
	}
	db, err := startFleetDatabase(false)
	if err != nil {
		return nil, "", err
	}
	af := &accFleet{db: db}
	urlFile := filepath.Join(work, "fleet.url")
	if err := os.WriteFile(urlFile, []byte(db.URL()+"\n"), 0o600); err != nil {
		af.close()
		return nil, "", err
	}
	cfg, err := withFleetTable(text, urlFile, root)
	if err != nil {
		af.close()
		return nil, "", err
	}
	path := filepath.Join(work, "sifd.toml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		af.close()
		return nil, "", err
	}
	if af.pool, err = pgxpool.New(ctx, db.URL()); err != nil {
		af.close()
		return nil, "", err
	}
	return af, path, nil
}

// withFleetTable returns the configuration text base with a [fleet] table
// appended: a table header at the end of a TOML file starts a table
// whatever the file ends with.
func withFleetTable(base []byte, urlFile, root string) ([]byte, error) {
	var b bytes.Buffer
	b.Write(base)
	if len(base) > 0 && base[len(base)-1] != '\n' {
		b.WriteByte('\n')
	}
	type fleetTable struct {
		URLFile string   `toml:"url_file"`
		Host    string   `toml:"host"`
		Publish []string `toml:"publish"`
	}
	t := struct {
		Fleet fleetTable `toml:"fleet"`
	}{fleetTable{URLFile: urlFile, Host: accFleetHost, Publish: []string{root}}}
	if err := toml.NewEncoder(&b).Encode(t); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (f *accFleet) close() {
	if f.pool != nil {
		f.pool.Close()
	}
	f.db.Close()
}

// waitPublished polls d's status every 250 ms until its fleet link is
// connected, past its first comparison, with nothing pending; then asks
// sifd for fleet check, so that the fleet's answers come from the same
// files as the local ones.
func waitPublished(ctx context.Context, d *daemonRun) error {
	c := ipc.NewClient(d.socket)
	for {
		st, err := c.Status(ctx)
		if err != nil {
			return err
		}
		if st.Fleet == nil {
			return fmt.Errorf("sifd reports no fleet link: was its [fleet] table read?")
		}
		if f := st.Fleet; f.Connected && f.LastError == "" && !f.Resyncing && f.Pending == 0 && !f.LastPublished.IsZero() {
			break
		}
		select {
		case err := <-d.done:
			return fmt.Errorf("sifd exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	rep, err := c.FleetCheck(ctx)
	if err != nil {
		return fmt.Errorf("fleet check: %w", err)
	}
	if !rep.OK {
		return fmt.Errorf("fleet check once published: %d files, %d rows, %d missing, %d extra, %d bad contents", rep.Files, rep.Rows, rep.Missing, rep.Extra, rep.BadContents)
	}
	return nil
}

// ask asks the fleet about query q, as sifd's similar --fleet does but
// with threshold (percent) and no silence, and maps each match to its
// file's id. It returns too whether the fleet's bounds may have cut the
// answer (toolRun.Capped) and the time of the fleet's answer alone.
func (f *accFleet) ask(ctx context.Context, q string, sk *fingerprint.Sketch, params fingerprint.Params, threshold float64, fileID map[string]int32) (_ []answer, _ *fleet.Result, capped bool, _ time.Duration, _ error) {
	t := time.Now()
	res, err := fleet.Similar(ctx, f.pool, fleet.Query{Sketch: sk, Params: params, Path: q,
		// 0 would mean the fleet's default: the least above it is
		// every candidate, as 0 is to sifd.
		Threshold: max(threshold/100, math.SmallestNonzeroFloat64)})
	took := time.Since(t)
	if err != nil {
		return nil, nil, false, 0, fmt.Errorf("fleet similar %s: %w", q, err)
	}
	as := make([]answer, 0, len(res.Matches))
	files := map[int64]int{} // per content
	for _, m := range res.Matches {
		files[m.Content]++
		id, ok := fileID[m.Path]
		if !ok {
			return nil, nil, false, 0, fmt.Errorf("fleet similar %s: answer %s (host %s) is not a file of the indexed tree", q, m.Path, m.Host)
		}
		// In percent, rounded as sifd's answers are.
		as = append(as, answer{File: id, Cont: pct(m.Containment), Res: pct(m.Resemblance)})
	}
	capped = res.Candidates > fleet.MaxContents
	for _, n := range files {
		capped = capped || n >= fleet.MaxFilesPerContent
	}
	return as, res, capped, took, nil
}

// pct is a fraction in percent, rounded to two decimals as sifd's answers
// are.
func pct(x float64) float64 { return math.Round(x*10000) / 100 }

// agreement compares two runs' answers to the same queries, each judged by
// its own scores: at each containment cut, the pairs (query, file) that
// each lists with a containment at or above it.
type agreement struct {
	A    string         `json:"a"`
	B    string         `json:"b"`
	Cuts []cutAgreement `json:"cuts"`
}

// cutAgreement is an agreement at one containment cut.
type cutAgreement struct {
	Cut    float64 `json:"containment_cut_percent"`
	PairsA int     `json:"pairs_a"`
	PairsB int     `json:"pairs_b"`
	Both   int     `json:"pairs_both"`
	// Jaccard is Both over the pairs either lists (1 when neither lists
	// any).
	Jaccard float64 `json:"jaccard"`
	// Diff* are percentiles of |containment by A - containment by B| on
	// the pairs both list, in percentage points.
	DiffMedian float64 `json:"containment_diff_median_pp"`
	DiffP90    float64 `json:"containment_diff_p90_pp"`
	DiffMax    float64 `json:"containment_diff_max_pp"`
	// Differ counts the queries with a pair only one side lists; of
	// them, TemplateA and TemplateB those A, B answered as template
	// queries (ipc.SimilarResponse.Template, fleet.Result.Template), and
	// SkippedA and SkippedB those some of whose fingerprints A, B skipped
	// as too common, CappedA and CappedB those whose answer the fleet's
	// bounds may have cut (toolRun.Capped).
	Differ    int `json:"queries_differ"`
	TemplateA int `json:"differ_template_a"`
	TemplateB int `json:"differ_template_b"`
	SkippedA  int `json:"differ_skipped_a"`
	SkippedB  int `json:"differ_skipped_b"`
	CappedA   int `json:"differ_capped_a"`
	CappedB   int `json:"differ_capped_b"`
	// Examples are the differing queries with the most pairs only one side
	// lists, at most maxAgreementExamples.
	Examples []differingQuery `json:"examples,omitempty"`
}

// differingQuery is a query whose pairs differ at a cut.
type differingQuery struct {
	Query     string `json:"query"`
	OnlyA     int    `json:"only_a"`
	OnlyB     int    `json:"only_b"`
	TemplateA bool   `json:"template_a,omitempty"`
	TemplateB bool   `json:"template_b,omitempty"`
	SkippedA  bool   `json:"skipped_a,omitempty"`
	SkippedB  bool   `json:"skipped_b,omitempty"`
	CappedA   bool   `json:"capped_a,omitempty"`
	CappedB   bool   `json:"capped_b,omitempty"`
}

// maxAgreementExamples bounds cutAgreement.Examples.
const maxAgreementExamples = 10

// compareRuns compares a's and b's answers to queries at the containment
// cuts of relations.
func compareRuns(a, b *toolRun, queries []string) agreement {
	ag := agreement{A: a.Name, B: b.Name}
	for _, r := range relations {
		if !r.Res {
			ag.Cuts = append(ag.Cuts, compareAt(a, b, queries, 100*r.Cut))
		}
	}
	return ag
}

// compareAt compares a's and b's answers at one cut, in percent.
func compareAt(a, b *toolRun, queries []string, cut float64) cutAgreement {
	ca := cutAgreement{Cut: cut}
	var diffs []float64
	for qi, q := range queries {
		inA := map[int32]float64{}
		for _, x := range a.Answers[qi] {
			if x.Cont >= cut {
				inA[x.File] = x.Cont
			}
		}
		ca.PairsA += len(inA)
		dq := differingQuery{Query: q, OnlyA: len(inA)}
		for _, x := range b.Answers[qi] {
			if x.Cont < cut {
				continue
			}
			ca.PairsB++
			if c, ok := inA[x.File]; ok {
				ca.Both++
				dq.OnlyA--
				diffs = append(diffs, math.Abs(c-x.Cont))
			} else {
				dq.OnlyB++
			}
		}
		if dq.OnlyA == 0 && dq.OnlyB == 0 {
			continue
		}
		dq.TemplateA, dq.TemplateB = a.Template[qi], b.Template[qi]
		dq.SkippedA, dq.SkippedB = a.Skipped[qi], b.Skipped[qi]
		dq.CappedA, dq.CappedB = a.Capped[qi], b.Capped[qi]
		ca.Differ++
		ca.TemplateA += b2i(dq.TemplateA)
		ca.TemplateB += b2i(dq.TemplateB)
		ca.SkippedA += b2i(dq.SkippedA)
		ca.SkippedB += b2i(dq.SkippedB)
		ca.CappedA += b2i(dq.CappedA)
		ca.CappedB += b2i(dq.CappedB)
		ca.Examples = append(ca.Examples, dq)
	}
	ca.Jaccard = 1
	if union := ca.PairsA + ca.PairsB - ca.Both; union > 0 {
		ca.Jaccard = float64(ca.Both) / float64(union)
	}
	ca.DiffMedian, ca.DiffP90, ca.DiffMax = percentile(diffs, 0.5), percentile(diffs, 0.9), percentile(diffs, 1)
	slices.SortStableFunc(ca.Examples, func(x, y differingQuery) int { return (y.OnlyA + y.OnlyB) - (x.OnlyA + x.OnlyB) })
	ca.Examples = ca.Examples[:min(len(ca.Examples), maxAgreementExamples)]
	return ca
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// printAgreements prints the comparisons as a table.
func printAgreements(ags []agreement) {
	if len(ags) == 0 {
		return
	}
	fmt.Println("\nfleet against local answers: the pairs (query, file) each lists at or above a cut of its own containment")
	rows := [][]string{{"", "cut", "pairs: a / b", "both", "jaccard", "|Δ containment| p50 / p90 / max", "queries differing (template, skipped, capped: a / b)"}}
	for _, ag := range ags {
		for i, c := range ag.Cuts {
			label := ""
			if i == 0 {
				label = fmt.Sprintf("a: %s, b: %s", ag.A, ag.B)
			}
			rows = append(rows, []string{label, fmt.Sprintf(">= %g%%", c.Cut), fmt.Sprintf("%d / %d", c.PairsA, c.PairsB),
				fmt.Sprint(c.Both), fmt.Sprintf("%.4f", c.Jaccard),
				fmt.Sprintf("%.2f / %.2f / %.2f pp", c.DiffMedian, c.DiffP90, c.DiffMax),
				fmt.Sprintf("%d (%d / %d, %d / %d, %d / %d)", c.Differ, c.TemplateA, c.TemplateB, c.SkippedA, c.SkippedB, c.CappedA, c.CappedB)})
		}
	}
	fmt.Print(table(rows))
}
