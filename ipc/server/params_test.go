package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// TestParamsRequired: a similar or basis request without params, or with
// {}, is refused with 400 bad_request naming the field; the same request
// with the index's params is answered.
func TestParamsRequired(t *testing.T) {
	p := fingerprint.DefaultParams()
	fb := &fakeBackend{params: p, result: &index.Result{}}
	sk := &fingerprint.Sketch{Params: p, Features: []fingerprint.Feature{{Hash: 5, Count: 1}}}
	req := ipc.NewSimilarRequest("", sk)
	body := func(params string) string {
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "params")
		if params != "" {
			m["params"] = json.RawMessage(params)
		}
		b, _ = json.Marshal(m)
		return string(b)
	}
	good, _ := json.Marshal(p)
	for _, route := range []string{"/v1/similar", "/v1/basis"} {
		for _, c := range []struct {
			name, params string
			code         int
		}{
			{"missing", "", 400},
			{"empty", "{}", 400},
			{"null", "null", 400},
			{"the index's", string(good), 200},
		} {
			code, e, raw := send(t, fb, "POST", route, body(c.params))
			if code != c.code {
				t.Errorf("%s, params %s: %d %s, want %d", route, c.name, code, raw, c.code)
				continue
			}
			if c.code == 400 && (e == nil || e.Code != ipc.CodeBadRequest || !strings.HasPrefix(e.Message, "params: missing")) {
				t.Errorf("%s, params %s: %s, want bad_request naming params", route, c.name, raw)
			}
		}
	}
}
