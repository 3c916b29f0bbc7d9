//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// simiJSON is one line of sifctl similar --by simihash --json.
type simiJSON struct {
	Query        string `json:"query"`
	Key          uint32 `json:"key"`
	KeyTolerance uint64 `json:"key_tolerance"`
	SumTolerance uint64 `json:"sum_tolerance"`
	KeyHits      int    `json:"key_hits"`
	Matches      []struct {
		Path         string `json:"path"`
		KeyDistance  uint64 `json:"key_distance"`
		KeyTolerance uint64 `json:"key_tolerance"`
		SumDistance  uint64 `json:"sum_distance"`
		SumTolerance uint64 `json:"sum_tolerance"`
		Identical    bool   `json:"identical"`
	} `json:"matches"`
}

func (e *env) simiHash(args ...string) (result, simiJSON) {
	e.t.Helper()
	r := e.sifctl(append([]string{"similar", "--by", "simihash", "--json"}, args...)...)
	var out simiJSON
	if r.code <= 1 {
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			e.t.Fatalf("similar --by simihash --json: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
		}
	}
	return r, out
}

// TestSimilarBySimiHash: on an index created with --simihash, similar --by
// simihash finds a copy with a few bytes changed, and an identical copy,
// within the tolerances, and not a different file of the same size (Go
// sources, real text); the same after a restart without the flag (the
// index keeps its setting), for a copy edited while sifd runs, and for a
// query by signature. An index made without SimiHash says how to get it.
func TestSimilarBySimiHash(t *testing.T) {
	query, edited, other := simiFiles(t)
	e := newEnv(t)
	q := e.write("q/transport.go", query)
	ed := e.write("a/transport-edited.go", edited)
	same := e.write("b/transport-copy.go", query)
	e.write("c/different.go", other[:len(query)])
	e.start("--simihash")

	check := func(when string, want ...string) {
		t.Helper()
		r, out := e.simiHash(q)
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", when, r.code, r.stderr)
		}
		var got []string
		for _, m := range out.Matches {
			got = append(got, filepath.Base(m.Path))
			if m.KeyDistance > m.KeyTolerance || m.SumDistance > m.SumTolerance || m.KeyTolerance != out.KeyTolerance || m.SumTolerance != out.SumTolerance {
				t.Errorf("%s: %s: distances past the tolerances: %+v", when, m.Path, m)
			}
			if m.Identical != (m.Path == same) || m.Identical != (m.SumDistance == 0) {
				t.Errorf("%s: %s: identical %v, sum distance %d", when, m.Path, m.Identical, m.SumDistance)
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: matches %q, want %q (nearest first)", when, got, want)
		}
	}
	check("first run", "transport-copy.go", "transport-edited.go")

	r := e.sifctl("similar", "--by", "simihash", q)
	if r.code != 0 || !strings.Contains(r.stdout, "sum-dist  key-dist  path  size") || !strings.Contains(r.stdout, ed) {
		t.Errorf("text answer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.sifctl("similar", "--by", "simihash", "-0", q)
	if want := same + "\x00" + ed + "\x00"; r.code != 0 || r.stdout != want {
		t.Errorf("similar --by simihash -0: exit %d, %q, want the matches, nearest first, each ended by NUL (stderr %q)", r.code, r.stdout, r.stderr)
	}
	sig := filepath.Join(e.dir, "q.sig")
	r = e.sifctl("sketch", q)
	must(t, os.WriteFile(sig, []byte(r.stdout), 0o644))
	r = e.sifctl("similar", "--by", "simihash", "--signature", sig)
	if r.code != 0 || !strings.Contains(r.stdout, ed) || !strings.Contains(r.stdout, same) || strings.Contains(r.stdout, "different.go") {
		t.Errorf("by signature: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	e.stop()
	e.start()
	check("after a restart", "transport-copy.go", "transport-edited.go")
	copy(edited[len(edited)/4:], "more")
	e.write("d/live-edit.go", edited)
	if r := e.sifctl("wait", "--timeout", "60s"); r.code != 0 {
		t.Fatalf("wait: exit %d: %s", r.code, r.stderr)
	}
	check("after a live edit", "transport-copy.go", "transport-edited.go", "live-edit.go")

	plain := newEnv(t)
	pq := plain.write("q.go", query)
	plain.start()
	r = plain.sifctl("similar", "--by", "simihash", pq)
	if r.code != 2 || !strings.Contains(r.stderr, "simihash = true") || !strings.Contains(r.stderr, "keeps no SimiHash keys") {
		t.Errorf("index without SimiHash: exit %d, stderr %q", r.code, r.stderr)
	}
	r = plain.sifctl("similar", "--json", "--by", "simihash", pq)
	if r.code != 2 || !strings.Contains(r.stdout, `"code":"no_simihash"`) {
		t.Errorf("index without SimiHash, --json: exit %d, stdout %q", r.code, r.stdout)
	}
}

// simiFiles returns real Go source (net/http's transport.go), a copy of it
// with four bytes overwritten in the middle, and a different file that is
// at least as large (server.go): SimiFind must list the copy and not the
// other file.
func simiFiles(t *testing.T) (query, edited, other []byte) {
	t.Helper()
	src := filepath.Join(runtime.GOROOT(), "src", "net", "http")
	query, err := os.ReadFile(filepath.Join(src, "transport.go"))
	must(t, err)
	other, err = os.ReadFile(filepath.Join(src, "server.go"))
	must(t, err)
	if len(other) < len(query) {
		t.Fatalf("server.go (%d bytes) is smaller than transport.go (%d)", len(other), len(query))
	}
	edited = append([]byte(nil), query...)
	copy(edited[len(edited)/2:], "sif!")
	return query, edited, other
}
