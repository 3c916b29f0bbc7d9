package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// buildIndex creates an index in a temporary directory holding a file at
// each path, with the given content, and returns the directory.
func buildIndex(t *testing.T, files map[string]string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "index")
	ix, err := index.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	ino := uint64(100)
	for path, content := range files {
		sk, err := fingerprint.SketchReader(strings.NewReader(content), ix.Params())
		if err != nil {
			t.Fatal(err)
		}
		ino++
		meta := index.FileMeta{Path: path, Size: int64(len(content)), MtimeNs: 1e18, Dev: 1, Ino: ino, Mode: 0o644}
		if _, err := ix.Put(meta, sk); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestDump: sifd dump prints the index's Dump of the prefix asked for, and
// fails clearly when the index is missing or in use.
func TestDump(t *testing.T) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog, again and again\n", 20)
	db := buildIndex(t, map[string]string{
		"/t/a":     text,
		"/t/b\xff": text + "and once more\n",
		"/u/c":     "something else entirely, " + text,
	})

	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"dump", "--db", db, "--prefix", "/t/"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `"/t/a" size=1220 `) || !strings.HasPrefix(lines[1], `"/t/b\xff" size=1234 `) {
		t.Fatalf("dump of /t/:\n%s", out.String())
	}
	for _, field := range []string{" dev=1 ", " mode=0644 ", " type=text ", " fwd="} {
		if !strings.Contains(lines[0], field) {
			t.Errorf("line %q lacks %q", lines[0], field)
		}
	}

	// Without --prefix, every file; the same bytes as the index's Dump.
	out.Reset()
	if code := run(context.Background(), []string{"dump", "--db", db}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	ix, err := index.Open(db, &index.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := ix.Dump("", &want); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() || strings.Count(out.String(), "\n") != 3 {
		t.Errorf("sifd dump:\n%s\nindex.Dump:\n%s", out.String(), want.String())
	}

	// An index in use is refused with advice.
	errb.Reset()
	if code := run(context.Background(), []string{"dump", "--db", db}, &out, &errb); code != exitError ||
		!strings.Contains(errb.String(), "dump a copy") {
		t.Errorf("dump of an index in use: exit %d, stderr %q", code, errb.String())
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	// A missing index is an error naming it.
	errb.Reset()
	missing := filepath.Join(t.TempDir(), "nope")
	if code := run(context.Background(), []string{"dump", "--db", missing}, &out, &errb); code != exitError ||
		!strings.Contains(errb.String(), missing) {
		t.Errorf("dump of a missing index: exit %d, stderr %q", code, errb.String())
	}
}
