package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// freshnessResult is how soon an edit can be found with sifctl similar.
type freshnessResult struct {
	FileBytes int64   `json:"file_bytes"`
	SettleMs  float64 `json:"settle_delay_ms"`
	// Client is the latency seen by polling through the Go client, Sifctl
	// by polling with sifctl similar as a subprocess; each over its own
	// edits, interleaved with the other's.
	Client       latencyStats `json:"go_client"`
	Sifctl       latencyStats `json:"sifctl"`
	ClientSample []float64    `json:"go_client_ms"`
	SifctlSample []float64    `json:"sifctl_ms"`
	// QueryMs is one query of the edited file once its new version is
	// found: the cost of a poll, the baseline the latencies are read against.
	ClientQuery latencyStats `json:"go_client_query"`
	SifctlQuery latencyStats `json:"sifctl_query"`
}

// benchFreshness rewrites a file under a root sifd watches, n times per
// way of asking, and times from the close of the last write to the moment a
// client polling every 5 ms finds the new version with a similarity query.
func benchFreshness(ctx context.Context, c *common, lf *liveFlags) (*freshnessResult, error) {
	size, err := parseSize(lf.size)
	if err != nil {
		return nil, fmt.Errorf("--size: %w", err)
	}
	sifd, sifctl, work, err := buildLive(c)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(work, "root")
	// Some unrelated files, so the query is answered from a real index.
	if _, _, err := populate(root, 500, 10, 1_000, 20_000, 1); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(2, uint64(size)))
	target := filepath.Join(root, "edited.txt")
	if err := os.WriteFile(target, randomText(r, int(size)), 0o644); err != nil {
		return nil, err
	}
	// The query is a copy of the new content outside the root, as a user
	// would ask about a file of their own.
	query := filepath.Join(work, "query.txt")

	d, err := startDaemon(ctx, sifd, root, work, "--settle-delay", lf.settle.String())
	if err != nil {
		return nil, err
	}
	defer d.stop()
	client := ipc.NewClient(d.socket)
	info, err := client.Info(ctx)
	if err != nil {
		return nil, err
	}

	// found reports whether matches list the edited file at its new size
	// and mtime: the new version, not the old one.
	type version struct {
		size  int64
		mtime int64
	}
	isNew := func(path string, sz, mtime int64, v version) bool {
		return path == target && sz == v.size && mtime == v.mtime
	}
	viaClient := func(req *ipc.SimilarRequest, v version) (bool, error) {
		resp, err := client.Similar(ctx, req)
		if err != nil {
			return false, err
		}
		for _, m := range resp.Matches {
			if isNew(m.Path, m.Size, m.MtimeNs, v) {
				return true, nil
			}
		}
		return false, nil
	}
	viaSifctl := func(v version) (bool, error) {
		cmd := exec.CommandContext(ctx, sifctl, "--socket", d.socket, "similar", "--json", query)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				return false, fmt.Errorf("sifctl similar: %v", err)
			}
		}
		var line struct {
			Matches []ipc.Match `json:"matches"`
		}
		if err := json.Unmarshal(out.Bytes(), &line); err != nil {
			return false, fmt.Errorf("sifctl similar: %v: %q", err, out.String())
		}
		for _, m := range line.Matches {
			if isNew(m.Path, m.Size, m.MtimeNs, v) {
				return true, nil
			}
		}
		return false, nil
	}

	res := &freshnessResult{FileBytes: size, SettleMs: ms(lf.settle)}
	var cq, sq []float64
	// Writes are spaced by more than the settle delay, so that no edit
	// merges with the previous one, and never follow a detection at once.
	gap := lf.settle + 200*time.Millisecond
	lastWrite := time.Now()
	timeout := lf.settle + 30*time.Second
	for i := range 2 * c.n {
		useSifctl := i%2 == 1
		content := append([]byte(fmt.Sprintf("sifbench freshness edit %d %x\n", i, r.Uint64())), randomText(r, int(size))...)[:size]
		if err := os.WriteFile(query, content, 0o644); err != nil {
			return nil, err
		}
		sk, err := ipc.SketchFile(query, info.Params)
		if err != nil {
			return nil, err
		}
		req := ipc.NewSimilarRequest(query, sk)
		poll := func(v version) (bool, error) {
			if useSifctl {
				return viaSifctl(v)
			}
			return viaClient(req, v)
		}

		time.Sleep(max(time.Until(lastWrite.Add(gap)), 50*time.Millisecond))
		f, err := os.Create(target)
		if err != nil {
			return nil, err
		}
		_, err = f.Write(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		t0 := time.Now()
		lastWrite = t0
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(target)
		if err != nil {
			return nil, err
		}
		v := version{size: st.Size(), mtime: st.ModTime().UnixNano()}
		for {
			ok, err := poll(v)
			if err != nil {
				return nil, err
			}
			if ok {
				break
			}
			if time.Since(t0) > timeout {
				st, _ := client.Status(ctx)
				b, _ := json.Marshal(st)
				return nil, fmt.Errorf("edit %d of %s not found by a query after %s; sifd status: %s", i, target, timeout, b)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			time.Sleep(5 * time.Millisecond)
		}
		lat := ms(time.Since(t0))
		// One more query, now answered with the new version: the cost of
		// a poll.
		t1 := time.Now()
		if ok, err := poll(v); err != nil || !ok {
			return nil, fmt.Errorf("edit %d: found, then not found again (%v)", i, err)
		}
		q := ms(time.Since(t1))
		if useSifctl {
			res.SifctlSample = append(res.SifctlSample, lat)
			sq = append(sq, q)
		} else {
			res.ClientSample = append(res.ClientSample, lat)
			cq = append(cq, q)
		}
		if (i+1)%20 == 0 {
			fmt.Fprintf(os.Stderr, "sifbench: %d/%d edits\n", i+1, 2*c.n)
		}
	}
	res.Client, res.Sifctl = summarize(res.ClientSample), summarize(res.SifctlSample)
	res.ClientQuery, res.SifctlQuery = summarize(cq), summarize(sq)
	if !c.json {
		settle := ms(lf.settle)
		fmt.Printf("freshness: a %.2f MB text file under a root of 500 other files, rewritten %d times per client; sifd --settle-delay %s; %d cores\n",
			mb(size), c.n, lf.settle, runtime.NumCPU())
		fmt.Printf("latency from the close of the last write to a similar query finding the new version (polling every 5 ms), ms:\n")
		row := func(name string, s, q latencyStats) []string {
			return []string{name, f1(s.MedianMs), f1(s.P90Ms), f1(s.P99Ms), f1(s.MaxMs),
				f1(s.MedianMs - settle), f1(s.P99Ms - settle), f1(q.MedianMs)}
		}
		fmt.Print(table([][]string{
			{"client", "median", "p90", "p99", "max", "median-settle", "p99-settle", "one query (median)"},
			row("Go client (ipc)", res.Client, res.ClientQuery),
			row("sifctl similar (subprocess)", res.Sifctl, res.SifctlQuery),
		}))
	}
	return res, nil
}
