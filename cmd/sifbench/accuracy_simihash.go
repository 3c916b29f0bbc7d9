package main

// sifbench accuracy --simihash: SimiHash (SimiFind) beside manber, ssdeep
// and TLSH on the same queries and truth. sifd keeps SimiHash keys
// (sifd --simihash), and every query is also asked by SimiHash ("by":
// "simihash"), with the default tolerances or those of --key-tolerance
// and --sum-tolerance. Its answers are scored as the others' ("sif
// simihash").

import (
	"context"
	"fmt"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// simiToolName is SimiHash's run in the figures.
const simiToolName = "sif simihash"

// askSimi asks sifd about query q by SimiHash with tolerances tol, and
// maps each match to its file's id with its score (simiScore). It returns
// too the request's time.
func askSimi(ctx context.Context, cl *ipc.Client, q string, sk *fingerprint.Sketch, tol fingerprint.Tolerances, fileID map[string]int32) ([]answer, time.Duration, error) {
	qs := ipc.NewQuerySketch(q, sk)
	qs.SimiHash = ipc.SimiHashOf(sk)
	req := &ipc.SimilarRequest{QuerySketch: qs, By: ipc.BySimiHash, Tolerances: &tol}
	t := time.Now()
	resp, err := cl.Similar(ctx, req)
	took := time.Since(t)
	if err != nil {
		return nil, 0, fmt.Errorf("similar --by simihash %s: %w", q, err)
	}
	as := make([]answer, 0, len(resp.Matches))
	for _, m := range resp.Matches {
		id, ok := fileID[m.Path]
		if !ok {
			return nil, 0, fmt.Errorf("similar --by simihash %s: answer %s is not a file of the indexed tree", q, m.Path)
		}
		if m.SimiHash == nil {
			return nil, 0, fmt.Errorf("similar --by simihash %s: answer %s has no SimiHash distances", q, m.Path)
		}
		s := simiScore(m.SimiHash.SumDistance, sk.Size)
		as = append(as, answer{File: id, Cont: s, Res: s})
	}
	return as, took, nil
}

// simiScore is the score SimiHash's answers are thresholded on: the
// sum-table distance in percent of the query's size, negated so that the
// more similar scores higher, as for the other tools (0 for identical
// sum tables; SimiFind keeps those at or above -100·Sum, 2 % by
// default). It is the quantity SimiFind's sum tolerance bounds.
func simiScore(sumDistance uint64, size int64) float64 {
	if size <= 0 {
		return 0
	}
	return pct(-float64(sumDistance) / float64(size))
}
