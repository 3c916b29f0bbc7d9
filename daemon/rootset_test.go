package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/watcher"
)

// addRoot is the one way a root joins the set: at start, by sifctl roots
// add and by a reload. It keeps the set sorted and free of nesting, polls
// roots when nothing is watched, and refuses a filesystem without events
// when the configuration says so, leaving the set as it was.
func TestAddRoot(t *testing.T) {
	base := t.TempDir()
	a, b, c := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")
	for _, p := range []string{a, b, c} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d := &Daemon{log: slog.New(slog.NewTextHandler(io.Discard, nil)), cfg: Config{NetworkFS: config.NetworkFSRefuse}}
	ctx := context.Background()
	for _, p := range []string{c, a} {
		r, err := d.addRoot(ctx, p, sourceConfig)
		if err != nil {
			t.Fatalf("addRoot %s: %v", p, err)
		}
		if !r.polled {
			t.Errorf("root %s not polled though the daemon watches nothing", p)
		}
	}
	var overlap *rootOverlapError
	for _, tc := range []struct {
		path, other string
		holds       bool
	}{
		{a, a, false},
		{filepath.Join(c, "sub"), c, false},
		{base, a, true},
	} {
		_, err := d.addRoot(ctx, tc.path, sourceAdded)
		if !errors.As(err, &overlap) || overlap.other != tc.other || overlap.holds != tc.holds {
			t.Errorf("addRoot %s: %v, want an overlap with %s (holds %v)", tc.path, err, tc.other, tc.holds)
		}
	}
	fakeFS(t, watcher.NetworkFS, "nfs4")
	if _, err := d.addRoot(ctx, filepath.Join(base, "n"), sourceAdded); err == nil {
		t.Error("a root without events was added though network_fs refuses them")
	}
	fakeFS(t, watcher.LocalFS, "ext4")
	if _, err := d.addRoot(ctx, b, sourceAdded); err != nil {
		t.Fatal(err)
	}
	if got, want := d.rootPaths(), []string{a, b, c}; !slices.Equal(got, want) {
		t.Errorf("roots %q, want %q in order", got, want)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
