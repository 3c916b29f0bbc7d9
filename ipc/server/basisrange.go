package server

import (
	"math"

	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/index/fingerprint"
)

// The estimate of a delta from fingerprints alone (method fingerprints):
// the daemon knows the share c of the query's fingerprints a candidate
// holds, not where the changes lie. rdiff loses a whole block of the
// basis to any change inside it, so what a delta costs depends on how the
// changes are spread, which fingerprints do not tell:
//
//   - gathered in one run, the delta sends about the missing share of the
//     query and one block more: the low end;
//   - scattered, a block survives only when none of its windows changed:
//     with f the share of windows changed, (1−f)^(block/w) of the query is
//     copied, and the rest sent: the high end. f is the missing share of
//     the n fingerprints compared plus one unseen change
//     (((1−c)·n + 1)/(n + 1)), since changes between the sampled windows
//     go unseen; a candidate holding every fingerprint of a query that is
//     not identical still differs somewhere.
//
// No delta sends much more than the whole query. The estimate is the
// geometric mean of the two ends. The constants were calibrated with
// `sifbench basis` (RESULTS.md, "A basis for sync tools") on four of its
// seven modules and checked on the other three (held out): rdiff's real
// delta fell in the range for 96 % of the held-out answers' first
// candidates, and the estimate was within a factor of about 2 of it for
// most (median estimate/rdiff 0.8).
const (
	// rangeLowShare is the share of the missing bytes counted at the low
	// end, rangeLowBlocks the blocks of the basis lost with them.
	rangeLowShare  = 0.6
	rangeLowBlocks = 0.5
	// rangeSpan is w at the high end: the bytes a scattered change is
	// taken to spoil around it, against a block.
	rangeSpan = 20
	// rangeSeen is the unseen changes added to the missing fingerprints.
	rangeSeen = 1
	// rangeHighCommands is what the high end counts for commands.
	rangeHighCommands = 8
	// deltaFixed is rdiff's header and end command; deltaOverLiteral what
	// a delta that sends the query as literals takes beyond its bytes (a
	// few commands of up to 9 bytes).
	deltaFixed       = 5
	deltaOverLiteral = 3 * 9
)

// fingerprintRange estimates, from the containment of a query of size
// bytes in a basis of basisSize bytes alone, the size of rdiff's delta:
// low <= est <= high, as described above. p are the index's normalized
// parameters: they say how many fingerprints the two files were compared
// on.
func fingerprintRange(containment float64, size, basisSize int64, p fingerprint.Params) (low, est, high int64) {
	c := containment
	if !(c >= 0) { // NaN too
		c = 0
	}
	c = min(c, 1)
	s := float64(max(size, 0))
	bl := float64(exact.BlockLen(basisSize))
	lowLit := min(s, rangeLowShare*(1-c)*s+rangeLowBlocks*bl)
	n := comparedFingerprints(size, basisSize, p)
	f := ((1-c)*n + rangeSeen) / (n + rangeSeen)
	highLit := s * (1 - math.Pow(1-f, bl/rangeSpan))
	low = deltaFixed + int64(math.Round(lowLit))
	high = min(deltaFixed+int64(math.Round(s))+deltaOverLiteral, deltaFixed+int64(math.Round(highLit))+rangeHighCommands)
	high = max(high, low)
	est = int64(math.Round(math.Sqrt(float64(low) * float64(high))))
	return low, min(max(est, low), high), high
}

// comparedFingerprints is about how many fingerprints of a query of size
// bytes a basis of basisSize bytes was compared on: one per 2^k windows
// at the higher of their levels (manber), one per average chunk (chunks);
// at least 1.
func comparedFingerprints(size, basisSize int64, p fingerprint.Params) float64 {
	var n float64
	switch p.Scheme {
	case fingerprint.Manber:
		k := max(p.Level(size), p.Level(basisSize))
		n = float64(size-int64(p.Window)+1) / math.Ldexp(1, k)
	default:
		if p.AvgChunk > 0 {
			n = float64(size) / float64(p.AvgChunk)
		}
	}
	return max(n, 1)
}
