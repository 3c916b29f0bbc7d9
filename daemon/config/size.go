package config

import (
	"fmt"
	"math/big"
	"strings"
	"time"
)

// sizeUnits are the units ParseSize accepts, in lower case. K, M, G and T
// are binary, as in GNU coreutils; KB, MB, GB and TB are decimal.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// ParseSize parses a number of bytes: a non-negative number followed by an
// optional unit, case-insensitively: B; K, KiB, M, MiB, G, GiB, T, TiB
// (powers of 1024); KB, MB, GB, TB (powers of 1000). Spaces between the
// number and the unit are allowed. The number may have a fraction, as in
// "1.5GiB", rounded down to whole bytes; a size in bytes must be whole.
// "unlimited" is -1, no limit. It is the one size syntax of sif: the
// configuration file, sifd's --memory-limit and sifbench's --size.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "unlimited") {
		return -1, nil
	}
	i := digits(t, 0)
	if i == 0 {
		return 0, fmt.Errorf("%q: want a size such as 4096, \"64KiB\", \"256MiB\", \"1G\" or \"unlimited\"", s)
	}
	if i < len(t) && t[i] == '.' && digits(t, i+1) > i+1 {
		i = digits(t, i+1)
	}
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q: want B, K, KiB, KB, M, MiB, MB, G, GiB, GB, T, TiB or TB", s, strings.TrimSpace(t[i:]))
	}
	// n = whole.frac × unit, exactly, rounded down.
	whole, frac, _ := strings.Cut(t[:i], ".")
	n, _ := new(big.Int).SetString(whole+frac, 10)
	n.Mul(n, big.NewInt(unit))
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	n, rem := n.QuoRem(n, scale, new(big.Int))
	if unit == 1 && rem.Sign() != 0 {
		return 0, fmt.Errorf("%q: want a whole number of bytes", s)
	}
	if !n.IsInt64() {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return n.Int64(), nil
}

// digits returns the end of the run of decimal digits in s from i.
func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// parseDuration parses a non-negative duration in time.ParseDuration
// syntax, such as "500ms", "2s" or "1m30s".
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q: want a duration such as \"500ms\", \"2s\" or \"1m30s\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: want 0 or more", s)
	}
	return d, nil
}
