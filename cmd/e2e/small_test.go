//go:build unix

package e2e

import (
	"bytes"
	"testing"
)

// TestSimilarSmallFile: a 300-byte file, sampled more densely than large
// ones, has enough fingerprints to be judged, and its edited copy is found
// through the real sifd and sifctl; unrelated small files and a large file
// that shares a line with it are not listed.
func TestSimilarSmallFile(t *testing.T) {
	e := newEnv(t)
	base := words(11, 300)
	orig := e.write("small/orig.txt", base)
	ed := bytes.Clone(base)
	copy(ed[140:], "XXXXXXXXXX") // one word changed in the middle
	edited := e.write("small/edited.txt", ed)
	for i := range 5 {
		e.write("small/other"+string(rune('a'+i))+".txt", words(uint64(20+i), 300))
	}
	e.write("big/large.txt", append(append(words(30, 20000), base[:60]...), words(31, 20000)...))
	e.start()

	r, out := e.similar(orig)
	if r.code != 0 || len(out) != 1 {
		t.Fatalf("similar: exit %d, %d lines; stderr %s", r.code, len(out), r.stderr)
	}
	q := out[0]
	if q.TooFew || q.Fingerprints < 8 {
		t.Fatalf("a 300-byte file: too_few %v with %d fingerprints, want at least 8", q.TooFew, q.Fingerprints)
	}
	if len(q.Matches) != 1 || q.Matches[0].Path != edited || q.Matches[0].Containment < 50 {
		t.Fatalf("matches %+v, want only %s at 50 %% or more", q.Matches, edited)
	}

	// The edited copy finds the original back.
	r, out = e.similar(edited)
	if r.code != 0 || len(out) != 1 || len(out[0].Matches) != 1 || out[0].Matches[0].Path != orig {
		t.Fatalf("similar %s: exit %d, %+v; stderr %s", edited, r.code, out, r.stderr)
	}
}
