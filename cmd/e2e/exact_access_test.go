//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckOnlyWhatTheCallerCanRead runs sifd as its own user with
// CAP_DAC_READ_SEARCH: a caller who cannot read the best candidate is
// answered as if it were not indexed, by similar (it is neither checked nor
// listed) and by basis (it is never the basis nor a candidate).
func TestCheckOnlyWhatTheCallerCanRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: sifd and sifctl run as other users here (CI runs as root)")
	}
	e := newEnv(t)
	os.Chmod(e.root, 0o755)
	q := words(841, 16000)
	pub := filepath.Join(e.root, "pub")
	priv := filepath.Join(e.root, "priv")
	must(t, os.Mkdir(pub, 0o755))
	must(t, os.Mkdir(priv, 0o700)) // root's: only root and sifd may enter
	near := filepath.Join(pub, "near.txt")
	best := filepath.Join(priv, "best.txt")
	must(t, os.WriteFile(near, edit(7, q, 0.15), 0o644))
	must(t, os.WriteFile(best, edit(8, q, 0.01), 0o644))
	qdir := filepath.Join(e.dir, "q")
	must(t, os.Mkdir(qdir, 0o755))
	query := filepath.Join(qdir, "query.txt")
	must(t, os.WriteFile(query, q, 0o644))
	e.daemonAttr = asSystemService()
	e.start("--socket-access", "all")
	if kernelReadable(t, asDave, []string{best})[best] {
		t.Fatal("dave can read the private file; the test needs him not to")
	}

	similar := func(w who) checkedJSON {
		r := e.sifctlAs(w, "similar", "--json", query)
		if r.code != 0 {
			t.Fatalf("similar as %s: exit %d: %s", w.name, r.code, r.stderr)
		}
		var out checkedJSON
		must(t, json.Unmarshal([]byte(r.stdout), &out))
		return out
	}
	root := similar(asRoot)
	if got := paths(root.Matches); len(got) != 2 || got[0] != best || root.Checked != 2 {
		t.Fatalf("root: %v, checked %d; want %s first, 2 checked", got, root.Checked, best)
	}
	dave := similar(asDave)
	if got := paths(dave.Matches); len(got) != 1 || got[0] != near || dave.Checked != 1 {
		t.Fatalf("dave: %v, checked %d; want only %s, 1 checked", got, dave.Checked, near)
	}

	r := e.sifctlAs(asDave, "basis", "--json", "--limit", "20", query)
	var b basisJSON
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil {
		t.Fatalf("basis as dave: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	for _, c := range b.Candidates {
		if c.Path != near {
			t.Errorf("basis as dave lists %s", c.Path)
		}
	}
	if b.Basis != nil && b.Basis.Path != near {
		t.Errorf("basis as dave: %s", b.Basis.Path)
	}
	r = e.sifctlAs(asRoot, "basis", "--json", query)
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil || b.Basis == nil || b.Basis.Path != best {
		t.Errorf("basis as root: exit %d: %s", r.code, r.stdout)
	}
}
