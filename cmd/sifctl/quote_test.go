package main

import "testing"

// TestQuoteName: names a shell takes as one word are printed as they are;
// others are quoted as ls --quoting-style=shell-escape quotes them
// (quote_linux_test.go compares with ls itself).
func TestQuoteName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"/srv/a/plain-1.0_x.txt", "/srv/a/plain-1.0_x.txt"},
		{"été", "été"},
		{"", "''"},
		{"a b", "'a b'"},
		{"don't", `"don't"`},
		{"it's $5", `'it'\''s $5'`},
		{"a\nb", `'a'$'\n''b'`},
		{"\nb", `''$'\n''b'`},
		{"a\t", `'a'$'\t'`},
		{"x'\ny", `'x'\'''$'\n''y'`},
		{"a\xc3b", `'a'$'\303''b'`},
		{"a\x1b[1m", `'a'$'\033''[1m'`},
		{"a\u2028b", `'a'$'\342\200\250''b'`},
		{"~x", "'~x'"},
		{"x~", "x~"},
		{"{", "'{'"},
		{"{a}", "{a}"},
	} {
		if got := quoteName(tc.name); got != tc.want {
			t.Errorf("quoteName(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
}
