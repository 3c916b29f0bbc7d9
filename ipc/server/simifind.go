package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// SimiFinder is the part of a Backend's Query that answers by SimiHash
// (SimilarRequest.By "simihash"); a Query without it, or whose index keeps
// no SimiHash keys, answers such a query with ipc.CodeNoSimiHash.
type SimiFinder interface {
	SimiHash() bool // the index keeps SimiHash keys
	SimiFind(ctx context.Context, q index.SimiQuery) (*index.SimiResult, error)
}

// noSimiHash is what a query by SimiHash is told by an index without
// SimiHash keys.
const noSimiHash = "this index keeps no SimiHash keys: it was created without them; to answer by simihash, set simihash = true under [scheme] in sifd's configuration (or run sifd with --simihash), move the index aside and restart sifd to rebuild it"

// simiHashFinder returns the SimiFinder of s's backend, or nil when it
// has none that keeps SimiHash keys.
func (s *Server) simiHashFinder() SimiFinder {
	if sf, ok := s.q.(SimiFinder); ok && sf.SimiHash() {
		return sf
	}
	return nil
}

// similarBySimiHash answers a similar request By "simihash".
func (s *Server) similarBySimiHash(w http.ResponseWriter, r *http.Request, c *caller, req *ipc.SimilarRequest) {
	start := received(r)
	q, err := parseSimiQuery(req)
	if err != nil {
		s.badQuery(w, err)
		return
	}
	if !req.Fleet && !s.checkPrefix(w, c, q.PathPrefix) {
		return
	}
	if req.Fleet && !s.mayAskFleet(w, c) {
		return
	}
	sf := s.simiHashFinder()
	if sf == nil {
		writeError(w, http.StatusConflict, ipc.CodeNoSimiHash, noSimiHash)
		return
	}
	fleetQ := q
	if v := c.view(); v != nil {
		q.Visible = visibleTo(v)
	}
	res, err := sf.SimiFind(r.Context(), q)
	if errors.Is(err, index.ErrNoSimiHash) {
		writeError(w, http.StatusConflict, ipc.CodeNoSimiHash, noSimiHash)
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	out := ipc.SimilarResponse{
		Matches: make([]ipc.Match, 0, len(res.Matches)),
		SimiFind: &ipc.SimiFindInfo{Tolerances: res.Tolerances, KeyTolerance: res.KeyTolerance, SumTolerance: res.SumTolerance,
			KeyHits: res.KeyHits, SumHits: res.SumHits},
		Total: res.Total,
	}
	for _, m := range res.Matches {
		p, raw := ipc.PathFields(m.Path)
		out.Matches = append(out.Matches, ipc.Match{
			Path: p, PathRaw: raw, Size: m.FileMeta.Size, Identical: m.Identical, Type: m.Type.String(),
			MtimeNs: m.MtimeNs, Measure: ipc.MeasureEstimated,
			SimiHash: &ipc.SimiMatch{KeyDistance: m.KeyDistance, KeyTolerance: m.KeyTolerance,
				SumDistance: m.SumDistance, SumTolerance: m.SumTolerance},
		})
	}
	if req.Fleet {
		s.addFleetSimi(r.Context(), &out, fleetQ)
	}
	out.ElapsedNs = time.Since(start).Nanoseconds()
	writeJSON(w, out)
}

// parseSimiQuery checks a similar request By "simihash" and returns its
// query. Its params need not be the index's: SimiHash does not use them.
func parseSimiQuery(req *ipc.SimilarRequest) (index.SimiQuery, error) {
	var q index.SimiQuery
	if req.SimiHash == nil {
		return q, errors.New(`simihash: missing; a query by simihash carries the query's sum table and key ('sifctl sketch' puts them in its signatures)`)
	}
	if err := ipc.CheckSimiHash(req.SimiHash); err != nil {
		return q, err
	}
	if req.Limit < 0 {
		return q, fmt.Errorf("limit %d: must not be negative", req.Limit)
	}
	path, strong, _, err := req.Decoded()
	if err != nil {
		return q, err
	}
	prefix, err := absPath("path_prefix", req.PathPrefix)
	if err != nil {
		return q, err
	}
	q = index.SimiQuery{Path: path, Limit: req.Limit, PathPrefix: prefix, SameExt: req.SameExt}
	q.Summary.Size, q.Summary.Strong, q.Summary.Type = req.Size, strong, req.Type
	q.Summary.Sum, q.Summary.Key = req.SimiHash.Sum, req.SimiHash.Key
	if req.Tolerances != nil {
		q.Tolerances = *req.Tolerances
	}
	if _, err := q.Tolerances.Normalize(); err != nil {
		return q, fmt.Errorf("tolerances: %w", err)
	}
	return q, nil
}
