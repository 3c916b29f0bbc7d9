//go:build unix

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sifd check on a damaged table exits 1 with a plain message naming the
// table and what was wrong, as on any other broken invariant; sifd run then
// moves the index aside and rebuilds it, and check passes again.
func TestCheckDamagedTable(t *testing.T) {
	for _, c := range []struct {
		name  string
		harm  func([]byte) []byte
		table bool // the message names the table itself
		what  string
	}{
		{"bytes overwritten", func(b []byte) []byte {
			copy(b[len(b)/2:], bytes.Repeat([]byte{0xa5}, 256))
			return b
		}, true, "checksum mismatch"},
		{"cut short", func(b []byte) []byte { return b[:len(b)/2] }, false, "size mismatch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			files := e.corpus("d", 40, 300)
			e.start()
			e.stop()
			e.checkClean()
			tables, _ := filepath.Glob(filepath.Join(e.db, "*.sst"))
			if len(tables) == 0 {
				t.Fatal("no table in the index after a compacted first scan")
			}
			for _, name := range tables {
				b, err := os.ReadFile(name)
				must(t, err)
				must(t, os.WriteFile(name, c.harm(b), 0o644))
			}
			r := run(t, sifdBin, "check", "--db", e.db)
			t.Logf("sifd check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			out := r.stdout + r.stderr
			if r.code != 1 {
				t.Errorf("sifd check on a damaged table: exit %d, want 1", r.code)
			}
			if !strings.Contains(r.stderr, "sifd: "+e.db+": index is damaged") || !strings.Contains(out, c.what) ||
				strings.Contains(out, "carrier") {
				t.Errorf("sifd check: want a plain message saying the index is damaged and %q", c.what)
			}
			// Found when the index is opened (stderr) or by the check
			// (stdout), depending on which block the damage hit.
			if c.table && !strings.Contains(out, "damaged table "+tables[0]+": ") {
				t.Errorf("sifd check does not name the damaged table %s", tables[0])
			}
			if !c.table && !strings.Contains(out, filepath.Base(tables[0])) {
				t.Errorf("sifd check does not name the damaged table %s", filepath.Base(tables[0]))
			}
			e.start()
			e.waitApplied()
			e.allFound(files)
			e.stop()
			e.checkClean()
		})
	}
}
