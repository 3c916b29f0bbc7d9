// Package cliflags holds the command-line flags that sifd and sifctl share.
package cliflags

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sif-dev/sif/index/fingerprint"
)

// AddParams adds the fingerprint scheme flags to fl, filling p. schemeUsage
// describes --scheme, which differs between commands. The defaults the
// usage shows are those fingerprint.Params.Normalize fills in.
func AddParams(fl *pflag.FlagSet, p *fingerprint.Params, schemeUsage string) {
	m, _ := fingerprint.Params{Scheme: fingerprint.Manber}.Normalize()
	c, _ := fingerprint.Params{Scheme: fingerprint.Chunks}.Normalize()
	fl.StringVar((*string)(&p.Scheme), "scheme", "", schemeUsage)
	fl.IntVar(&p.Window, "window", 0, fmt.Sprintf("manber: window length W in bytes (default %d)", m.Window))
	fl.IntVar(&p.Bits, "bits", 0, fmt.Sprintf("manber: keep windows whose hash has its low k bits zero, about 1 in 2^k (default %d)", m.Bits))
	fl.IntVar(&p.ModBits, "mod-bits", 0, fmt.Sprintf("manber: Karp-Rabin modulus 2^30 or 2^64 (default %d)", m.ModBits))
	fl.IntVar(&p.MinChunk, "min-chunk", 0, fmt.Sprintf("chunks: minimum chunk length (default avg/%d)", c.AvgChunk/c.MinChunk))
	fl.IntVar(&p.AvgChunk, "avg-chunk", 0, fmt.Sprintf("chunks: average chunk length, a power of two (default %d)", c.AvgChunk))
	fl.IntVar(&p.MaxChunk, "max-chunk", 0, fmt.Sprintf("chunks: maximum chunk length (default avg*%d)", c.MaxChunk/c.AvgChunk))
}

// schemeFlags names the flags of AddParams that belong to one scheme.
var schemeFlags = []struct {
	name   string
	scheme fingerprint.Scheme
}{
	{"window", fingerprint.Manber},
	{"bits", fingerprint.Manber},
	{"mod-bits", fingerprint.Manber},
	{"min-chunk", fingerprint.Chunks},
	{"avg-chunk", fingerprint.Chunks},
	{"max-chunk", fingerprint.Chunks},
}

// CheckParams refuses a scheme flag of AddParams given on the command line
// that does not apply to scheme, the scheme in force, naming the flag and
// the scheme; how says where scheme came from when it was not given with
// --scheme (e.g. "the default"). An empty scheme checks nothing.
func CheckParams(fl *pflag.FlagSet, scheme fingerprint.Scheme, how string) error {
	if scheme == "" {
		return nil
	}
	from := "--scheme " + string(scheme)
	if how != "" {
		from = string(scheme) + ", " + how
	}
	for _, f := range schemeFlags {
		if fl.Changed(f.name) && f.scheme != scheme {
			return fmt.Errorf("--%s applies to --scheme %s, not to %s: drop it, or give --scheme %s",
				f.name, f.scheme, from, f.scheme)
		}
	}
	return nil
}
