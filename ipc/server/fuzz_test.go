package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// The fuzz targets send what a client may send through the server's whole
// path (limits, decoding, checks) and require that it never panics, and
// that every refusal is a 4xx with a JSON error whose code matches its
// status. Their seed corpora are in testdata/fuzz/. CI runs each briefly
// (.ci/run lists the runs); for a longer run:
//
//	go test -run '^$' -fuzz '^FuzzDecodeSimilar$' -fuzztime 5m ./ipc/server/

// fuzzLimits keeps the limits within reach of small inputs.
var fuzzLimits = Options{MaxBody: 1 << 16, MaxFeatures: 64}

// statusOf is the status each error code is answered with.
var statusOf = map[ipc.Code]int{
	ipc.CodeBadRequest:     http.StatusBadRequest,
	ipc.CodeParamsMismatch: http.StatusConflict,
	ipc.CodeTooLarge:       http.StatusRequestEntityTooLarge,
	ipc.CodeNotFound:       http.StatusNotFound,
}

// fuzzServe sends one request straight to srv and checks the answer's
// shape. It returns the status and the body.
func fuzzServe(t *testing.T, srv http.Handler, method, target string, body []byte) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(method, target, bytes.NewReader(body)))
	if rec.Code/100 == 2 {
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%d with a body that is not JSON: %q", rec.Code, rec.Body.Bytes())
		}
		return rec.Code, rec.Body.Bytes()
	}
	var eb errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error == nil {
		t.Fatalf("%d without a JSON error: %q", rec.Code, rec.Body.Bytes())
	}
	want, ok := statusOf[eb.Error.Code]
	if !ok || want != rec.Code || eb.Error.Message == "" {
		t.Fatalf("answered %d %+v: want a 4xx whose code matches its status, with a message", rec.Code, eb.Error)
	}
	return rec.Code, nil
}

func FuzzDecodeSimilar(f *testing.F) {
	f.Add([]byte(`{"params":{"scheme":"manber"},"strong":"`+strings.Repeat("0", 64)+`","features":[{"hash":"00000000000000ff","count":2}]}`), false)
	f.Add([]byte(`{"params":{"scheme":"chunks"},"strong":"`+strings.Repeat("ab", 32)+`","features":[{"hash":"0000000000000001","count":1,"len":300}],"threshold":0}`), true)
	manber := &fakeBackend{params: fingerprint.DefaultParams(), result: &index.Result{}}
	chunks := &fakeBackend{params: mustParams(f, fingerprint.Params{Scheme: fingerprint.Chunks}), result: &index.Result{}}
	srvs := map[*fakeBackend]*Server{manber: New(backendOf(manber), fuzzLimits), chunks: New(backendOf(chunks), fuzzLimits)}
	f.Fuzz(func(t *testing.T, body []byte, useChunks bool) {
		fb := manber
		if useChunks {
			fb = chunks
		}
		fb.lastQ = index.Query{}
		if code, _ := fuzzServe(t, srvs[fb], "POST", "/v1/similar", body); code != http.StatusOK {
			if fb.lastQ.Sketch != nil {
				t.Fatal("a refused query reached the backend")
			}
			return
		}
		// What reaches the index is a well-formed sketch.
		sk := fb.lastQ.Sketch
		if sk == nil {
			t.Fatal("200 without a query reaching the backend")
		}
		if err := checkSketch(sk, fb.params, fuzzLimits.MaxFeatures); err != nil {
			t.Fatal(err)
		}
		if o := fb.lastO; o.Threshold <= 0 || o.Threshold > 1 || o.Limit < 0 || o.MaxDF < -1 || (o.SizeRatio != 0 && o.SizeRatio < 1) {
			t.Fatalf("query options out of range: %+v", o)
		}
	})
}

// checkSketch checks what the server promises the index about a client's
// sketch.
func checkSketch(sk *fingerprint.Sketch, want fingerprint.Params, maxFeatures int) error {
	switch {
	case sk.Params != want:
		return fmt.Errorf("params %v, want the index's %v", sk.Params, want)
	case sk.Size < 0:
		return fmt.Errorf("size %d", sk.Size)
	case len(sk.Features) > maxFeatures:
		return fmt.Errorf("%d features over the limit %d", len(sk.Features), maxFeatures)
	case sk.Type > fingerprint.TypeBinary:
		return fmt.Errorf("type %d", sk.Type)
	}
	for i, ft := range sk.Features {
		if i > 0 && ft.Hash <= sk.Features[i-1].Hash {
			return fmt.Errorf("features[%d]: not sorted and distinct", i)
		}
		if ft.Count == 0 || (want.KnowsLengths() && ft.Len == 0) {
			return fmt.Errorf("features[%d]: %+v", i, ft)
		}
	}
	return nil
}

func mustParams(tb testing.TB, p fingerprint.Params) fingerprint.Params {
	tb.Helper()
	p, err := p.Normalize()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// fuzzControl serves route with a fakeController and checks that a path
// reaching it is absolute and clean.
func fuzzControl(t *testing.T, fc *fakeController, srv *Server, route string, body []byte) {
	fc.set(func(f *fakeController) { f.roots, f.rescans, f.timeouts = []string{"/srv/a"}, nil, nil })
	fuzzServe(t, srv, "POST", route, body)
	fc.set(func(f *fakeController) {
		for _, p := range append(f.roots, f.rescans...) {
			if p != "" && (!filepath.IsAbs(p) || filepath.Clean(p) != p) {
				t.Fatalf("%s handed the backend %q: not absolute and clean", route, p)
			}
		}
		for _, d := range f.timeouts {
			if d <= 0 || d > ipc.MaxWait {
				t.Fatalf("%s handed the backend a timeout of %s", route, d)
			}
		}
	})
}

func FuzzDecodeRoots(f *testing.F) {
	f.Add([]byte(`{"action":"add","path":"/srv/b"}`))
	fc := newFakeController()
	srv := New(backendOf(fc), fuzzLimits)
	f.Fuzz(func(t *testing.T, body []byte) { fuzzControl(t, fc, srv, "/v1/roots", body) })
}

func FuzzDecodeRescan(f *testing.F) {
	f.Add([]byte(`{"path":"/srv/a/sub/"}`))
	fc := newFakeController()
	srv := New(backendOf(fc), fuzzLimits)
	f.Fuzz(func(t *testing.T, body []byte) { fuzzControl(t, fc, srv, "/v1/rescan", body) })
}

func FuzzDecodeWait(f *testing.F) {
	f.Add([]byte(`{"timeout_ms":1500}`))
	fc := newFakeController()
	srv := New(backendOf(fc), fuzzLimits)
	f.Fuzz(func(t *testing.T, body []byte) { fuzzControl(t, fc, srv, "/v1/wait", body) })
}

// FuzzDecodeGroups fuzzes the query strings of GET /v1/groups and
// /v1/dupes.
func FuzzDecodeGroups(f *testing.F) {
	f.Add("threshold=40&max_df=-1&min_shared=2&all_types=1&prefix=%2Fsrv")
	f.Add("threshold=10&links=1&prefix=%2Fsrv%2Fa")
	fb := &fakeBackend{params: fingerprint.DefaultParams()}
	srv := New(backendOf(fb), fuzzLimits)
	f.Fuzz(func(t *testing.T, query string) {
		for _, c := range []byte(query) {
			if c <= ' ' || c >= 0x7f || c == '#' {
				return // not in a request target; %XX says any byte
			}
		}
		fb.groupsO = index.GroupOptions{}
		if code, _ := fuzzServe(t, srv, "GET", "/v1/groups?"+query, nil); code == http.StatusOK {
			if o := fb.groupsO; o.Threshold <= 0 || o.Threshold > 1 || o.MaxDF < -1 || o.MinShared < 0 {
				t.Fatalf("group options out of range: %+v", o)
			}
		}
		fuzzServe(t, srv, "GET", "/v1/dupes?"+query, nil)
	})
}

// indexBackend serves a real index.
type indexBackend struct{ *index.Index }

// fuzzFiles are the contents in the fuzzed index: text with relatives.
func fuzzFiles() map[string][]byte {
	r := rand.New(rand.NewPCG(7, 7))
	text := func(n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			for range 2 + r.IntN(8) {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
			b.WriteByte(" \n"[r.IntN(2)])
		}
		return b.Bytes()[:n]
	}
	a := text(12000)
	b := append(append([]byte(nil), a[:8000]...), text(4000)...)
	return map[string][]byte{"/srv/a.txt": a, "/srv/b.txt": b, "/srv/c.txt": text(9000), "/srv/d\xff.bin": append([]byte{0, 1, 2}, a...)}
}

// FuzzSimilarIndex sends the sketches clients may send to a real index,
// through the server: whatever they hold, the answer is a match list with
// percentages from 0 to 100 naming indexed files, or a refusal.
func FuzzSimilarIndex(f *testing.F) {
	p := fingerprint.DefaultParams()
	ix, err := index.Open("/db", &index.Options{FS: vfs.NewMem(), Params: p})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ix.Close() })
	files := fuzzFiles()
	for path, content := range files {
		sk, err := fingerprint.SketchReader(bytes.NewReader(content), p)
		if err != nil {
			f.Fatal(err)
		}
		if _, err := ix.Put(index.FileMeta{Path: path, Size: int64(len(content)), MtimeNs: 1}, sk); err != nil {
			f.Fatal(err)
		}
		if body, err := json.Marshal(ipc.NewSimilarRequest(path, sk)); err == nil && len(sk.Features) <= 64 {
			f.Add(body)
		}
	}
	srv := New(backendOf(indexBackend{ix}), fuzzLimits)
	f.Fuzz(func(t *testing.T, body []byte) {
		code, out := fuzzServe(t, srv, "POST", "/v1/similar", body)
		if code != http.StatusOK {
			return
		}
		var resp ipc.SimilarResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		for _, m := range resp.Matches {
			pcts := []float64{m.Containment, m.ReverseContainment, m.Resemblance}
			for _, x := range pcts {
				if !(x >= 0 && x <= 100) {
					t.Fatalf("match %+v: a percentage out of 0..100", m)
				}
			}
			if exact, _ := ipc.JoinPath(m.Path, m.PathRaw); files[exact] == nil {
				t.Fatalf("match %q is not an indexed file", exact)
			}
		}
		if resp.Skipped < 0 || resp.Skipped > resp.Fingerprints || resp.Fingerprints > fuzzLimits.MaxFeatures {
			t.Fatalf("fingerprints %d, skipped %d", resp.Fingerprints, resp.Skipped)
		}
	})
}
