//go:build !race

package fingerprint

// memTestBytes is how much TestBoundedMemory streams.
const memTestBytes = 4 << 30
