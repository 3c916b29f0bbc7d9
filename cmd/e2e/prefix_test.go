//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// With --json, each query has one line in its place, a failed one an
// error with its code; the exit status is then 2. A --prefix under no root
// is said to be so, naming the prefix and the root, with exit status 2.
func TestQueryErrorsInPlace(t *testing.T) {
	e := newEnv(t)
	text := words(21, 20000)
	good := e.write("a.txt", text)
	e.write("dir/b.txt", edit(22, text, 0.05))
	e.start()
	missing := filepath.Join(e.root, "missing.txt")
	dir := filepath.Join(e.root, "dir")

	lines := func(r result) (queries, codes []string) {
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var v struct {
				Query string     `json:"query"`
				Error *ipc.Error `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			code := ""
			if v.Error != nil {
				code = string(v.Error.Code)
			}
			queries, codes = append(queries, v.Query), append(codes, code)
		}
		return queries, codes
	}
	for _, c := range []struct {
		cmd   string
		codes string
	}{
		{"similar", "[ not_found ]"},          // a directory is a query of similar
		{"basis", "[ not_found not_regular]"}, // but not of basis
	} {
		r := e.sifctl(c.cmd, "--json", good, missing, dir)
		queries, codes := lines(r)
		if r.code != 2 || fmt.Sprint(codes) != c.codes || fmt.Sprint(queries) != fmt.Sprint([]string{good, missing, dir}) {
			t.Errorf("%s --json GOOD MISSING DIR: exit %d, queries %q, codes %q; want 2, in order, codes %s\n%s%s",
				c.cmd, r.code, queries, codes, c.codes, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, missing+": no such file or directory") {
			t.Errorf("%s: stderr %q does not name %s", c.cmd, r.stderr, missing)
		}
	}

	for _, args := range [][]string{{"similar", good}, {"groups"}, {"dupes"}} {
		r := e.sifctl(append([]string{args[0], "--prefix", "/nonexistent"}, args[1:]...)...)
		want := "/nonexistent is under no root of this daemon (roots: " + e.root + ")"
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s --prefix /nonexistent: exit %d, stderr %q; want 2 and %q", args[0], r.code, r.stderr, want)
		}
	}
	if r := e.sifctl("similar", "--prefix", "/", good); r.code == 2 {
		t.Errorf("similar --prefix /: exit 2, %s", r.stderr)
	}
}
