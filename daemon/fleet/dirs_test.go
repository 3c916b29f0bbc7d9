package fleet

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
	"github.com/sif-dev/sif/index"
)

// DirTotals counts each host's own files under a directory, by whole
// path components, stopped at the cap; Hosts lists the hosts with their
// published roots.
func TestDirTotals(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	a := newTestHost(t, pool, "alpha", "/a")
	b := newTestHost(t, pool, "beta", "/a", "/b")
	put := func(h *testHost, path string, size int64) {
		t.Helper()
		if _, err := h.ix.Put(index.FileMeta{Path: path, Size: size, MtimeNs: 1}, content(path)); err != nil {
			t.Fatal(err)
		}
	}
	put(a, "/a/proj/x", 100)
	put(a, "/a/proj/sub/y", 200)
	put(a, "/a/proj/sub/deeper/z", 300)
	put(a, "/a/projx/w", 1000)    // not under /a/proj
	put(a, "/a/proj.old/v", 2000) // nor this ('.' sorts before '/')
	put(a, "/a/bad-\xff/u", 50)   // not UTF-8
	put(b, "/a/proj/x", 7)        // the same path on another host
	put(b, "/b/other", 9)
	a.drain(t)
	b.drain(t)

	ctx := context.Background()
	dirs := []HostDir{
		{"alpha", "/a/proj"}, {"alpha", "/a/proj/"}, {"alpha", "/a/proj/sub"}, {"beta", "/a/proj"},
		{"alpha", "/a/bad-\xff"}, {"alpha", "/"}, {"beta", "/"}, {"alpha", "/a/pro"}, {"gamma", "/a"},
		{"alpha", "/a/proj/x"}, // a file is not a directory
	}
	got, err := DirTotals(ctx, pool, dirs, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []DirTotal{
		{3, 600, false}, {3, 600, false}, {2, 500, false}, {1, 7, false},
		{1, 50, false}, {6, 3650, false}, {2, 16, false}, {0, 0, false}, {0, 0, false},
		{0, 0, false},
	}
	if !slices.Equal(got, want) {
		t.Errorf("DirTotals:\n got %v\nwant %v", got, want)
	}

	// The cap: two of alpha's three files under /a/proj, and a count
	// under it whole.
	got, err = DirTotals(ctx, pool, []HostDir{{"alpha", "/a/proj"}, {"alpha", "/a/proj/sub"}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Files != 2 || !got[0].Truncated || got[0].Bytes < 300 || got[1] != (DirTotal{2, 500, false}) {
		t.Errorf("DirTotals capped at 2: %v; want 2 files truncated, then 2 files whole", got)
	}
	if _, err := DirTotals(ctx, pool, dirs, 0); err == nil {
		t.Error("DirTotals with a cap of 0 files: no error")
	}
	if got, err := DirTotals(ctx, pool, nil, 10); err != nil || len(got) != 0 {
		t.Errorf("DirTotals of no directory: %v %v", got, err)
	}

	hosts, err := Hosts(ctx, pool, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hosts {
		names = append(names, fmt.Sprintf("%s %v", h.Name, h.Roots))
	}
	if w := []string{"alpha [/a]", "beta [/a /b]"}; !slices.Equal(names, w) {
		t.Errorf("Hosts: %v, want %v", names, w)
	}
	srv.Exec("postgres", `UPDATE sif_hosts SET last_seen = now() - interval '1 hour' WHERE name = 'beta'`)
	if hosts, err = Hosts(ctx, pool, time.Minute); err != nil || len(hosts) != 1 || hosts[0].Name != "alpha" {
		t.Errorf("Hosts with beta silent for an hour: %+v %v, want alpha only", hosts, err)
	}
}

func TestTreeRange(t *testing.T) {
	for _, c := range []struct{ dir, lo, hi string }{
		{"/a/b", "/a/b/", "/a/b0"},
		{"/a/b/", "/a/b/", "/a/b0"},
		{"/", "/", "0"},
		{`C:\x\y`, `C:\x\y\`, `C:\x\y]`},
	} {
		lo, hi := treeRange(c.dir)
		if string(lo) != c.lo || string(hi) != c.hi {
			t.Errorf("treeRange(%q) = %q, %q; want %q, %q", c.dir, lo, hi, c.lo, c.hi)
		}
	}
}
