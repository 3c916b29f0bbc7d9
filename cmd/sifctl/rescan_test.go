package main

import (
	"slices"
	"testing"
)

func TestRescanCommand(t *testing.T) {
	f := &fakeDaemon{roots: []string{"/srv/a", "/srv/b"}}
	sock := startFake(t, f)
	sifctl(t, "--socket", sock, "rescan").want(t, "rescan", exitFound, "queued 2 directories\n  /srv/a\n  /srv/b\n", "")
	sifctl(t, "--socket", sock, "rescan", "/srv/a/x").want(t, "rescan DIR", exitFound, "queued 1 directory\n  /srv/a/x\n", "")
	sifctl(t, "--socket", sock, "--json", "rescan", "/srv/b").want(t, "rescan --json", exitFound, `{"queued":[{"path":"/srv/b"}]}`, "")
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.rescans, []string{"", "/srv/a/x", "/srv/b"}) {
		t.Errorf("rescans %q", f.rescans)
	}
}
