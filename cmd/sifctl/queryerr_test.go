//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sif-dev/sif/ipc"
)

// jsonLines decodes each line of out as a query's answer or error: its
// query and error code ("" for an answer).
func jsonLines(t *testing.T, what, out string) (queries, codes []string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct {
			Query string      `json:"query"`
			Error *queryError `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%s: line %q: %v", what, l, err)
		}
		code := ""
		if v.Error != nil {
			code = v.Error.Code
			if v.Error.Message == "" {
				t.Errorf("%s: line %q has no message", what, l)
			}
		}
		queries, codes = append(queries, v.Query), append(codes, code)
	}
	return queries, codes
}

// TestQueryErrorLines: with --json, each query that fails, here or at the
// daemon, has an error line with its code in its place among the answers;
// the others are answered; the exit status is 2 and stderr names each.
func TestQueryErrorLines(t *testing.T) {
	sock := startFake(t, &fakeDaemon{maxFeatures: 40})
	dir := t.TempDir()
	good := randomFile(t, dir, "good.bin", 1, 10<<10)
	large := randomFile(t, dir, "large.bin", 3, 100<<10) // more fingerprints than the daemon takes
	missing := filepath.Join(dir, "missing")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	files := []string{good, missing, fifo, large, sub, good}
	for _, c := range []struct {
		args  []string
		codes []string
	}{
		{[]string{"similar"}, []string{"", "not_found", "not_regular", "too_large", "", ""}},
		{[]string{"similar", "--fast"}, []string{"", "not_found", "not_regular", "too_large", "", ""}},
		{[]string{"similar", "--explain"}, []string{"", "not_found", "not_regular", "too_large", "not_regular", ""}},
		// The fake index has no SimiHash keys: the files read are refused.
		{[]string{"similar", "--by", "simihash"}, []string{"no_simihash", "not_found", "not_regular", "too_large", "not_regular", "no_simihash"}},
		{[]string{"basis"}, []string{"", "not_found", "not_regular", "too_large", "not_regular", ""}},
	} {
		what := strings.Join(c.args, " ")
		args := append(append([]string{"--socket", sock}, c.args...), "--json")
		r := sifctl(t, append(args, files...)...)
		queries, codes := jsonLines(t, what, r.stdout)
		if r.code != exitError || fmt.Sprint(codes) != fmt.Sprint(c.codes) {
			t.Errorf("%s: exit %d, codes %q; want 2, %q\nstdout %s\nstderr %s", what, r.code, codes, c.codes, r.stdout, r.stderr)
			continue
		}
		for i, q := range queries {
			if q != files[i] {
				t.Errorf("%s: line %d is of %s, want %s", what, i+1, q, files[i])
			}
		}
		for _, w := range []string{missing + ": no such file or directory", fifo + ": is a fifo (named pipe), not a regular file"} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr %q lacks %q", what, r.stderr, w)
			}
		}
	}
}

// TestBadPrefix: a --prefix under no root of the daemon is said to be so,
// naming the roots, with exit status 2, and with --json is each query's
// error; one above a root is taken.
func TestBadPrefix(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	sock := startFake(t, &fakeDaemon{roots: []string{root, "/srv"}})
	good := randomFile(t, dir, "good.bin", 1, 10<<10)
	want := "/nonexistent is under no root of this daemon (roots: " + root + ", /srv)"
	for _, args := range [][]string{
		{"similar", good}, {"similar", "--fast", good}, {"basis", good}, {"groups"}, {"dupes"}, {"groups", "--dirs"},
	} {
		r := sifctl(t, append([]string{"--socket", sock, args[0], "--prefix", "/nonexistent"}, args[1:]...)...)
		r.want(t, strings.Join(args, " "), exitError, "", want)
		if strings.Contains(r.stderr, "(bad_prefix)") {
			t.Errorf("%s: stderr %q shows the code", strings.Join(args, " "), r.stderr)
		}
	}
	r := sifctl(t, "--socket", sock, "similar", "--json", "--prefix", "/nonexistent", good, good)
	if _, codes := jsonLines(t, "similar --json --prefix", r.stdout); r.code != exitError || fmt.Sprint(codes) != "[bad_prefix bad_prefix]" {
		t.Errorf("similar --json --prefix /nonexistent: exit %d, codes %q", r.code, codes)
	}
	if r := sifctl(t, "--socket", sock, "similar", "--prefix", dir, good); r.code == exitError {
		t.Errorf("similar --prefix above a root: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestLocalCode: the code of a query that could not be read says why.
func TestLocalCode(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		abs  string
		err  error
		want string
	}{
		{"", fmt.Errorf("x: %w", ipc.ErrChanged), codeChanged},
		{"", fmt.Errorf("x: %w", fs.ErrNotExist), codeNotFound},
		{"", fmt.Errorf("x: %w", fs.ErrPermission), codeUnreadable},
		{dir, fmt.Errorf("%s: is a directory", dir), codeNotRegular},
		{"", fmt.Errorf("x: larger than 1 MiB, %w", errTooLarge), codeTooLarge},
	} {
		if got := localCode(c.abs, c.err); got != c.want {
			t.Errorf("%v: %s, want %s", c.err, got, c.want)
		}
	}
}
