//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/sif-dev/sif/ipc"
)

// TestDedupeHardlinkOnDaemon: sifctl dedupe --hardlink on the sets sifd
// found links the copies, frees their bytes, and skips a copy changed
// since it was indexed; dupes then lists the links as such. Run as
// another user, it skips what that user cannot write.
func TestDedupeHardlinkOnDaemon(t *testing.T) {
	e := newEnv(t)
	big := words(91, 200000)
	a := e.write("a/big.bin", big)
	b := e.write("b/big.bin", big)
	c := e.write("c/big.bin", big)
	changed := e.write("d/big.bin", big)
	// Unwatched, sifd keeps the index of the first scan: the change below
	// is one it has not seen.
	e.start("--no-watch", "--socket-access", "all")
	edited := append([]byte(nil), big...)
	edited[1000] ^= 1
	must(t, os.WriteFile(changed, edited, 0o644))

	if os.Geteuid() == 0 {
		// alice may read the files but not write them.
		r := e.sifctlAs(asAlice, "dedupe", "--hardlink")
		if r.code != 1 || !strings.Contains(r.stderr, "skipped "+b+": you cannot write it") ||
			!strings.HasPrefix(r.stdout, "0 files hard-linked, ") {
			t.Errorf("dedupe as alice: exit %d: %s%s", r.code, r.stdout, r.stderr)
		}
	}

	r := e.sifctl("--json", "dedupe", "--hardlink")
	if r.code != 0 {
		t.Fatalf("dedupe --hardlink: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	var sum struct {
		Summary struct {
			Acted   int            `json:"acted"`
			Skipped map[string]int `json:"skipped"`
			Freed   int64          `json:"freed_bytes"`
		} `json:"summary"`
	}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		must(t, json.Unmarshal(sc.Bytes(), &sum))
	}
	if s := sum.Summary; s.Acted != 2 || s.Freed != 2*int64(len(big)) || s.Skipped["changed"] != 1 {
		t.Errorf("summary %+v, want 2 linked, %d bytes freed, 1 changed: %s", s, 2*len(big), r.stdout)
	}
	if !strings.Contains(r.stderr, "skipped "+changed+": its bytes differ from "+a) {
		t.Errorf("stderr %q", r.stderr)
	}
	ino := func(p string) uint64 {
		fi, err := os.Stat(p)
		must(t, err)
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	if ino(b) != ino(a) || ino(c) != ino(a) || ino(changed) == ino(a) {
		t.Errorf("inodes: a %d, b %d, c %d, changed %d", ino(a), ino(b), ino(c), ino(changed))
	}
	if got, _ := os.ReadFile(changed); string(got) != string(edited) {
		t.Error("the changed file was touched")
	}

	e.sifctl("rescan", e.root)
	e.sifctl("wait")
	r = e.sifctl("dupes", "--json")
	var d ipc.DupesResponse
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || len(d.Sets) != 1 {
		t.Fatalf("dupes after: exit %d, %v: %s", r.code, err, r.stdout)
	}
	if s := d.Sets[0]; len(s.Files) != 3 || s.Inodes != 1 || s.RedundantBytes != 0 {
		t.Errorf("dupes after dedupe: %s", r.stdout)
	}
}
