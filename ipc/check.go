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
	// CheckWeakBytes bounds the bytes of weak candidates a check reads:
	// past it, or 64 times the query's size if more, the weak ones left
	// are not read (and so not listed); nor is one larger than
	// CheckWeakLargest or 256 times the query's size. A weak candidate is
	// mostly a much larger file sharing a fingerprint or two with a small
	// query, and measuring it means hashing all of it and counting its
	// distinct windows: on a million files the slowest queries were files
	// of 0.4-2.4 KB checking such a file (a 435-byte one against a 715 KB
	// file, 30-150 ms), and with both bounds the p99 in the daemon fell
	// from 26-40 ms to 9.9 ms right after ready and from 17-21 ms to 5.4
	// ms once compacted, with every accuracy figure of the heldout, docs
	// and js-heldout sets unchanged (at 64 times instead of 256, the
	// heldout set's small files lost 0.002 of F1).
	CheckWeakBytes   = 1 << 20
	CheckWeakLargest = 64 << 10
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
