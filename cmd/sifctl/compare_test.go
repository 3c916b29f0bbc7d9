package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestCompareSimiHashDistance: compare works out the SimiHash distance
// of the two files (the query sketches skip SimiHash; compare must not):
// zero for identical files, more for files that differ.
func TestCompareSimiHashDistance(t *testing.T) {
	dir := t.TempDir()
	words := func(seed uint32, n int) []byte {
		b := make([]byte, 0, n)
		for x := seed; len(b) < n; {
			x = x*1664525 + 1013904223
			b = append(b, 'a'+byte(x>>24)%26)
			if x>>20&7 == 0 {
				b = append(b, ' ')
			}
		}
		return b
	}
	a, b := words(1, 30000), words(2, 30000)
	for name, data := range map[string][]byte{"a": a, "a2": a, "b": append(a[:15000:15000], b[:15000]...)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	distance := func(x, y string) int {
		t.Helper()
		r := sifctl(t, "compare", filepath.Join(dir, x), filepath.Join(dir, y))
		m := regexp.MustCompile(`SimiHash sum-table distance: (\d+)`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("compare %s %s: exit %d, no distance in %q (stderr %q)", x, y, r.code, r.stdout, r.stderr)
		}
		d, _ := strconv.Atoi(m[1])
		return d
	}
	if d := distance("a", "a2"); d != 0 {
		t.Errorf("identical files: distance %d, want 0", d)
	}
	if d := distance("a", "b"); d == 0 {
		t.Error("different files: distance 0: SimiHash was not computed")
	}
}
