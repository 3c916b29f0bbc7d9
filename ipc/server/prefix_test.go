package server

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/peer"
)

// prefixBackend records the prefixes and directories that reach the
// index.
type prefixBackend struct {
	fakeBackend
	dupes string
	dirs  []string
}

func (p *prefixBackend) Dupes(_ context.Context, prefix string) ([]index.DupeSet, error) {
	p.dupes = prefix
	return nil, nil
}

func (p *prefixBackend) DirTotals(_ context.Context, dirs []string, _ *index.DirTotalsOptions) ([]index.DirTotal, error) {
	p.dirs = dirs
	return make([]index.DirTotal, len(dirs)), nil
}

// Every prefix a request names goes through one check: a relative one is
// answered 400 bad_request naming its field; an absolute one reaches the
// index cleaned.
func TestPrefixesAreAbsoluteAndClean(t *testing.T) {
	b := &prefixBackend{fakeBackend: fakeBackend{params: fingerprint.DefaultParams(), result: &index.Result{}}}
	query := func(prefix string) string {
		js, _ := json.Marshal(prefix)
		return `{"params":{"scheme":"manber"},"strong":"` + strings.Repeat("0", 64) +
			`","features":[{"hash":"00000000000000ff","count":2}],"path_prefix":` + string(js) + `}`
	}
	routes := []struct {
		name, method, path, field string
		body                      func(prefix string) string
		got                       func() string
	}{
		{"groups", "GET", "/v1/groups?prefix=", "prefix", nil, func() string { return b.groupsO.PathPrefix }},
		{"dupes", "GET", "/v1/dupes?prefix=", "prefix", nil, func() string { return b.dupes }},
		{"similar", "POST", "/v1/similar", "path_prefix", query, func() string { return b.lastO.PathPrefix }},
		{"basis", "POST", "/v1/basis", "path_prefix", query, func() string { return b.lastO.PathPrefix }},
		{"dirs/totals", "POST", "/v1/dirs/totals", "dirs[0].path", func(p string) string {
			js, _ := json.Marshal(p)
			return `{"dirs":[{"path":` + string(js) + `}]}`
		}, func() string { return b.dirs[0] }},
	}
	do := func(r int, prefix string) (int, string) {
		rt := routes[r]
		path, body := rt.path, ""
		if rt.body == nil {
			path += url.QueryEscape(prefix)
		} else {
			body = rt.body(prefix)
		}
		rec := sendAs(t, b, Access{Owner: 500}, peer.Cred{UID: 500}, nil, rt.method, path, body)
		return rec.Code, rec.Body.String()
	}
	for i, rt := range routes {
		for _, rel := range []string{"srv/a", "./srv", "..", "a/../b"} {
			code, body := do(i, rel)
			var eb errorBody
			json.Unmarshal([]byte(body), &eb)
			want := rt.field + ` "` + rel + `": must be absolute`
			if code != 400 || eb.Error == nil || eb.Error.Code != ipc.CodeBadRequest || eb.Error.Message != want {
				t.Errorf("%s with %q: %d %s, want 400 bad_request %q", rt.name, rel, code, body, want)
			}
		}
		for _, c := range []struct{ in, want string }{
			{"/srv/a/../a/sort", "/srv/a/sort"},
			{"/srv//a/./b/", "/srv/a/b"},
			{"/srv/a", "/srv/a"},
			{"/", "/"},
			{"/..", "/"},
		} {
			if code, body := do(i, c.in); code != 200 {
				t.Errorf("%s with %q: %d %s", rt.name, c.in, code, body)
				continue
			}
			if got := rt.got(); got != c.want {
				t.Errorf("%s with %q: the index was asked for %q, want %q", rt.name, c.in, got, c.want)
			}
		}
	}
	// No prefix stays none.
	for i, rt := range routes[:4] {
		if code, body := do(i, ""); code != 200 || rt.got() != "" {
			t.Errorf("%s without a prefix: %d %s, index asked for %q", rt.name, code, body, rt.got())
		}
	}
}

// A prefix under no root, nor above one, is answered 400 bad_prefix naming
// it and the roots, on every route that takes one; one under a root or
// above one (up to /) reaches the index. similar with the fleet passes it
// on: the prefix may be another host's tree.
func TestPrefixUnderNoRoot(t *testing.T) {
	c := newFakeController()
	c.roots = []string{"/srv/a", "/home/b"}
	query := func(prefix, extra string) string {
		js, _ := json.Marshal(prefix)
		return `{"params":{"scheme":"manber"},"strong":"` + strings.Repeat("0", 64) +
			`","features":[{"hash":"00000000000000ff","count":2}],"path_prefix":` + string(js) + extra + `}`
	}
	routes := []struct {
		name, method, path string
		body               func(prefix string) string
	}{
		{"groups", "GET", "/v1/groups?prefix=", nil},
		{"groups by simihash", "GET", "/v1/groups?by=simihash&prefix=", nil},
		{"dupes", "GET", "/v1/dupes?prefix=", nil},
		{"similar", "POST", "/v1/similar", func(p string) string { return query(p, "") }},
		{"similar by simihash", "POST", "/v1/similar", func(p string) string {
			return query(p, `,"by":"simihash","simihash":{"sum":[0],"key":0}`)
		}},
		{"basis", "POST", "/v1/basis", func(p string) string { return query(p, "") }},
	}
	do := func(rt int, cred peer.Cred, prefix string) (int, *ipc.Error) {
		t.Helper()
		r := routes[rt]
		path, body := r.path, ""
		if r.body == nil {
			path += url.QueryEscape(prefix)
		} else {
			body = r.body(prefix)
		}
		rec := sendAs(t, c, Access{Owner: 500}, cred, nil, r.method, path, body)
		var eb errorBody
		json.Unmarshal(rec.Body.Bytes(), &eb)
		return rec.Code, eb.Error
	}
	owner := peer.Cred{UID: 500}
	for i, rt := range routes {
		for _, p := range []string{"/nonexistent", "/srv/ab", "/home/bb/x"} {
			code, e := do(i, owner, p)
			want := p + " is under no root of this daemon (roots: /srv/a, /home/b)"
			if code != 400 || e == nil || e.Code != ipc.CodeBadPrefix || e.Message != want {
				t.Errorf("%s with %s: %d %+v, want 400 bad_prefix %q", rt.name, p, code, e, want)
			}
		}
		for _, p := range []string{"/srv/a", "/srv/a/x/y", "/srv", "/home", "/"} {
			if code, e := do(i, owner, p); e != nil && e.Code == ipc.CodeBadPrefix {
				t.Errorf("%s with %s: %d %+v, want it taken", rt.name, p, code, e)
			}
		}
	}
	// A caller who may not list the roots is not told them.
	other := peer.Cred{UID: 12345, GID: 12345}
	if code, e := do(0, other, "/nonexistent"); code != 400 || e == nil ||
		e.Message != "/nonexistent is under no root of this daemon (none of its roots is one you may list)" {
		t.Errorf("another user: %d %+v", code, e)
	}
	// With the fleet, the prefix may be another host's.
	rec := sendAs(t, c, Access{Owner: 500}, owner, nil, "POST", "/v1/similar", query("/nonexistent", `,"fleet":true`))
	if strings.Contains(rec.Body.String(), string(ipc.CodeBadPrefix)) {
		t.Errorf("similar --fleet under no local root: %d %s", rec.Code, rec.Body.String())
	}
	// A daemon without roots says so.
	c.roots = nil
	if code, e := do(0, owner, "/srv"); code != 400 || e == nil || !strings.Contains(e.Message, "it has none") {
		t.Errorf("no root: %d %+v", code, e)
	}
}
