//go:build race

package fingerprint

// memTestBytes is how much TestBoundedMemory streams: less under the race
// detector, which slows the scan some tenfold.
const memTestBytes = 256 << 20
