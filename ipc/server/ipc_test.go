package server

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// fakeBackend records the last query and answers from fields.
type fakeBackend struct {
	params  fingerprint.Params
	lastQ   index.Query
	lastO   index.QueryOptions
	result  *index.Result
	err     error
	groupsO index.GroupOptions
}

func (f *fakeBackend) Params() fingerprint.Params { return f.params }
func (f *fakeBackend) Similar(_ context.Context, q index.Query, o index.QueryOptions) (*index.Result, error) {
	f.lastQ, f.lastO = q, o
	if f.err != nil {
		return nil, f.err
	}
	return f.result, nil
}
func (f *fakeBackend) EachGroup(_ context.Context, o index.GroupOptions, _ func(index.Group) error) error {
	f.groupsO = o
	return f.err
}
func (f *fakeBackend) Dupes(context.Context, string) ([]index.DupeSet, error) { return nil, f.err }
func (f *fakeBackend) Stats() (index.Stats, error)                            { return index.Stats{Files: 7}, nil }

// backendOf makes a Backend of a fake by its roles: the query role, and
// the control and content roles when the fake has them.
func backendOf(x any) Backend {
	b := Backend{Query: x.(index.Querier)}
	b.Control, _ = x.(Controller)
	b.Content, _ = x.(ContentOpener)
	return b
}

func serve(t *testing.T, b any) *ipc.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- New(backendOf(b), Options{Version: "test"}).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ipc.NewClient(sock)
}

func TestSimilarRoundTrip(t *testing.T) {
	p := fingerprint.DefaultParams()
	fb := &fakeBackend{params: p, result: &index.Result{
		QueryFeatures: 3,
		Matches: []index.Match{{
			FileRecord:  index.FileRecord{FileMeta: index.FileMeta{Path: "/r/a\xffb", Size: 10}},
			Containment: 0.5, ReverseContainment: 0.25, Resemblance: 0.2, SharedBytes: -1,
		}},
	}}
	c := serve(t, fb)
	sk := &fingerprint.Sketch{Params: p, Summary: fingerprint.Summary{Size: 99, Type: fingerprint.TypeText},
		Features: []fingerprint.Feature{{Hash: 1, Count: 2}, {Hash: 0xffffffffffffffff, Count: 1}}}
	req := ipc.NewSimilarRequest("/q/\xfe.txt", sk)
	thr := 40.0
	req.Threshold = &thr
	resp, err := c.Similar(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if fb.lastQ.Path != "/q/\xfe.txt" {
		t.Errorf("query path %q: non-UTF-8 bytes lost", fb.lastQ.Path)
	}
	if fb.lastO.Threshold != 0.4 {
		t.Errorf("threshold %v, want 0.4", fb.lastO.Threshold)
	}
	if got := fb.lastQ.Sketch.Features; len(got) != 2 || got[1].Hash != 0xffffffffffffffff || got[0].Count != 2 {
		t.Errorf("features %+v", got)
	}
	m := resp.Matches[0]
	exact, _ := ipc.JoinPath(m.Path, m.PathRaw)
	if exact != "/r/a\xffb" || m.Containment != 50 || m.SharedBytes != nil {
		t.Errorf("match %+v (exact path %q)", m, exact)
	}
}

func TestErrorsCarryCodes(t *testing.T) {
	p := fingerprint.DefaultParams()
	fb := &fakeBackend{params: p, result: &index.Result{}}
	c := serve(t, fb)
	ctx := context.Background()
	good := func() *ipc.SimilarRequest {
		return ipc.NewSimilarRequest("", &fingerprint.Sketch{Params: p, Features: []fingerprint.Feature{{Hash: 5, Count: 1}}})
	}
	cases := []struct {
		name string
		mod  func(*ipc.SimilarRequest)
		code ipc.Code
		msg  string
	}{
		{"other params", func(r *ipc.SimilarRequest) { r.Params = fingerprint.Params{Scheme: fingerprint.Chunks} }, ipc.CodeParamsMismatch, "chunks"},
		{"bad scheme", func(r *ipc.SimilarRequest) { r.Params.Scheme = "md5" }, ipc.CodeBadRequest, `scheme "md5"`},
		{"bad hash", func(r *ipc.SimilarRequest) { r.Features[0].Hash = "xyz" }, ipc.CodeBadRequest, "features[0].hash"},
		{"zero count", func(r *ipc.SimilarRequest) { r.Features[0].Count = 0 }, ipc.CodeBadRequest, "features[0].count"},
		{"unsorted", func(r *ipc.SimilarRequest) { r.Features = append(r.Features, r.Features[0]) }, ipc.CodeBadRequest, "sorted"},
		{"bad strong", func(r *ipc.SimilarRequest) { r.Strong = "00" }, ipc.CodeBadRequest, "strong"},
		{"threshold", func(r *ipc.SimilarRequest) { x := 101.0; r.Threshold = &x }, ipc.CodeBadRequest, "threshold"},
		{"limit", func(r *ipc.SimilarRequest) { r.Limit = -1 }, ipc.CodeBadRequest, "limit"},
		{"size ratio", func(r *ipc.SimilarRequest) { r.SizeRatio = 0.5 }, ipc.CodeBadRequest, "size_ratio"},
	}
	for _, tc := range cases {
		r := good()
		tc.mod(r)
		_, err := c.Similar(ctx, r)
		var e *ipc.Error
		if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %v, want code %s mentioning %q", tc.name, err, tc.code, tc.msg)
		}
	}
	fb.err = errors.New("disk on fire")
	_, err := c.Similar(ctx, good())
	var e *ipc.Error
	if !errors.As(err, &e) || e.Code != ipc.CodeInternal {
		t.Errorf("backend failure: %v", err)
	}
	fb.err = index.ErrClosed
	if _, err := c.Groups(ctx, ipc.GroupsOptions{}); !errors.As(err, &e) || e.Code != ipc.CodeUnavailable {
		t.Errorf("closed index: %v", err)
	}
	if code, e, body := send(t, fb, "GET", "/v2/nothing", ""); code != 404 || e == nil || e.Code != ipc.CodeNotFound {
		t.Errorf("unknown route: %d %s", code, body)
	}
}

func TestGroupsDefaults(t *testing.T) {
	fb := &fakeBackend{params: fingerprint.DefaultParams()}
	c := serve(t, fb)
	if _, err := c.Groups(context.Background(), ipc.GroupsOptions{}); err != nil {
		t.Fatal(err)
	}
	if fb.groupsO.Threshold != 0.25 || !fb.groupsO.SameType {
		t.Errorf("default group options %+v", fb.groupsO)
	}
	if _, err := c.Groups(context.Background(), ipc.GroupsOptions{Threshold: 60, AllTypes: true, MaxDF: 9}); err != nil {
		t.Fatal(err)
	}
	if fb.groupsO.Threshold != 0.6 || fb.groupsO.SameType || fb.groupsO.MaxDF != 9 || fb.groupsO.Links {
		t.Errorf("group options %+v", fb.groupsO)
	}
	if _, err := c.Groups(context.Background(), ipc.GroupsOptions{Links: true}); err != nil {
		t.Fatal(err)
	}
	if !fb.groupsO.Links {
		t.Errorf("links asked for, not passed on: %+v", fb.groupsO)
	}
}

func TestClientErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ipc.NewClient(filepath.Join(dir, "none")).Info(context.Background()); !errors.Is(err, ipc.ErrNoDaemon) {
		t.Errorf("missing socket: %v, want ErrNoDaemon", err)
	}
	// A socket nobody answers on any more.
	stale := filepath.Join(dir, "stale")
	ln, _ := net.Listen("unix", stale)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := ipc.NewClient(stale).Info(context.Background()); !errors.Is(err, ipc.ErrNoDaemon) {
		t.Errorf("stale socket: %v, want ErrNoDaemon", err)
	}
	// Listen replaces the stale socket, but refuses a live one or a file.
	ln2, err := Listen(stale, 0o600)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln2.Close()
	if _, err := Listen(stale, 0o600); !errors.Is(err, ErrInUse) {
		t.Errorf("Listen on a live socket: %v, want ErrInUse", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := Listen(file, 0o600); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen on a regular file: %v", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("Listen removed a regular file: %v", err)
	}
}
