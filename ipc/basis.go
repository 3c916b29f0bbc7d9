package ipc

import (
	"context"
	"net/http"

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
	BasisFingerprints = "fingerprints" // from the index's estimate: the file was not read; a range
)

// BasisRequest asks which indexed file a delta of the query would best be
// made from (POST /v1/basis). Its query, and Content, Windows, PathPrefix
// and MaxDF, are as in SimilarRequest; the daemon needs Content (files up
// to MaxContent) or Windows to estimate a delta from the bytes.
type BasisRequest struct {
	QuerySketch
	Content []byte   `json:"content,omitempty"`
	Windows *Windows `json:"windows,omitempty"`
	// CompressedSize is what sending the query without a basis costs
	// (its size compressed as by gzip -6; see exact.CompressedSize); 0
	// means unknown: the daemon computes it from Content, else takes Size.
	CompressedSize int64 `json:"compressed_size,omitempty"`
	// Limit caps the candidates listed; 0 means BasisList.
	Limit      int    `json:"limit,omitempty"`
	PathPrefix string `json:"path_prefix,omitempty"`
	MaxDF      int    `json:"max_df,omitempty"`
	// Fleet asks the fleet index too, as SimilarRequest.Fleet: the
	// candidates of other hosts, estimated from fingerprints, each with
	// its Host.
	Fleet bool `json:"fleet,omitempty"`
}

// BasisCandidate is one indexed file and what a delta from it would cost.
type BasisCandidate struct {
	Path    string `json:"path"`
	PathRaw string `json:"path_raw,omitempty"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	// EstimatedBytes is the estimated size of the delta (0 for an
	// identical file); for method fingerprints, the geometric mean of
	// EstimatedBytesLow and EstimatedBytesHigh.
	EstimatedBytes int64 `json:"estimated_bytes"`
	// EstimatedBytesLow and EstimatedBytesHigh bound the delta's size
	// when it is estimated from fingerprints alone (method fingerprints;
	// 0 for the other methods, whose estimate is made on the bytes): the
	// range rdiff's real delta was found in for nine pairs in ten of the
	// benchmark's held-out set (see API.md). Low <= EstimatedBytes <=
	// High.
	EstimatedBytesLow  int64 `json:"estimated_bytes_low,omitempty"`
	EstimatedBytesHigh int64 `json:"estimated_bytes_high,omitempty"`
	Identical          bool  `json:"identical"`
	// Method is one of the Basis* methods.
	Method string `json:"method"`
	// Copied is the percentage of the query the delta copies from this
	// file (method delta), or found in it (the other methods).
	Copied float64 `json:"copied"`
	// Changed: the file changed since it was indexed; estimated on its
	// current bytes.
	Changed bool `json:"changed,omitempty"`
	// Host is the host holding the file, in an answer that asked the
	// fleet (BasisRequest.Fleet).
	Host string `json:"host,omitempty"`
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
	Considered int `json:"considered"`
	Checked    int `json:"checked"`
	// FleetError is set when the request asked the fleet and it did not
	// answer: the candidates are this host's only.
	FleetError *Error `json:"fleet_error,omitempty"`
	ElapsedNs  int64  `json:"elapsed_ns"`
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
	r := &BasisRequest{QuerySketch: NewSimilarRequest(path, sk).QuerySketch}
	if d != nil {
		r.Content, r.Windows, r.CompressedSize = d.Content, d.Windows, d.Compressed
	}
	return r
}
