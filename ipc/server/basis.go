package server

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/ipc"
)

func (s *Server) basis(w http.ResponseWriter, r *http.Request, c *caller, req *ipc.BasisRequest) {
	start := received(r)
	thr := ipc.BasisThreshold * 100
	sreq := ipc.SimilarRequest{QuerySketch: req.QuerySketch, Threshold: &thr, PathPrefix: req.PathPrefix, MaxDF: req.MaxDF}
	q, opts, err := s.parseSimilar(&sreq)
	var eq *checkSide
	if err == nil {
		eq, err = checkQuery(req.Size, req.Content, req.Windows, s.opts.MaxFeatures)
	}
	if err == nil && req.Limit < 0 {
		err = errors.New("limit: must not be negative")
	}
	if err == nil && req.CompressedSize < 0 {
		err = errors.New("compressed_size: must not be negative")
	}
	if err != nil {
		s.badQuery(w, err)
		return
	}
	if !req.Fleet && !s.checkPrefix(w, c, opts.PathPrefix) {
		return
	}
	if req.Fleet && !s.mayAskFleet(w, c) {
		return
	}
	fleetOpts := opts
	if v := c.view(); v != nil {
		opts.Visible = visibleTo(v)
	}
	res, err := s.q.Similar(r.Context(), q, opts)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := ipc.BasisResponse{Size: req.Size, CompressedBytes: req.CompressedSize, Considered: res.Candidates}
	if out.CompressedBytes == 0 {
		out.CompressedBytes = req.Size
		if req.Content != nil {
			out.CompressedBytes = exact.CompressedSize(req.Content)
		}
	}
	type cand struct {
		ipc.BasisCandidate
		near int
	}
	var cands []cand
	n := min(len(res.Matches), ipc.BasisCheck)
	if n > 0 {
		last := pct(res.Matches[n-1].Containment)
		for n < len(res.Matches) && n < ipc.CheckMax && pct(res.Matches[n].Containment) == last {
			n++
		}
	}
	for _, m := range res.Matches[:n] {
		bc, ok, err := s.basisOf(r.Context(), m, req.Content, eq, &out)
		if err != nil {
			eq.release()
			s.fail(w, err)
			return
		}
		if ok {
			cands = append(cands, cand{bc, nearness(q.Path, m.Path)})
		}
	}
	eq.release()
	if req.Fleet {
		host := s.fleet.Host()
		for i := range cands {
			cands[i].Host = host
		}
		fleetOpts.Limit = ipc.BasisCheck
		remote, err := s.fleet.Similar(r.Context(), q, fleetOpts)
		if err != nil {
			s.log.Warn("fleet query failed", "err", err)
			out.FleetError = &ipc.Error{Code: ipc.CodeFleetDown, Message: "fleet unavailable: " + err.Error()}
		}
		for _, m := range remote {
			bc := ipc.BasisCandidate{Host: m.Host, Path: m.Path, PathRaw: m.PathRaw, Size: m.Size, MtimeNs: m.MtimeNs,
				Method: ipc.BasisFingerprints, Copied: m.Containment}
			bc.EstimatedBytesLow, bc.EstimatedBytes, bc.EstimatedBytesHigh = fingerprintRange(m.Containment/100, req.Size, m.Size, s.q.Params())
			if m.Identical {
				bc.Identical, bc.EstimatedBytes, bc.Method, bc.Copied = true, 0, ipc.BasisIdentical, 100
				bc.EstimatedBytesLow, bc.EstimatedBytesHigh = 0, 0
			}
			cands = append(cands, cand{bc, 0})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(a.EstimatedBytes, b.EstimatedBytes); c != 0 {
			return c
		}
		if c := cmp.Compare(b.near, a.near); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	limit := req.Limit
	if limit == 0 {
		limit = ipc.BasisList
	}
	out.Candidates = make([]ipc.BasisCandidate, 0, min(limit, len(cands)))
	for i, c := range cands {
		if i == limit {
			break
		}
		out.Candidates = append(out.Candidates, c.BasisCandidate)
	}
	if len(out.Candidates) > 0 {
		if b := out.Candidates[0]; b.Identical || b.EstimatedBytes < out.CompressedBytes {
			out.Basis = &b
		}
	}
	out.ElapsedNs = time.Since(start).Nanoseconds()
	writeJSON(w, out)
}

// basisOf estimates the delta of the query against m, counting the files
// read in out.Checked. It returns false for a file that is gone, and
// ctx's error once ctx is done (see cancel.go).
func (s *Server) basisOf(ctx context.Context, m index.Match, content []byte, eq *checkSide, out *ipc.BasisResponse) (ipc.BasisCandidate, bool, error) {
	p, raw := ipc.PathFields(m.Path)
	size := out.Size
	bc := ipc.BasisCandidate{Path: p, PathRaw: raw, Size: m.FileMeta.Size, MtimeNs: m.MtimeNs, Method: ipc.BasisFingerprints}
	fromEstimate := func() (ipc.BasisCandidate, bool, error) {
		bc.Copied = pct(m.Containment)
		bc.EstimatedBytesLow, bc.EstimatedBytes, bc.EstimatedBytesHigh = fingerprintRange(m.Containment, size, bc.Size, s.q.Params())
		if m.Identical {
			bc.Identical, bc.EstimatedBytes, bc.Method, bc.Copied = true, 0, ipc.BasisIdentical, 100
			bc.EstimatedBytesLow, bc.EstimatedBytesHigh = 0, 0
		}
		return bc, true, nil
	}
	if err := ctx.Err(); err != nil {
		return bc, false, err
	}
	if s.content == nil {
		return fromEstimate()
	}
	f, cur, err := s.content.OpenIndexed(m.Path)
	switch {
	case errors.Is(err, ErrGone):
		return bc, false, nil
	case err != nil:
		s.log.Debug("basis: cannot read a candidate", "path", m.Path, "err", err)
		return fromEstimate()
	}
	defer f.Close()
	r := ipc.ContextReader(ctx, f)
	bc.Changed = cur.Size != m.FileMeta.Size || cur.MtimeNs != m.MtimeNs
	bc.Size, bc.MtimeNs = cur.Size, cur.MtimeNs
	if m.Identical && !bc.Changed {
		bc.Identical, bc.EstimatedBytes, bc.Method, bc.Copied = true, 0, ipc.BasisIdentical, 100
		return bc, true, nil
	}
	if cur.Size > ipc.MaxCheckSize || eq == nil {
		return fromEstimate()
	}
	out.Checked++
	if content != nil {
		d, err := exact.DeltaCost(r, cur.Size, content)
		if err != nil && ctx.Err() != nil { // the read was stopped
			return bc, false, ctx.Err()
		}
		if err != nil {
			s.log.Debug("basis: reading a candidate", "path", m.Path, "err", err)
			return fromEstimate()
		}
		bc.Method, bc.EstimatedBytes = ipc.BasisDelta, d.Bytes
		if size > 0 {
			bc.Copied = pct(float64(d.Copied) / float64(size))
		}
		return bc, true, nil
	}
	em, err := eq.query().Measure(r, cur.Size)
	if err != nil && ctx.Err() != nil { // the read was stopped
		return bc, false, ctx.Err()
	}
	if err != nil {
		return fromEstimate()
	}
	bc.Method, bc.Copied = ipc.BasisWindows, pct(em.Containment)
	bc.EstimatedBytes = exact.EstimateDelta(em, size, cur.Size)
	return bc, true, nil
}
