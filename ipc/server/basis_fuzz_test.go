package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// FuzzDecodeBasis sends arbitrary bodies to /v1/basis and /v1/similar with
// candidates the daemon can read: a refused body is a 4xx with a code, an
// accepted one an answer in order (a range around each estimate from
// fingerprints alone, none around the others), and nothing panics,
// whatever the content or signature.
func FuzzDecodeBasis(f *testing.F) {
	strong := `"strong":"` + strings.Repeat("0", 64) + `"`
	f.Add([]byte(`{"params":{"scheme":"manber"},"size":5,`+strong+`,"features":[],"content":"aGVsbG8="}`), false)
	f.Add([]byte(`{"params":{"scheme":"manber"},"size":100,`+strong+`,"features":[],"windows":{"level":4,"hashes":"AAAAAAAAABA="}}`), true)
	f.Add([]byte(`{"params":{"scheme":"manber"},"size":0,`+strong+`,"features":[],"content":""}`), false)
	a, b := text(9, 3000), text(10, 50)
	fb := &fileBackend{
		fakeBackend: &fakeBackend{params: fingerprint.DefaultParams(), result: &index.Result{Matches: []index.Match{
			match("/r/a", int64(len(a)), 0.9), match("/r/b", int64(len(b)), 0.5), match("/r/gone", 10, 0.4)}}},
		files: map[string][]byte{"/r/a": a, "/r/b": b},
	}
	srv := New(backendOf(fb), fuzzLimits)
	f.Fuzz(func(t *testing.T, body []byte, similar bool) {
		route := "/v1/basis"
		if similar {
			route = "/v1/similar"
		}
		code, out := fuzzServe(t, srv, "POST", route, body)
		if code != http.StatusOK {
			if code/100 != 4 {
				t.Fatalf("status %d: %s", code, out)
			}
			return
		}
		if similar {
			var r ipc.SimilarResponse
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			return
		}
		var r ipc.BasisResponse
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		for i, c := range r.Candidates {
			if c.Path == "/r/gone" || c.EstimatedBytes < 0 || i > 0 && c.EstimatedBytes < r.Candidates[i-1].EstimatedBytes {
				t.Fatalf("candidates %+v", r.Candidates)
			}
			ranged := c.Method == ipc.BasisFingerprints
			if ranged && !(0 < c.EstimatedBytesLow && c.EstimatedBytesLow <= c.EstimatedBytes && c.EstimatedBytes <= c.EstimatedBytesHigh) ||
				!ranged && (c.EstimatedBytesLow != 0 || c.EstimatedBytesHigh != 0) {
				t.Fatalf("candidate %+v: a range out of order, or on an estimate not from fingerprints", c)
			}
		}
	})
}
