package main

import "github.com/sif-dev/sif/index/fingerprint"

// defaultMinFingerprints is the daemon's least number of distinct
// fingerprints a query needs for its similarity to be judged
// (index.DefaultMinFeatures), for answers that do not carry it (basis).
const defaultMinFingerprints = 4

// repetitive reports whether a query of size bytes that has n distinct
// fingerprints, fewer than least, has so few because its content repeats
// (few distinct windows: zeros, one repeated byte, a short pattern)
// rather than because it is small: varied content of its size gets at
// least four times least (a small file is sampled densely; see
// fingerprint.Params.Level). p is normalized.
func repetitive(p fingerprint.Params, size int64, n, least int) bool {
	return n < least && expectedFingerprints(p, size) >= 4*float64(least)
}

// expectedFingerprints is about how many distinct fingerprints varied
// content of size bytes gets under normalized p.
func expectedFingerprints(p fingerprint.Params, size int64) float64 {
	switch p.Scheme {
	case fingerprint.Manber:
		windows := size - int64(p.Window) + 1
		if windows <= 0 {
			return 0
		}
		return float64(windows) / float64(int64(1)<<p.Level(size))
	case fingerprint.Chunks:
		return float64(size) / float64(p.AvgChunk)
	}
	return 0
}
