package main

import (
	"strings"
	"testing"
)

// TestParseSize: --size takes config.ParseSize's sizes, and only positive
// ones.
func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"1MB", 1e6, ""},
		{"512KiB", 512 << 10, ""},
		{"1GiB", 1 << 30, ""},
		{"1.5MB", 1500000, ""},
		{"4096", 4096, ""},
		{"0", 0, `"0": want a positive size`},
		{"unlimited", 0, `"unlimited": want a positive size`},
		{"-1MB", 0, `"-1MB": want a size`},
		{"1 parsec", 0, `"1 parsec": unknown unit`},
	} {
		got, err := parseSize(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("parseSize(%q) error = %v, want %s...", tc.in, err, tc.err)
		}
	}
}
