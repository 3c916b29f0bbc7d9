package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sif-dev/sif/ipc"
)

func TestRootsCommands(t *testing.T) {
	f := &fakeDaemon{}
	sock := startFake(t, f)
	dir := t.TempDir()
	t.Chdir(dir)

	sifctl(t, "--socket", sock, "roots").want(t, "no roots", exitNothing, "No roots.", "")
	sifctl(t, "--socket", sock, "roots", "--json").want(t, "no roots, JSON", exitNothing, `{"roots":[]}`, "")

	// A relative DIR is made absolute here, not in the daemon.
	r := sifctl(t, "--socket", sock, "roots", "add", "photos")
	r.want(t, "roots add", exitFound, filepath.Join(dir, "photos"), "")
	for _, col := range []string{"PATH", "STATE", "WATCHED", "FILES", "SOURCE", "REASON", "watching", "added"} {
		if !strings.Contains(r.stdout, col) {
			t.Errorf("roots add: table without %q:\n%s", col, r.stdout)
		}
	}
	// A name that is not UTF-8 reaches the daemon byte for byte.
	odd := "caf\xe9"
	sifctl(t, "--socket", sock, "roots", "add", odd).want(t, "roots add (Latin-1 name)", exitFound, "", "")
	f.mu.Lock()
	if want := []string{filepath.Join(dir, "photos"), filepath.Join(dir, odd)}; !slices.Equal(f.roots, want) {
		t.Errorf("daemon roots %q, want %q", f.roots, want)
	}
	f.mu.Unlock()

	r = sifctl(t, "--socket", sock, "roots", "list", "--json")
	var resp ipc.RootsResponse
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil || len(resp.Roots) != 2 {
		t.Errorf("roots list --json: %v: %q", err, r.stdout)
	}

	sifctl(t, "--socket", sock, "roots", "remove", "photos").want(t, "roots remove", exitFound, "caf", "")
	sifctl(t, "--socket", sock, "roots", "remove", "photos").want(t, "roots remove twice", exitError, "",
		filepath.Join(dir, "photos")+" is not a root")
}

func TestPrintRoots(t *testing.T) {
	var out bytes.Buffer
	printRoots(&out, []ipc.RootStatus{
		{Path: "/a", State: ipc.RootWatching, Watched: 10, FilesSeen: 99, Source: "config"},
		{Path: "/long/root/path", State: ipc.RootFailed, LastError: "permission denied"},
		{Path: "/p", State: ipc.RootDegraded, Reason: "out of inotify watches", Watched: 5, Unwatched: 2, Source: "added"},
	})
	want := `PATH             STATE     WATCHED    FILES  SOURCE  REASON
/a               watching  10         99     config  
/long/root/path  failed    0          0      -       permission denied
/p               degraded  5 (2 not)  0      added   out of inotify watches
`
	if out.String() != want {
		t.Errorf("roots table:\n%s\nwant:\n%s", out.String(), want)
	}
}
