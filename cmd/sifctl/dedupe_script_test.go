//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sif-dev/sif/index"
)

// scriptTree writes, under dir, identical files with unusual names, a
// hard link, a file that changes after it is indexed and a second set,
// and returns the sets as indexed, and the changed file.
func scriptTree(t *testing.T, dir string) ([]index.DupeSet, string) {
	t.Helper()
	c := strings.Repeat("identical\n", 300)
	names := []string{"keep", "plain", "with space", `quo'te"d`, "new\nline\n", "bytes\xff\xfe", `%s\x\\n`, "sub/-dash", "changed"}
	var paths []string
	for i, n := range names {
		paths = append(paths, put(t, dir, n, c, i+1))
	}
	link := filepath.Join(dir, "link")
	must(t, os.Link(paths[0], link))
	other := []string{put(t, dir, "o/new", "other\n", 9), put(t, dir, "o/old", "other\n", 2)}
	sets := []index.DupeSet{indexed(t, c, append(paths, link)...), indexed(t, "other\n", other...)}
	changed := paths[len(paths)-1]
	return sets, changed
}

// shape is a tree as dedupe leaves it: each file's content and the names
// it shares its inode with, relative to dir.
func shape(t *testing.T, dir string) map[string]string {
	t.Helper()
	byIno := map[uint64][]string{}
	snap := snapshot(t, dir)
	for p := range snap {
		fi, err := os.Lstat(p)
		must(t, err)
		ino := fi.Sys().(*syscall.Stat_t).Ino
		rel, _ := filepath.Rel(dir, p)
		byIno[ino] = append(byIno[ino], rel)
	}
	m := map[string]string{}
	for p, v := range snap {
		fi, _ := os.Lstat(p)
		names := byIno[fi.Sys().(*syscall.Stat_t).Ino]
		rel, _ := filepath.Rel(dir, p)
		m[rel] = strings.Fields(v)[0] + " " + strings.Join(slices.Sorted(slices.Values(names)), "|")
	}
	return m
}

// TestDupesScript: the script dupes --script writes is executable, names
// every file on one line whatever its bytes, and run with sh leaves the
// tree as dedupe --hardlink does: each copy linked to the kept file, and
// a file changed after the script was written left as it is.
func TestDupesScript(t *testing.T) {
	base := t.TempDir()
	byScript, byDedupe := filepath.Join(base, "s"), filepath.Join(base, "d")
	sets, changed := scriptTree(t, byScript)
	script := filepath.Join(base, "dedupe.sh")
	sock := startFake(t, &fakeDaemon{dupes: sets})
	r := sifctl(t, "--socket", sock, "dupes", "--script", script)
	r.want(t, "dupes --script", exitFound, "Wrote "+script+": 2 sets, 9 commands", "")
	fi, err := os.Stat(script)
	must(t, err)
	if fi.Mode()&0o100 == 0 {
		t.Errorf("script mode %v, want executable", fi.Mode())
	}
	text, err := os.ReadFile(script)
	must(t, err)
	for _, want := range []string{
		"# 10 identical files of 3000 bytes: keep " + filepath.Join(byScript, "keep") + "\n",
		"link '" + filepath.Join(byScript, "quo") + `'\''te"d'` + "\n",
		"# already a hard link: " + filepath.Join(byScript, "link") + "\n",
		`n=$(printf '` + byScript + `/new\012line\012/'); link "${n%/}"` + "\n",
		"link '" + filepath.Join(byScript, "o/new") + "'\n",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("script lacks %q:\n%s", want, text)
		}
	}
	must(t, os.WriteFile(changed, []byte(strings.Repeat("IDENTICAL\n", 300)), 0o644))
	cmd := exec.Command("sh", script)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sh %s: %v: %s", script, err, errb.String())
	}
	if want := "skipped, not identical to " + filepath.Join(byScript, "keep") + ": " + changed + "\n"; errb.String() != want {
		t.Errorf("sh stderr %q, want %q", errb.String(), want)
	}

	sets, changed = scriptTree(t, byDedupe)
	must(t, os.WriteFile(changed, []byte(strings.Repeat("IDENTICAL\n", 300)), 0o644))
	sock = startFake(t, &fakeDaemon{dupes: sets})
	r = sifctl(t, "--socket", sock, "dedupe", "--hardlink")
	r.want(t, "dedupe --hardlink", exitFound, "8 files hard-linked", "skipped "+changed)
	s, d := shape(t, byScript), shape(t, byDedupe)
	if diff := diffSnapshots(s, d); diff != "" || len(s) != 12 {
		t.Errorf("the script and dedupe differ: %s", diff)
	}
	if strings.Count(s["keep"], "|") != 8 {
		t.Errorf("keep's names: %s", s["keep"])
	}

	// Run again, the script finds nothing to do but the changed file.
	cmd = exec.Command("sh", script)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "skipped") != 9 {
		t.Errorf("second run: %v:\n%s", err, out)
	}
}

// TestDupesScriptDelete: with --delete, the script removes the copies of
// the newest file, and --keep without --script is refused.
func TestDupesScriptDelete(t *testing.T) {
	dir := t.TempDir()
	a := put(t, dir, "a", "same\n", 1)
	b := put(t, dir, "b", "same\n", 2)
	sock := startFake(t, &fakeDaemon{dupes: []index.DupeSet{indexed(t, "same\n", a, b)}})
	r := sifctl(t, "--socket", sock, "dupes", "--script", "-", "--delete", "--keep", "newest")
	if r.code != exitFound || !strings.Contains(r.stdout, "remove '"+a+"'\n") || !strings.HasPrefix(r.stdout, "#!/bin/sh\n") {
		t.Fatalf("dupes --script to stdout: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	cmd := exec.Command("sh")
	cmd.Stdin = strings.NewReader(r.stdout)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("sh: %v: %s", err, out)
	}
	if _, err := os.Lstat(a); !os.IsNotExist(err) {
		t.Errorf("%s not removed: %v", a, err)
	}
	if _, err := os.Lstat(b); err != nil {
		t.Errorf("kept %s: %v", b, err)
	}
	r = sifctl(t, "--socket", sock, "dupes", "--keep", "newest")
	r.want(t, "--keep without --script", exitError, "", "--keep and --delete go with --script")
}
