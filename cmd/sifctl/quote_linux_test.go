package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lsNames are names to quote as ls does: every ASCII character, the
// characters special at the start or alone, control characters, bytes
// that are not UTF-8 and printable and unprintable non-ASCII characters,
// with and without an apostrophe (which ls double-quotes when it can).
var lsNames = func() []string {
	names := []string{
		"plain.txt", "a b", "don't", "a b'c", "it's $x", "x'\ny", "\nb", "a\nb", "a\n",
		"a\tb", "a\x01", "a\x1b[31m", "a\x7f", "a\a\b\f\v\r", "a\xc3", "a\xc3(", "\xff\xfe",
		"\xe2\x82", "\xe2\x82A", "été", "été'", "a\u00a0b", "a\u2028b", "a\u200bb", "a\u202eb",
		"a\ue000", "a\u0378", "a\u0085", "😀", "\xed\xa0\x80", "-x", "#x", "x#", "~x", "x~",
		"{", "}", "{a", "a}", "#a'b", "a#b'c", "~a'b", "a{b'c", "a@b'c", "a\tb'c", "a\\b'c",
		"''", "'", "a'\n'b", "%+,-.:@]_=", "a=b", "a?b",
	}
	for c := byte(0x20); c < 0x7f; c++ {
		if c != '/' {
			names = append(names, "a"+string(c)+"b", string(c)+"b")
		}
	}
	return names
}()

// TestQuoteNameAsLs compares quoteName with what GNU ls prints for files
// of each name (--quoting-style=shell-escape, its default on a terminal,
// in a UTF-8 locale).
func TestQuoteNameAsLs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range lsNames {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// -U: in the order given; quoted, each name is one line.
	cmd := exec.Command("ls", append([]string{"-1dU", "--quoting-style=shell-escape", "--"}, lsNames...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ls: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(lsNames) {
		t.Fatalf("ls printed %d lines for %d names:\n%s", len(lines), len(lsNames), out)
	}
	for i, name := range lsNames {
		if got := quoteName(name); got != lines[i] {
			t.Errorf("quoteName(%q) = %s, ls prints %s", name, got, lines[i])
		}
	}
}

// TestCompareQuotesNames: compare's text, and the explanation's header,
// name files as ls quotes them, one line each.
func TestCompareQuotesNames(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	for i := range 40 {
		fmt.Fprintf(&text, "line %d of a file with an unusual name, long enough to count\n", i)
	}
	a, b := filepath.Join(dir, "a b.txt"), filepath.Join(dir, "new\nline\xff.txt")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(text.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	qa, qb := "'"+dir+"/a b.txt'", "'"+dir+"/new'$'\\n''line'$'\\377''.txt'"
	r := sifctl(t, "--socket", filepath.Join(dir, "none.sock"), "compare", "--explain", a, b)
	size := fmt.Sprintf(" (%d bytes)\n", text.Len())
	for _, want := range []string{"\nA: " + qa + size, "\nB: " + qb + size, "\nA: " + qa + " (40 lines, ", "\nB: " + qb + " (40 lines, "} {
		if !strings.Contains("\n"+r.stdout, want) {
			t.Errorf("compare --explain lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\nline") {
		t.Errorf("compare --explain breaks a name across lines:\n%s", r.stdout)
	}
}
