package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestInstallNeedsRoot(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"install", "--user"}, &out, &errb); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if !strings.Contains(errb.String(), "--root") {
		t.Errorf("stderr %q does not ask for --root", errb.String())
	}
}

// TestServiceArgs: the saved command line has absolute roots, db and
// socket, and keeps the other flags given.
func TestServiceArgs(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("tree", 0o755); err != nil {
		t.Fatal(err)
	}
	var f runFlags
	fl := pflag.NewFlagSet("install", pflag.ContinueOnError)
	addRunFlags(fl, &f)
	fl.Bool("user", false, "")
	if err := fl.Parse([]string{"--user", "--root", "tree", "--db", "idx", "--workers", "2", "--log-format", "json"}); err != nil {
		t.Fatal(err)
	}
	args, db, sock, err := serviceArgs(fl, &f, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "--root", filepath.Join(dir, "tree"), "--log-format=json", "--workers=2", "--db", filepath.Join(dir, "idx"), "--socket", sock}
	if !slices.Equal(args, want) || db != filepath.Join(dir, "idx") || !filepath.IsAbs(sock) {
		t.Errorf("serviceArgs = %q, %s, %s; want %q", args, db, sock, want)
	}
	f.roots = []string{"missing"}
	if _, _, _, err := serviceArgs(fl, &f, true); err == nil {
		t.Error("a missing root was accepted")
	}
}
