//go:build unix

package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// Every prefix of the API is cleaned (ROOT/../ROOT/sort is ROOT/sort), and
// a relative one is refused naming its field, by dupes and groups as by
// dirs/totals; sifctl makes a relative --prefix absolute and clean.
func TestPrefixCleanedAndAbsolute(t *testing.T) {
	e := newEnv(t)
	text := words(11, 20000)
	e.write("sort/a.txt", text)
	e.write("sort/a-copy.txt", text)
	e.write("sort/b.txt", edit(12, text, 0.05))
	e.write("other/c.txt", text)
	e.start()
	c := ipc.NewClient(e.socket)
	ctx := context.Background()
	detour := e.root + "/../" + filepath.Base(e.root) + "//sort/"

	d, err := c.Dupes(ctx, detour)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Sets) != 1 || len(d.Sets[0].Files) != 2 {
		t.Errorf("dupes prefix %s: %+v, want the one set of sort/", detour, d.Sets)
	}
	for _, s := range d.Sets {
		for _, f := range s.Files {
			if !strings.HasPrefix(f.Path, filepath.Join(e.root, "sort")+"/") {
				t.Errorf("dupes prefix %s lists %s", detour, f.Path)
			}
		}
	}
	g, err := c.Groups(ctx, ipc.GroupsOptions{Prefix: detour})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Groups) != 1 {
		t.Errorf("groups prefix %s: %d groups, want 1", detour, len(g.Groups))
	}

	for _, call := range []struct {
		name  string
		field string
		do    func() error
	}{
		{"dupes", "prefix", func() error { _, err := c.Dupes(ctx, "sort"); return err }},
		{"groups", "prefix", func() error { _, err := c.Groups(ctx, ipc.GroupsOptions{Prefix: "sort"}); return err }},
		{"dirs/totals", "dirs[0].path", func() error { _, err := c.DirTotals(ctx, []string{"sort"}, 0); return err }},
	} {
		err := call.do()
		var ie *ipc.Error
		if !errors.As(err, &ie) || ie.Code != ipc.CodeBadRequest || ie.Message != call.field+` "sort": must be absolute` {
			t.Errorf("%s with a relative prefix: %v, want bad_request naming %s", call.name, err, call.field)
		}
	}

	// sifctl: relative to its working directory, cleaned.
	for _, args := range [][]string{
		{"dupes", "--json", "--prefix", "other/../sort/"},
		{"groups", "--json", "--prefix", "./sort/."},
	} {
		r, _ := runIn(t, e.root, nil, 30*time.Second, sifctlBin, append([]string{"--socket", e.socket}, args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, filepath.Join(e.root, "sort", "a.txt")) || strings.Contains(r.stdout, "other/c.txt") {
			t.Errorf("sifctl %v: exit %d: %s %s", args, r.code, r.stdout, r.stderr)
		}
	}
}
