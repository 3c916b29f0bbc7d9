package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/peer"
)

// simiBackend is a fakeBackend that answers by SimiHash.
type simiBackend struct {
	fakeBackend
	simihash bool
	lastSQ   index.SimiQuery
	sres     *index.SimiResult
}

func (f *simiBackend) SimiHash() bool { return f.simihash }
func (f *simiBackend) SimiFind(_ context.Context, q index.SimiQuery) (*index.SimiResult, error) {
	f.lastSQ = q
	return f.sres, nil
}

// TestSimilarBySimiHash: a request by SimiHash reaches SimiFind with its
// summary, tolerances, limit and prefix, and its answer carries each
// match's distances and tolerances; bad requests, and an index without
// SimiHash keys, get their codes.
func TestSimilarBySimiHash(t *testing.T) {
	p := fingerprint.DefaultParams()
	v := fingerprint.SimiVerdict{KeyDistance: 3, KeyTolerance: 20, SumDistance: 7, SumTolerance: 20, Similar: true}
	fb := &simiBackend{fakeBackend: fakeBackend{params: p}, simihash: true, sres: &index.SimiResult{
		Tolerances: fingerprint.DefaultTolerances(), KeyTolerance: 20, SumTolerance: 20, KeyHits: 4, SumHits: 1, Total: 1,
		Matches: []index.SimiMatch{{FileRecord: index.FileRecord{FileMeta: index.FileMeta{Path: "/r/a", Size: 1001}}, SimiVerdict: v}},
	}}
	c := serve(t, fb)
	ctx := context.Background()
	good := func() *ipc.SimilarRequest {
		sk := &fingerprint.Sketch{Params: fingerprint.Params{Scheme: fingerprint.Chunks}, Summary: fingerprint.Summary{Size: 1000}}
		sk.Sum[0], sk.Sum[5] = 10, 99
		sk.Key = fingerprint.SkewKey(sk.Sum)
		r := ipc.NewSimilarRequest("/q", sk)
		r.SimiHash = ipc.SimiHashOf(sk)
		r.By, r.Limit, r.PathPrefix, r.SameExt = ipc.BySimiHash, 5, "/r", true
		r.Tolerances = &fingerprint.Tolerances{Sum: 0.01}
		return r
	}
	resp, err := c.Similar(ctx, good())
	if err != nil {
		t.Fatal(err)
	}
	q := fb.lastSQ
	if q.Path != "/q" || q.Summary.Sum[5] != 99 || q.Summary.Key != 80 || q.Summary.Size != 1000 || q.Limit != 5 || q.PathPrefix != "/r" || !q.SameExt || q.Tolerances.Sum != 0.01 {
		t.Errorf("SimiFind got %+v", q)
	}
	if len(resp.Matches) != 1 || resp.SimiFind == nil || resp.SimiFind.KeyHits != 4 || resp.Total != 1 {
		t.Fatalf("answer %+v", resp)
	}
	if m := resp.Matches[0]; m.Path != "/r/a" || m.SimiHash == nil || *m.SimiHash != (ipc.SimiMatch{KeyDistance: 3, KeyTolerance: 20, SumDistance: 7, SumTolerance: 20}) {
		t.Errorf("match %+v", m)
	}

	for _, tc := range []struct {
		name string
		mod  func(*ipc.SimilarRequest)
		msg  string
	}{
		{"no sum table", func(r *ipc.SimilarRequest) { r.SimiHash = nil }, "simihash: missing"},
		{"wrong key", func(r *ipc.SimilarRequest) { r.SimiHash.Key++ }, "skew key"},
		{"tolerance", func(r *ipc.SimilarRequest) { r.Tolerances.SizeRatio = 2 }, "size ratio"},
		{"by", func(r *ipc.SimilarRequest) { r.By = "ssdeep" }, `by "ssdeep"`},
		{"tolerances by manber", func(r *ipc.SimilarRequest) { r.By, r.Params = "", p }, "tolerances"},
	} {
		r := good()
		tc.mod(r)
		_, err := c.Similar(ctx, r)
		var e *ipc.Error
		if !errors.As(err, &e) || e.Code != ipc.CodeBadRequest || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %v, want bad_request mentioning %q", tc.name, err, tc.msg)
		}
	}
	r := good()
	r.Fleet = true
	var e *ipc.Error
	if _, err := c.Similar(ctx, r); !errors.As(err, &e) || e.Code != ipc.CodeNoFleet {
		t.Errorf("fleet on a daemon without one: %v, want no_fleet", err)
	}
	if info, err := c.Info(ctx); err != nil || !info.SimiHash {
		t.Errorf("info: %+v, %v; want simihash", info, err)
	}
	fb.simihash = false
	_, err = c.Similar(ctx, good())
	if !errors.As(err, &e) || e.Code != ipc.CodeNoSimiHash || !strings.Contains(e.Message, "simihash = true") {
		t.Errorf("index without SimiHash keys: %v", err)
	}
	if _, err := serve(t, &fakeBackend{params: p}).Similar(ctx, good()); !errors.As(err, &e) || e.Code != ipc.CodeNoSimiHash {
		t.Errorf("backend without SimiFind: %v", err)
	}
}

// simiFleet is a fake fleet that answers by SimiHash with matches, or
// fails with err.
type simiFleet struct {
	fleetDirs
	matches []ipc.Match
	asked   index.SimiQuery
}

func (f *simiFleet) SimiFind(_ context.Context, q index.SimiQuery) ([]ipc.Match, error) {
	f.asked = q
	return f.matches, f.err
}

// TestSimilarBySimiHashFleet: with fleet, other hosts' matches join this
// host's, nearest first whatever the host, each named by its host and cut
// to the limit; the fleet is asked without the caller's view; a fleet that
// fails leaves this host's matches and fleet_error; a caller who may not
// ask the fleet gets 403.
func TestSimilarBySimiHashFleet(t *testing.T) {
	v := fingerprint.SimiVerdict{KeyDistance: 3, KeyTolerance: 20, SumDistance: 7, SumTolerance: 20, Similar: true}
	fb := &simiBackend{fakeBackend: fakeBackend{params: fingerprint.DefaultParams()}, simihash: true, sres: &index.SimiResult{
		Tolerances: fingerprint.DefaultTolerances(), KeyTolerance: 20, SumTolerance: 20, KeyHits: 4, SumHits: 1, Total: 1,
		Matches: []index.SimiMatch{{FileRecord: index.FileRecord{FileMeta: index.FileMeta{Path: "/r/a", Size: 1001}}, SimiVerdict: v}},
	}}
	remote := func(path string, sum uint64) ipc.Match {
		return ipc.Match{Host: "beta", Path: path, SimiHash: &ipc.SimiMatch{KeyTolerance: 20, SumDistance: sum, SumTolerance: 20}}
	}
	f := &simiFleet{matches: []ipc.Match{remote("/b/near", 2), remote("/b/far", 9)}}
	ask := func(cred peer.Cred, limit int) (*httptest.ResponseRecorder, ipc.SimilarResponse) {
		t.Helper()
		sk := &fingerprint.Sketch{Params: fingerprint.Params{Scheme: fingerprint.Chunks}, Summary: fingerprint.Summary{Size: 1000}}
		sk.Sum[0] = 10
		sk.Key = fingerprint.SkewKey(sk.Sum)
		r := ipc.NewSimilarRequest("/q", sk)
		r.SimiHash = ipc.SimiHashOf(sk)
		r.By, r.Fleet, r.Limit = ipc.BySimiHash, true, limit
		body, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		s := New(Backend{Query: fb, Fleet: f}, Options{Version: "test", Access: &Access{Owner: 500}})
		req := httptest.NewRequest("POST", "/v1/similar", bytes.NewReader(body))
		req = req.WithContext(context.WithValue(req.Context(), callerKey{}, s.judge(cred, nil)))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		var out ipc.SimilarResponse
		if rec.Code == 200 {
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
		}
		return rec, out
	}
	names := func(out ipc.SimilarResponse) string {
		var got []string
		for _, m := range out.Matches {
			got = append(got, m.Host+":"+m.Path)
		}
		return strings.Join(got, " ")
	}
	rec, out := ask(peer.Cred{UID: 500}, 0)
	if rec.Code != 200 || names(out) != "beta:/b/near alpha:/r/a beta:/b/far" || out.Total != 3 || out.FleetError != nil {
		t.Errorf("fleet answer: %d %q total %d, fleet error %v; want beta:/b/near alpha:/r/a beta:/b/far, 3\n%s",
			rec.Code, names(out), out.Total, out.FleetError, rec.Body)
	}
	if f.asked.Visible != nil || f.asked.Summary.Sum[0] != 10 {
		t.Errorf("the fleet was asked %+v", f.asked)
	}
	if _, out = ask(peer.Cred{UID: 500}, 2); names(out) != "beta:/b/near alpha:/r/a" || out.Total != 3 {
		t.Errorf("limit 2: %q total %d", names(out), out.Total)
	}
	f.err = errors.New("connection refused")
	if _, out = ask(peer.Cred{UID: 500}, 0); names(out) != "alpha:/r/a" || out.FleetError == nil || out.FleetError.Code != ipc.CodeFleetDown {
		t.Errorf("fleet down: %q, fleet error %+v", names(out), out.FleetError)
	}
	if rec, _ = ask(peer.Cred{UID: 1002, GID: 1002}, 0); rec.Code != http.StatusForbidden {
		t.Errorf("a caller who may not ask the fleet: %d, want 403", rec.Code)
	}
}
