package ipc

import (
	"encoding/binary"

	"github.com/sif-dev/sif/index/exact"
)

// The check of a query's best candidates against their current bytes.
const (
	// CheckTop is how many candidates, best by the index's estimate, are
	// checked, plus those tied with the last of them (up to CheckMax in
	// all).
	CheckTop = 8
	CheckMax = 16
	// CheckFamily is how many candidates of a template query (its family,
	// SimilarResponse.Template) are checked, best first, while their sizes
	// sum to at most CheckFamilyBytes: members of a family differ in a few
	// lines, which the index's estimates, sampled, cannot always order.
	CheckFamily      = 512
	CheckFamilyBytes = 4 << 20
	// CheckWeak is how many weak candidates (sharing fewer than
	// MinFingerprints of the query's fingerprints at their sampling level,
	// as a small query does with a larger file) are checked besides: the
	// best by the index's estimate, the nearer path first among ties. A
	// weak candidate is listed only when checked.
	CheckWeak = 8
	// MaxContent is the largest query sent as its bytes (Content); a
	// larger one is sent as a signature (Windows).
	MaxContent = exact.ExactLimit
	// MaxCheckSize is the largest candidate read for a check: a larger one
	// keeps the index's estimate.
	MaxCheckSize = 16 << 20
	// CheckBytes bounds the bytes of candidates one check reads: past
	// CheckBytes or 16 times the query's size, whichever is more, the
	// candidates left keep their estimates (weak ones are dropped), but
	// for the first, which is read whatever its size. Reading and hashing
	// a candidate costs a few milliseconds per megabyte: without a bound,
	// a small file sharing a few lines with large ones cost a check of up
	// to a second, which every query behind it waited for. It is twice
	// CheckFamilyBytes, so that a template query's family is checked as
	// before (at 2 MiB the documentation set lost 0.07 of its F1 at
	// containment >= 80 % on files of 4-32 KB).
	CheckBytes = 8 << 20
)

// Measures of a Match.
const (
	MeasureExact     = "exact"     // counted over every 32-byte window of both files
	MeasureSampled   = "sampled"   // over a sample of the windows (a file over 1 MiB, or a signature)
	MeasureEstimated = "estimated" // the index's estimate from fingerprints, not checked
)

// Windows is a signature of a query: the distinct hashes of its 32-byte
// windows kept at Level (package index/exact), sorted ascending, each 8
// bytes big-endian, base64 on the wire.
type Windows struct {
	Level  int    `json:"level"`
	Hashes []byte `json:"hashes"`
}

// NewWindows returns the wire form of a signature.
func NewWindows(level int, sig []uint64) *Windows {
	b := make([]byte, 8*len(sig))
	for i, h := range sig {
		binary.BigEndian.PutUint64(b[8*i:], h)
	}
	return &Windows{Level: level, Hashes: b}
}
