//go:build linux

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
)

// put writes content to dir/name with the given modification time (in
// seconds after a fixed day) and returns its path.
func put(t *testing.T, dir, name, content string, age int) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(content), 0o644))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(age) * time.Second)
	must(t, os.Chtimes(p, at, at))
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// indexed is the set of identical files paths as the index holds them:
// the size and SHA-256 of content, and each file's device and inode now.
func indexed(t *testing.T, content string, paths ...string) index.DupeSet {
	t.Helper()
	s := index.DupeSet{Size: int64(len(content)), Strong: sha256.Sum256([]byte(content))}
	sort.Strings(paths)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		s.Files = append(s.Files, index.FileMeta{Path: p, Size: fi.Size(), Dev: uint64(st.Dev), Ino: st.Ino})
	}
	return s
}

// dedupeLines runs sifctl dedupe --json with args on the sets and returns
// its records by path and its summary.
func dedupeLines(t *testing.T, sets []index.DupeSet, args ...string) (result, map[string]dedupeRecord, dedupeSummary) {
	t.Helper()
	sock := startFake(t, &fakeDaemon{dupes: sets})
	r := sifctl(t, append([]string{"--socket", sock, "--json", "dedupe"}, args...)...)
	recs := map[string]dedupeRecord{}
	var sum dedupeSummary
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var line struct {
			dedupeRecord
			Summary *dedupeSummary `json:"summary"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("dedupe %v: line %q: %v", args, sc.Text(), err)
		}
		if line.Summary != nil {
			sum = *line.Summary
			continue
		}
		recs[line.Path.Exact()] = line.dedupeRecord
	}
	return r, recs, sum
}

func keptOf(r dedupeRecord) string {
	if r.Keep == nil {
		return ""
	}
	return r.Keep.Exact()
}

// TestDedupeKeepRules: oldest by default, newest, the oldest under a
// directory; equal times go to the first path; a set with no copy under
// the directory is left alone.
func TestDedupeKeepRules(t *testing.T) {
	dir := t.TempDir()
	const c = "the same bytes\n"
	a := put(t, dir, "a", c, 20)
	b := put(t, dir, "b", c, 30)
	sub := put(t, dir, "sub/c", c, 25)
	tie1 := put(t, dir, "t/2", c+"x", 5)
	tie2 := put(t, dir, "t/1", c+"x", 5)
	sets := []index.DupeSet{indexed(t, c, a, b, sub), indexed(t, c+"x", tie1, tie2)}
	for _, tc := range []struct {
		keep       string
		want, tied string // kept of each set
	}{
		{"oldest", a, tie2},
		{"newest", b, tie2},
		{"under:" + filepath.Join(dir, "sub"), sub, ""},
	} {
		r, recs, _ := dedupeLines(t, sets, "--hardlink", "--dry-run", "--keep", tc.keep)
		if r.code != exitFound {
			t.Fatalf("--keep %s: exit %d: %s", tc.keep, r.code, r.stderr)
		}
		for _, p := range []string{a, b, sub} {
			if p == tc.want {
				if _, ok := recs[p]; ok {
					t.Errorf("--keep %s: the kept file %s has a record", tc.keep, p)
				}
				continue
			}
			if got := keptOf(recs[p]); got != tc.want || recs[p].Action != "hardlink" {
				t.Errorf("--keep %s: %s: %+v, want linked to %s", tc.keep, p, recs[p], tc.want)
			}
		}
		if tc.tied == "" {
			if recs[tie1].Skip != skipNoKeep || recs[tie2].Skip != skipNoKeep {
				t.Errorf("--keep %s: set with no copy there: %+v, %+v", tc.keep, recs[tie1], recs[tie2])
			}
		} else if got := keptOf(recs[tie1]); got != tc.tied {
			t.Errorf("--keep %s: equal times: kept %s, want %s", tc.keep, got, tc.tied)
		}
	}
	r := sifctl(t, "--socket", filepath.Join(dir, "none.sock"), "dedupe", "--keep", "largest")
	r.want(t, "--keep largest", exitError, "", "want oldest, newest or under:DIR")
	r = sifctl(t, "--socket", filepath.Join(dir, "none.sock"), "dedupe", "--hardlink", "--delete")
	r.want(t, "two actions", exitError, "", "give one of them")
}

func inode(t *testing.T, p string) (uint64, uint64) {
	t.Helper()
	fi, err := os.Lstat(p)
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	return st.Ino, uint64(st.Nlink)
}

// TestDedupeHardlink: every copy becomes a hard link of the oldest file;
// a copy with two names frees its bytes once, with its last name; a
// second run finds them all linked and does nothing.
func TestDedupeHardlink(t *testing.T) {
	dir := t.TempDir()
	c := strings.Repeat("0123456789", 1000)
	a := put(t, dir, "a", c, 1)
	b := put(t, dir, "b", c, 2)
	b2 := filepath.Join(dir, "b2")
	must(t, os.Link(b, b2))
	d := put(t, dir, "dir/d", c, 3)
	sets := []index.DupeSet{indexed(t, c, a, b, b2, d)}
	r, recs, sum := dedupeLines(t, sets, "--hardlink")
	if r.code != exitFound || sum.Acted != 3 || sum.Freed != 2*int64(len(c)) || len(sum.Skipped) != 0 {
		t.Fatalf("dedupe --hardlink: exit %d, %+v: %s%s", r.code, sum, r.stdout, r.stderr)
	}
	ino, n := inode(t, a)
	for _, p := range []string{b, b2, d} {
		if i, _ := inode(t, p); i != ino || recs[p].Action != "hardlink" {
			t.Errorf("%s: inode %d, record %+v; want %s's inode %d", p, i, recs[p], a, ino)
		}
	}
	if n != 4 {
		t.Errorf("%s has %d names, want 4", a, n)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*", ".sif-dedupe-*")); len(left) > 0 {
		t.Errorf("temporary names left: %v", left)
	}
	sets = []index.DupeSet{indexed(t, c, a, b, b2, d)}
	r, recs, sum = dedupeLines(t, sets, "--hardlink")
	if r.code != exitNothing || sum.Acted != 0 || sum.Skipped[skipLinked] != 3 || recs[d].Skip != skipLinked {
		t.Errorf("second run: exit %d, %+v, %+v", r.code, sum, recs)
	}
	if !strings.Contains(r.stderr, "skipped "+d+": already a hard link of "+a) {
		t.Errorf("second run: stderr %q", r.stderr)
	}

	// In text, a line per file and the summary.
	e := put(t, dir, "e", c, 9)
	sock := startFake(t, &fakeDaemon{dupes: []index.DupeSet{indexed(t, c, a, e)}})
	r = sifctl(t, "--socket", sock, "dedupe", "--hardlink")
	want := fmt.Sprintf("hard-linked %s to %s\n1 file hard-linked: %d bytes freed\n", e, a, len(c))
	if r.code != exitFound || r.stdout != want {
		t.Errorf("text: exit %d, stdout %q, want %q", r.code, r.stdout, want)
	}
}

// TestDedupeDelete: the copies are removed, the kept file stays.
func TestDedupeDelete(t *testing.T) {
	dir := t.TempDir()
	const c = "delete me, not the other\n"
	a := put(t, dir, "a", c, 9)
	b := put(t, dir, "b", c, 1)
	r, recs, sum := dedupeLines(t, []index.DupeSet{indexed(t, c, a, b)}, "--delete")
	if r.code != exitFound || sum.Acted != 1 || sum.Freed != int64(len(c)) || recs[a].Action != "delete" || keptOf(recs[a]) != b {
		t.Fatalf("dedupe --delete: exit %d, %+v %+v: %s", r.code, sum, recs, r.stderr)
	}
	if _, err := os.Lstat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s not removed: %v", a, err)
	}
	if got, err := os.ReadFile(b); err != nil || string(got) != c {
		t.Errorf("kept %s: %q, %v", b, got, err)
	}
}

// TestDedupeReflink: the default action shares the blocks where the
// filesystem can, and otherwise says it cannot and what to use instead.
func TestDedupeReflink(t *testing.T) {
	dir := t.TempDir()
	c := strings.Repeat("reflinked ", 100000)
	a := put(t, dir, "a", c, 1)
	b := put(t, dir, "b", c, 2)
	r, recs, sum := dedupeLines(t, []index.DupeSet{indexed(t, c, a, b)})
	switch {
	case recs[b].Action == "reflink":
		if r.code != exitFound || sum.Freed != int64(len(c)) {
			t.Errorf("reflink: exit %d, %+v", r.code, sum)
		}
		ia, _ := inode(t, a)
		if ib, _ := inode(t, b); ia == ib {
			t.Errorf("reflink made %s a hard link", b)
		}
	case recs[b].Skip == skipUnsupported:
		if r.code != exitNothing || !strings.Contains(r.stderr, "reflink is not supported here") || !strings.Contains(r.stderr, "--hardlink") {
			t.Errorf("unsupported: exit %d, stderr %q", r.code, r.stderr)
		}
	default:
		t.Fatalf("reflink: exit %d, %+v: %s", r.code, recs, r.stderr)
	}
	for _, p := range []string{a, b} {
		if got, err := os.ReadFile(p); err != nil || string(got) != c {
			t.Errorf("%s changed: %v", p, err)
		}
	}
}

// TestReflinkDiffers: FIDEDUPERANGE on files whose bytes differ says so
// and changes neither (where the filesystem has it).
func TestReflinkDiffers(t *testing.T) {
	dir := t.TempDir()
	c := strings.Repeat("x", 1<<16)
	a := put(t, dir, "a", c, 1)
	b := put(t, dir, "b", c[1:]+"y", 1)
	err := reflinkFile(a, b, int64(len(c)))
	if !errors.Is(err, errDiffers) && !errors.Is(err, errReflinkUnsupported) {
		t.Fatalf("reflink of differing files: %v", err)
	}
	if got, _ := os.ReadFile(b); string(got) != c[1:]+"y" {
		t.Error("the differing file changed")
	}
}

// anotherFilesystem returns a new directory on another filesystem than
// dir.
func anotherFilesystem(t *testing.T, dir string) string {
	t.Helper()
	fi, err := os.Stat(dir)
	must(t, err)
	for _, p := range []string{"/dev/shm", "/run", "/tmp", "/var/tmp"} {
		o, err := os.Stat(p)
		if err != nil || o.Sys().(*syscall.Stat_t).Dev == fi.Sys().(*syscall.Stat_t).Dev {
			continue
		}
		d, err := os.MkdirTemp(p, "sifctl-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	t.Fatalf("no writable directory on another filesystem than %s (tried /dev/shm, /run, /tmp, /var/tmp)", dir)
	return ""
}

// TestDedupeSkips: each file that is not what was indexed, or cannot be
// linked, is left as it is, with its reason.
func TestDedupeSkips(t *testing.T) {
	dir := t.TempDir()
	const c = "indexed content, 32 bytes long.\n"
	keep := put(t, dir, "0keep", c, 1)
	grown := put(t, dir, "grown", c, 2)
	edited := put(t, dir, "edited", c, 2)
	gone := put(t, dir, "gone", c, 2)
	linked := filepath.Join(dir, "linked")
	must(t, os.Link(keep, linked))
	elsewhere := put(t, anotherFilesystem(t, dir), "elsewhere", c, 2)
	fine := put(t, dir, "fine", c, 3)
	// The second set's oldest file changed: nothing is compared with it.
	const c2 = "second set\n"
	k2 := put(t, dir, "k2", c2, 1)
	o2 := put(t, dir, "o2", c2, 2)
	sets := []index.DupeSet{indexed(t, c, keep, grown, edited, gone, linked, elsewhere, fine), indexed(t, c2, k2, o2)}
	must(t, os.WriteFile(grown, []byte(c+"more"), 0o644))
	must(t, os.WriteFile(edited, []byte(strings.ToUpper(c)), 0o644))
	must(t, os.Remove(gone))
	must(t, os.WriteFile(k2, []byte("SECOND SET\n"), 0o644))
	must(t, os.Chtimes(k2, time.Unix(0, 0), time.Unix(0, 0)))

	before := snapshot(t, dir)
	r, recs, sum := dedupeLines(t, sets, "--hardlink")
	want := map[string]string{grown: skipChanged, edited: skipChanged, gone: skipVanished, linked: skipLinked, elsewhere: skipOtherFS, o2: skipChanged}
	for p, why := range want {
		if recs[p].Skip != why || recs[p].Message == "" {
			t.Errorf("%s: %+v, want skipped as %s", p, recs[p], why)
		}
	}
	if recs[fine].Action != "hardlink" || r.code != exitFound || sum.Acted != 1 || sum.Skipped[skipChanged] != 3 {
		t.Errorf("exit %d, %+v, %s: %+v", r.code, sum, fine, recs[fine])
	}
	for _, msg := range []string{
		"skipped " + edited + ": its bytes differ from " + keep,
		"skipped " + gone + ": vanished since it was indexed",
		"skipped " + elsewhere + ": on another filesystem than " + keep,
		"skipped " + o2 + ": the file to keep, " + k2 + ", changed since it was indexed (its SHA-256 differs)",
	} {
		if !strings.Contains(r.stderr, msg) {
			t.Errorf("stderr lacks %q:\n%s", msg, r.stderr)
		}
	}
	// Beside fine, linked now, only the kept file's count of names moved.
	after := snapshot(t, dir)
	for _, p := range []string{keep, linked, fine} {
		delete(before, p)
		delete(after, p)
	}
	if d := diffSnapshots(before, after); d != "" {
		t.Errorf("skipped files changed: %s", d)
	}
}

// snapshot is each file of a tree by path: its SHA-256, inode and number
// of names, so that a hard link made between identical files shows.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		sum := sha256.Sum256(b)
		m[p] = fmt.Sprintf("%s ino %d nlink %d mode %v mtime %d", hex.EncodeToString(sum[:]), st.Ino, st.Nlink, fi.Mode(), fi.ModTime().UnixNano())
		return nil
	}))
	return m
}

func diffSnapshots(a, b map[string]string) string {
	var d []string
	for p, v := range a {
		if b[p] != v {
			d = append(d, fmt.Sprintf("%s: %q then %q", p, v, b[p]))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d = append(d, p+": new")
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

// TestDedupeDryRun: --dry-run says what each action would do and free,
// and changes nothing in the tree.
func TestDedupeDryRun(t *testing.T) {
	dir := t.TempDir()
	c := strings.Repeat("dry ", 2500)
	a := put(t, dir, "a", c, 1)
	b := put(t, dir, "b", c, 2)
	d := put(t, dir, "sub/d", c, 3)
	changed := put(t, dir, "changed", c, 4)
	sets := []index.DupeSet{indexed(t, c, a, b, d, changed)}
	must(t, os.WriteFile(changed, []byte(strings.ToUpper(c)), 0o644))
	before := snapshot(t, dir)
	for _, act := range []string{"--reflink", "--hardlink", "--delete"} {
		r, recs, sum := dedupeLines(t, sets, act, "--dry-run")
		if r.code != exitFound || sum.Acted != 2 || sum.Freed != 2*int64(len(c)) || !sum.DryRun || !recs[b].DryRun || recs[changed].Skip != skipChanged {
			t.Errorf("%s --dry-run: exit %d, %+v, %+v: %s", act, r.code, sum, recs, r.stderr)
		}
		if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
			t.Fatalf("%s --dry-run changed the tree: %s", act, d)
		}
	}
	sock := startFake(t, &fakeDaemon{dupes: sets})
	r := sifctl(t, "--socket", sock, "dedupe", "--delete", "--dry-run")
	if !strings.Contains(r.stdout, "would delete "+b+" copy of "+a+"\n") || !strings.Contains(r.stdout, "would delete 2 files, 1 skipped (1 changed): 20000 bytes would be freed\n") {
		t.Errorf("text: %q", r.stdout)
	}
}
