package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/peer"
)

// dirsBackend is a fakeBackend that also answers directory totals from a
// list of files, as the index does, recording the options it was given.
type dirsBackend struct {
	fakeBackend
	files map[string]int64
	last  index.DirTotalsOptions
}

func (d *dirsBackend) DirTotals(_ context.Context, dirs []string, o *index.DirTotalsOptions) ([]index.DirTotal, error) {
	d.last = *o
	out := make([]index.DirTotal, len(dirs))
	for i, dir := range dirs {
		out[i].Path = dir
		for p, size := range d.files {
			if !strings.HasPrefix(p, dir+"/") || o.Visible != nil && !o.Visible(&index.FileMeta{Path: p}) {
				continue
			}
			if int(out[i].Files) == o.MaxFiles {
				out[i].Truncated = true
				break
			}
			out[i].Files++
			out[i].Bytes += size
		}
	}
	return out, nil
}

func TestDirTotalsRoute(t *testing.T) {
	b := &dirsBackend{files: map[string]int64{"/srv/a/x": 10, "/srv/a/y/z": 20, "/srv/b/w": 5}}
	c := serve(t, b)
	ans, err := c.DirTotals(t.Context(), []string{"/srv/a", "/srv/b/", "/none"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []ipc.DirTotal{
		{FilePath: ipc.NewFilePath("/srv/a"), Files: 2, Bytes: 30},
		{FilePath: ipc.NewFilePath("/srv/b/"), Files: 1, Bytes: 5}, // as asked, cleaned for the index
		{FilePath: ipc.NewFilePath("/none")},
	}
	if fmt.Sprint(ans.Dirs) != fmt.Sprint(want) {
		t.Errorf("totals %+v, want %+v", ans.Dirs, want)
	}
	if b.last.MaxFiles != ipc.DefaultDirMaxFiles || b.last.Visible != nil {
		t.Errorf("options for the owner: max files %d, visible set %v", b.last.MaxFiles, b.last.Visible != nil)
	}
	if _, err := c.DirTotals(t.Context(), []string{"/srv/a"}, 1); err != nil {
		t.Fatal(err)
	}
	if b.last.MaxFiles != 1 {
		t.Errorf("max_files 1 reached the index as %d", b.last.MaxFiles)
	}
	if _, err := c.DirTotals(t.Context(), []string{"/srv/a"}, 1<<30); err != nil || b.last.MaxFiles != ipc.MaxDirMaxFiles {
		t.Errorf("max_files 2^30: %v, reached the index as %d, want %d", err, b.last.MaxFiles, ipc.MaxDirMaxFiles)
	}

	// More directories than one request takes: the client splits them.
	many := make([]string, ipc.MaxDirTotals+3)
	for i := range many {
		many[i] = fmt.Sprintf("/srv/%c", 'a'+i%2)
	}
	ans, err = c.DirTotals(t.Context(), many, 0)
	if err != nil || len(ans.Dirs) != len(many) || ans.Dirs[len(many)-1].Path != many[len(many)-1] || ans.Dirs[len(many)-1].Files != 1+int64(len(many)%2) {
		t.Errorf("%d directories: %v, %d answers", len(many), err, len(ans.Dirs))
	}

	// Bad requests name the field.
	for _, tc := range []struct {
		body, code, msg string
	}{
		{`{"dirs": [{"path": "rel/dir"}]}`, "400", `dirs[0].path \"rel/dir\": must be absolute`},
		{`{"dirs": [{"path": "/a"}, {"path": ""}]}`, "400", `dirs[1].path: empty`},
		{`{"dirs": [{"path": "/a"}], "max_files": -1}`, "400", `max_files -1`},
		{`{"dirs": [` + strings.Repeat(`{"path": "/a"},`, ipc.MaxDirTotals) + `{"path": "/a"}]}`, "413", "more than the 1024"},
		{`{"paths": ["/a"]}`, "400", `unknown field \"paths\"`},
	} {
		rec := sendAs(t, b, Access{Owner: 500}, peer.Cred{UID: 500}, nil, "POST", "/v1/dirs/totals", tc.body)
		if fmt.Sprint(rec.Code) != tc.code || !strings.Contains(rec.Body.String(), tc.msg) {
			t.Errorf("%.60s: %d %s, want %s with %q", tc.body, rec.Code, rec.Body, tc.code, tc.msg)
		}
	}

	// Another user sees only what it may read: the fake's files do not
	// exist on disk, so nothing.
	rec := sendAs(t, b, Access{Owner: 500}, peer.Cred{UID: 1002, GID: 1002}, nil, "POST", "/v1/dirs/totals", `{"dirs": [{"path": "/srv/a"}]}`)
	var got ipc.DirTotalsResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 || len(got.Dirs) != 1 || got.Dirs[0].Files != 0 || b.last.Visible == nil {
		t.Errorf("another user: %d %s (visible set: %v)", rec.Code, rec.Body, b.last.Visible != nil)
	}

	// A backend without directory totals says so.
	rec = sendAs(t, &fakeBackend{}, Access{Owner: 500}, peer.Cred{UID: 500}, nil, "POST", "/v1/dirs/totals", `{"dirs": [{"path": "/srv/a"}]}`)
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "not supported") {
		t.Errorf("backend without totals: %d %s", rec.Code, rec.Body)
	}
}
