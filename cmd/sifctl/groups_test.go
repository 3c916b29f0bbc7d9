package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc/server"
)

// linklessDaemon answers groups as a daemon that does not list links.
type linklessDaemon struct{ fakeDaemon }

func (f *linklessDaemon) EachGroup(_ context.Context, _ index.GroupOptions, fn func(index.Group) error) error {
	ref, m := index.GroupMember{Percent: 1}, index.GroupMember{Percent: 0.8}
	ref.Path, m.Path = "/srv/a/x.c", "/srv/b/x.c"
	return fn(index.Group{Reference: ref, Members: []index.GroupMember{m}})
}

// TestGroupsDirsAnswers: no groups is exit 1, said so, or an empty list
// with --json; a daemon whose groups have no links is an error, not an
// answer made of the identical files alone.
func TestGroupsDirsAnswers(t *testing.T) {
	sock := startFake(t, &fakeDaemon{})
	sifctl(t, "--socket", sock, "groups", "--dirs").want(t, "no groups", exitNothing,
		"No groups of similar directories. Minimum similarity = 50%\n", "")
	r := sifctl(t, "--socket", sock, "groups", "--dirs", "--json", "--threshold", "70")
	var out dirGroupsLine
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != exitNothing || out.Groups == nil ||
		len(out.Groups) != 0 || out.Threshold != 70 || !out.Dirs {
		t.Errorf("no groups, JSON: exit %d, %q, %v", r.code, r.stdout, err)
	}

	f := &linklessDaemon{}
	sock = filepath.Join(t.TempDir(), "old.sock")
	ln, err := server.Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- server.New(server.Backend{Query: f, Control: &f.fakeDaemon}, server.Options{Version: "test"}).Serve(ctx, ln)
	}()
	defer func() { cancel(); <-done }()
	sifctl(t, "--socket", sock, "groups", "--dirs").want(t, "groups without links", exitError, "", "the daemon's groups have no links")
}
