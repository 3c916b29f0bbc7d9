package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
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

// fleetDirs is a fake fleet: this host is alpha, and the fleet's totals
// of other hosts' directories are 7 files of 70 bytes per directory, or
// fail with err. Its requests are answered by sendFleet, with a
// dirsBackend's index.
type fleetDirs struct {
	err      error
	asked    []ipc.HostDir
	maxFiles int
}

// sendFleet is sendAs to a server with the index b and the fleet f (nil:
// none).
func sendFleet(t *testing.T, b *dirsBackend, f *fleetDirs, cred peer.Cred, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	be := Backend{Query: b}
	if f != nil {
		be.Fleet = f
	}
	s := New(be, Options{Version: "test", Access: &Access{Owner: 500}})
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req = req.WithContext(context.WithValue(req.Context(), callerKey{}, s.judge(cred, nil)))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func (f *fleetDirs) Check(context.Context) (*ipc.FleetCheck, error) { return nil, f.err }
func (f *fleetDirs) Forget(context.Context, string) (*ipc.FleetForgetResponse, error) {
	return nil, f.err
}
func (f *fleetDirs) Host() string { return "alpha" }
func (f *fleetDirs) Similar(context.Context, index.Query, index.QueryOptions) ([]ipc.Match, error) {
	return nil, f.err
}
func (f *fleetDirs) SimiFind(context.Context, index.SimiQuery) ([]ipc.Match, error) {
	return nil, f.err
}
func (f *fleetDirs) Dupes(context.Context, string) ([]ipc.DupeSet, error) { return nil, f.err }
func (f *fleetDirs) Hosts(context.Context) ([]ipc.FleetHost, error) {
	if f.err != nil {
		return nil, f.err
	}
	return []ipc.FleetHost{{Host: "beta", Roots: []ipc.FilePath{ipc.NewFilePath("/data")}}}, nil
}
func (f *fleetDirs) DirTotals(_ context.Context, dirs []ipc.HostDir, maxFiles int) ([]ipc.DirTotal, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.asked, f.maxFiles = append(f.asked, dirs...), maxFiles
	out := make([]ipc.DirTotal, len(dirs))
	for i, d := range dirs {
		out[i] = ipc.DirTotal{Host: d.Host, FilePath: d.FilePath, Files: 7, Bytes: 70}
	}
	return out, nil
}

// TestDirTotalsFleet: a directory with a host other than this one is
// counted by the fleet, all in one call, for those who may ask it; this
// host's name, or none, is this host's index.
func TestDirTotalsFleet(t *testing.T) {
	b := &dirsBackend{files: map[string]int64{"/srv/a/x": 10, "/srv/a/y/z": 20, "/srv/b/w": 5}}
	f := &fleetDirs{}
	owner := peer.Cred{UID: 500}
	body := `{"dirs": [{"path": "/srv/a"}, {"host": "beta", "path": "/srv/a"}, {"host": "alpha", "path": "/srv/b"}, {"host": "gamma", "path": "/"}], "max_files": 9}`
	rec := sendFleet(t, b, f, owner, "POST", "/v1/dirs/totals", body)
	var got ipc.DirTotalsResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
		t.Fatalf("fleet totals: %d %s", rec.Code, rec.Body)
	}
	want := []ipc.DirTotal{
		{FilePath: ipc.NewFilePath("/srv/a"), Files: 2, Bytes: 30},
		{Host: "beta", FilePath: ipc.NewFilePath("/srv/a"), Files: 7, Bytes: 70},
		{Host: "alpha", FilePath: ipc.NewFilePath("/srv/b"), Files: 1, Bytes: 5},
		{Host: "gamma", FilePath: ipc.NewFilePath("/"), Files: 7, Bytes: 70},
	}
	if fmt.Sprint(got.Dirs) != fmt.Sprint(want) {
		t.Errorf("totals %+v, want %+v", got.Dirs, want)
	}
	if fmt.Sprint(f.asked) != "[{beta {/srv/a }} {gamma {/ }}]" || f.maxFiles != 9 {
		t.Errorf("the fleet was asked %v with max files %d; want beta's /srv/a and gamma's / with 9", f.asked, f.maxFiles)
	}

	// Only those who may ask the fleet; a daemon without one says so.
	rec = sendFleet(t, b, f, peer.Cred{UID: 1002, GID: 1002}, "POST", "/v1/dirs/totals", body)
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), "asking the fleet is for root") {
		t.Errorf("another user asking for other hosts' totals: %d %s", rec.Code, rec.Body)
	}
	rec = sendFleet(t, b, nil, owner, "POST", "/v1/dirs/totals", body)
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "no_fleet") {
		t.Errorf("a host's totals without a fleet: %d %s", rec.Code, rec.Body)
	}
	// The database down: 503, and this host's directories still answer
	// without a host.
	f.err = fmt.Errorf("the database did not answer within 2s")
	rec = sendFleet(t, b, f, owner, "POST", "/v1/dirs/totals", body)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"fleet_unavailable"`) {
		t.Errorf("fleet totals with the database down: %d %s", rec.Code, rec.Body)
	}
	rec = sendFleet(t, b, f, owner, "POST", "/v1/dirs/totals", `{"dirs": [{"path": "/srv/a"}, {"host": "alpha", "path": "/srv/b"}]}`)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"files":1`) {
		t.Errorf("this host's totals with the database down: %d %s", rec.Code, rec.Body)
	}
}

// TestFleetHostsRoute: this host's name and the fleet's hosts; the
// database down leaves the name and the error.
func TestFleetHostsRoute(t *testing.T) {
	b, f := &dirsBackend{}, &fleetDirs{}
	rec := sendFleet(t, b, f, peer.Cred{UID: 500}, "GET", "/v1/fleet/hosts", "")
	var got ipc.FleetHostsResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 || got.Host != "alpha" ||
		len(got.Hosts) != 1 || got.Hosts[0].Host != "beta" || got.Hosts[0].Roots[0].Path != "/data" || got.FleetError != nil {
		t.Errorf("fleet hosts: %d %s", rec.Code, rec.Body)
	}
	f.err = fmt.Errorf("connection refused")
	rec = sendFleet(t, b, f, peer.Cred{UID: 500}, "GET", "/v1/fleet/hosts", "")
	got = ipc.FleetHostsResponse{}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 || got.Host != "alpha" ||
		got.Hosts == nil || len(got.Hosts) != 0 || got.FleetError == nil || got.FleetError.Code != ipc.CodeFleetDown {
		t.Errorf("fleet hosts with the database down: %d %s", rec.Code, rec.Body)
	}
	rec = sendFleet(t, b, f, peer.Cred{UID: 1002, GID: 1002}, "GET", "/v1/fleet/hosts", "")
	if rec.Code != 403 {
		t.Errorf("fleet hosts for another user: %d %s", rec.Code, rec.Body)
	}
	rec = sendFleet(t, &dirsBackend{}, nil, peer.Cred{UID: 500}, "GET", "/v1/fleet/hosts", "")
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "no_fleet") {
		t.Errorf("fleet hosts without a fleet: %d %s", rec.Code, rec.Body)
	}
}
