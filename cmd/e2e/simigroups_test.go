//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// simiGroupsJSON is the answer of sifctl groups --by simihash --json.
type simiGroupsJSON struct {
	By     string `json:"by"`
	Groups []struct {
		Reference simiGroupFileJSON   `json:"reference"`
		Members   []simiGroupFileJSON `json:"members"`
	} `json:"groups"`
	SimiHash *struct {
		Contents    int   `json:"contents"`
		Pairs       int64 `json:"pairs"`
		Comparisons int64 `json:"comparisons"`
		Similar     int64 `json:"similar"`
	} `json:"simihash"`
}

type simiGroupFileJSON struct {
	Path     string `json:"path"`
	SimiHash *struct {
		SumDistance uint64 `json:"sum_distance"`
		Identical   bool   `json:"identical"`
	} `json:"simihash"`
}

// TestGroupsBySimiHash: on an index created with --simihash, groups --by
// simihash puts a family of copies of a Go source, each with a few bytes
// changed, and an identical copy, in one group, leaves out a different
// file of the same size, and says how many sum-table comparisons it made
// against the pairs; an index made without SimiHash says how to get it.
func TestGroupsBySimiHash(t *testing.T) {
	src := filepath.Join(runtime.GOROOT(), "src", "net", "http")
	base, err := os.ReadFile(filepath.Join(src, "transport.go"))
	must(t, err)
	other, err := os.ReadFile(filepath.Join(src, "server.go"))
	must(t, err)
	if len(other) < len(base) {
		t.Fatalf("server.go (%d bytes) is smaller than transport.go (%d)", len(other), len(base))
	}
	e := newEnv(t)
	var family []string
	for i := range 5 {
		b := append([]byte(nil), base...)
		copy(b[len(b)*(i+1)/7:], fmt.Sprintf("edit%d", i))
		family = append(family, e.write(fmt.Sprintf("f%d/transport.go", i), b))
	}
	family = append(family, e.write("copy/transport.go", base), e.write("orig/transport.go", base))
	diff := e.write("other/different.go", other[:len(base)])
	e.start("--simihash")

	r := e.sifctl("groups", "--by", "simihash", "--json")
	if r.code != 0 {
		t.Fatalf("groups --by simihash --json: exit %d: %s", r.code, r.stderr)
	}
	var out simiGroupsJSON
	must(t, json.Unmarshal([]byte(r.stdout), &out))
	if out.By != "simihash" || len(out.Groups) != 1 || out.SimiHash == nil {
		t.Fatalf("answer: %s", r.stdout)
	}
	g := out.Groups[0]
	var got []string
	identical := 0
	for _, f := range append(g.Members, g.Reference) {
		got = append(got, f.Path)
		if f.SimiHash == nil {
			t.Fatalf("%s: no distances: %s", f.Path, r.stdout)
		}
		if f.SimiHash.Identical {
			identical++
		}
	}
	if g.Reference.SimiHash.SumDistance != 0 || g.Reference.SimiHash.Identical {
		t.Errorf("reference %+v", g.Reference)
	}
	slices.Sort(got)
	slices.Sort(family)
	if !slices.Equal(got, family) || slices.Contains(got, diff) {
		t.Errorf("group %q, want %q", got, family)
	}
	// Seven contents: the two unedited copies are one, the different file
	// one more; the six of the family are all near enough to be compared
	// and similar, and the unedited copies are
	// identical to each other (one is the other's when it is the
	// reference).
	wantIdentical := 0
	if filepath.Base(filepath.Dir(g.Reference.Path)) == "copy" || filepath.Base(filepath.Dir(g.Reference.Path)) == "orig" {
		wantIdentical = 1
	}
	if s := out.SimiHash; s.Contents != 7 || s.Pairs != 21 || s.Comparisons < 15 || s.Comparisons > s.Pairs || s.Similar != 15 || identical != wantIdentical {
		t.Errorf("counts %+v, %d identical to the reference %s", *s, identical, g.Reference.Path)
	}

	r = e.sifctl("groups", "--by", "simihash")
	if r.code != 0 || !strings.Contains(r.stdout, "sum-dist  key-dist  path  size") || !strings.Contains(r.stdout, family[0]) ||
		strings.Contains(r.stdout, diff) || !strings.Contains(r.stdout, fmt.Sprintf("%d sum-table comparisons for 21 pairs of 7 contents", out.SimiHash.Comparisons)) {
		t.Errorf("text answer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("groups --by simihash:\n%s", r.stdout)
	r = e.sifctl("groups", "--by", "simihash", "-0")
	if want := strings.Join(family, "\x00") + "\x00\x00"; r.code != 0 || len(r.stdout) != len(want) || !strings.HasSuffix(r.stdout, "\x00\x00") {
		t.Errorf("groups --by simihash -0: exit %d, %q, want the %d files, each ended by NUL, then an empty record (stderr %q)", r.code, r.stdout, len(family), r.stderr)
	} else if got := strings.Split(strings.TrimSuffix(r.stdout, "\x00\x00"), "\x00"); !slices.Equal(slices.Sorted(slices.Values(got)), family) {
		t.Errorf("groups --by simihash -0: records %q, want %q", got, family)
	}
	if r := e.sifctl("groups", "--by", "simihash", "--threshold", "50"); r.code != 2 || !strings.Contains(r.stderr, "--threshold does not apply") {
		t.Errorf("--threshold with --by simihash: exit %d, %q", r.code, r.stderr)
	}

	plain := newEnv(t)
	plain.write("q.go", base)
	plain.start()
	r = plain.sifctl("groups", "--by", "simihash")
	if r.code != 2 || !strings.Contains(r.stderr, "simihash = true") || !strings.Contains(r.stderr, "keeps no SimiHash keys") {
		t.Errorf("index without SimiHash: exit %d, stderr %q", r.code, r.stderr)
	}
}
