package ipc

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
	"github.com/sif-dev/sif/index/fingerprint"
)

// The search for a basis.
const (
	// BasisThreshold is the least estimated containment of the query in a
	// file for it to be considered as a basis: below it, a delta sends most
	// of the file as literals and loses to compression.
	BasisThreshold = 0.10
	// BasisCheck is how many candidates, best by the index's estimate
	// (plus those tied with the last, up to CheckMax), have their delta
	// estimated; BasisList how many are listed by default.
	BasisCheck = 16
	BasisList  = 8
)

// Methods of a BasisCandidate's estimate.
const (
	BasisIdentical    = "identical"    // the same bytes: nothing to send
	BasisDelta        = "delta"        // rdiff's delta simulated on the bytes of both files
	BasisWindows      = "windows"      // from the window measure of the query's signature
	BasisFingerprints = "fingerprints" // from the index's estimate: the file was not read
)

// BasisRequest asks which indexed file a delta of the query would best be
// made from (POST /v1/basis). Its query fields are SimilarRequest's; the
// daemon needs Content (files up to MaxContent) or Windows to estimate a
// delta from the bytes.
type BasisRequest struct {
	Params   fingerprint.Params `json:"params"`
	Path     string             `json:"path,omitempty"`
	PathRaw  string             `json:"path_raw,omitempty"`
	Size     int64              `json:"size"`
	Strong   string             `json:"strong"`
	Type     fingerprint.Type   `json:"type"`
	Features []Feature          `json:"features"`
	Content  []byte             `json:"content,omitempty"`
	Windows  *Windows           `json:"windows,omitempty"`
	// CompressedSize is what sending the query without a basis costs
	// (its size compressed as by gzip -6; see exact.CompressedSize); 0
	// means unknown: the daemon computes it from Content, else takes Size.
	CompressedSize int64 `json:"compressed_size,omitempty"`
	// Limit caps the candidates listed; 0 means BasisList.
	Limit      int    `json:"limit,omitempty"`
	PathPrefix string `json:"path_prefix,omitempty"`
	MaxDF      int    `json:"max_df,omitempty"`
}

// BasisCandidate is one indexed file and what a delta from it would cost.
type BasisCandidate struct {
	Path    string `json:"path"`
	PathRaw string `json:"path_raw,omitempty"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	// EstimatedBytes is the estimated size of the delta (0 for an
	// identical file).
	EstimatedBytes int64 `json:"estimated_bytes"`
	Identical      bool  `json:"identical"`
	// Method is one of the Basis* methods.
	Method string `json:"method"`
	// Copied is the percentage of the query the delta copies from this
	// file (method delta), or found in it (the other methods).
	Copied float64 `json:"copied"`
	// Changed: the file changed since it was indexed; estimated on its
	// current bytes.
	Changed bool `json:"changed,omitempty"`
}

// BasisResponse answers a BasisRequest. Basis is the best candidate when it
// is identical to the query or its delta is smaller than CompressedBytes,
// else null: send the query compressed.
type BasisResponse struct {
	Size            int64            `json:"size"`
	Basis           *BasisCandidate  `json:"basis"`
	CompressedBytes int64            `json:"compressed_bytes"`
	Candidates      []BasisCandidate `json:"candidates"` // cheapest first
	// Considered is how many indexed files were candidates, Checked how
	// many were read to estimate their delta.
	Considered int   `json:"considered"`
	Checked    int   `json:"checked"`
	ElapsedNs  int64 `json:"elapsed_ns"`
}

// Basis asks which indexed file is the best basis for a delta of the
// query.
func (c *Client) Basis(ctx context.Context, req *BasisRequest) (*BasisResponse, error) {
	var out BasisResponse
	if err := c.do(ctx, http.MethodPost, "/v1/basis", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NewBasisRequest builds a basis request from a sketch and what ReadQuery
// kept of the file (d may be nil). path may be empty.
func NewBasisRequest(path string, sk *fingerprint.Sketch, d *QueryData) *BasisRequest {
	s := NewSimilarRequest(path, sk)
	r := &BasisRequest{Params: s.Params, Path: s.Path, PathRaw: s.PathRaw, Size: s.Size, Strong: s.Strong,
		Type: s.Type, Features: s.Features}
	if d != nil {
		r.Content, r.Windows, r.CompressedSize = d.Content, d.Windows, d.Compressed
	}
	return r
}

func (r *BasisRequest) checkLimits(o *ServerOptions) error {
	return (&SimilarRequest{Features: r.Features}).checkLimits(o)
}

func (s *Server) basis(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	c := s.identify(w, r)
	if c == nil {
		return
	}
	var req BasisRequest
	if !s.decode(w, r, &req) {
		return
	}
	thr := BasisThreshold * 100
	sreq := SimilarRequest{Params: req.Params, Path: req.Path, PathRaw: req.PathRaw, Size: req.Size, Strong: req.Strong,
		Type: req.Type, Features: req.Features, Threshold: &thr, PathPrefix: req.PathPrefix, MaxDF: req.MaxDF}
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
	if v := c.view(); v != nil {
		opts.Visible = v.CanRead
	}
	res, err := s.b.Similar(q, opts)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := BasisResponse{Size: req.Size, CompressedBytes: req.CompressedSize, Considered: res.Candidates}
	if out.CompressedBytes == 0 {
		out.CompressedBytes = req.Size
		if req.Content != nil {
			out.CompressedBytes = exact.CompressedSize(req.Content)
		}
	}
	type cand struct {
		BasisCandidate
		near int
	}
	var cands []cand
	n := min(len(res.Matches), BasisCheck)
	if n > 0 {
		last := pct(res.Matches[n-1].Containment)
		for n < len(res.Matches) && n < CheckMax && pct(res.Matches[n].Containment) == last {
			n++
		}
	}
	for _, m := range res.Matches[:n] {
		bc, ok := s.basisOf(m, req.Content, eq, &out)
		if ok {
			cands = append(cands, cand{bc, nearness(q.Path, m.Path)})
		}
	}
	eq.release()
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
		limit = BasisList
	}
	out.Candidates = make([]BasisCandidate, 0, min(limit, len(cands)))
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
// read in out.Checked. It returns false for a file that is gone.
func (s *Server) basisOf(m index.Match, content []byte, eq *checkSide, out *BasisResponse) (BasisCandidate, bool) {
	p, raw := PathFields(m.Path)
	size := out.Size
	bc := BasisCandidate{Path: p, PathRaw: raw, Size: m.FileMeta.Size, MtimeNs: m.MtimeNs, Method: BasisFingerprints}
	fromEstimate := func() (BasisCandidate, bool) {
		bc.Copied = pct(m.Containment)
		bc.EstimatedBytes = exact.EstimateDelta(exact.Measure{Containment: m.Containment}, size, bc.Size)
		if m.Identical {
			bc.Identical, bc.EstimatedBytes, bc.Method, bc.Copied = true, 0, BasisIdentical, 100
		}
		return bc, true
	}
	opener, ok := s.b.(ContentOpener)
	if !ok {
		return fromEstimate()
	}
	r, cur, err := opener.OpenIndexed(m.Path)
	switch {
	case errors.Is(err, ErrGone):
		return bc, false
	case err != nil:
		s.log.Debug("basis: cannot read a candidate", "path", m.Path, "err", err)
		return fromEstimate()
	}
	defer r.Close()
	bc.Changed = cur.Size != m.FileMeta.Size || cur.MtimeNs != m.MtimeNs
	bc.Size, bc.MtimeNs = cur.Size, cur.MtimeNs
	if m.Identical && !bc.Changed {
		bc.Identical, bc.EstimatedBytes, bc.Method, bc.Copied = true, 0, BasisIdentical, 100
		return bc, true
	}
	if cur.Size > MaxCheckSize || eq == nil {
		return fromEstimate()
	}
	out.Checked++
	if content != nil {
		d, err := exact.DeltaCost(r, cur.Size, content)
		if err != nil {
			s.log.Debug("basis: reading a candidate", "path", m.Path, "err", err)
			return fromEstimate()
		}
		bc.Method, bc.EstimatedBytes = BasisDelta, d.Bytes
		if size > 0 {
			bc.Copied = pct(float64(d.Copied) / float64(size))
		}
		return bc, true
	}
	em, err := eq.query().Measure(r, cur.Size)
	if err != nil {
		return fromEstimate()
	}
	bc.Method, bc.Copied = BasisWindows, pct(em.Containment)
	bc.EstimatedBytes = exact.EstimateDelta(em, size, cur.Size)
	return bc, true
}
