package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// TestWrongMethod: a route asked with another method answers 405
// method_not_allowed naming the methods it takes in Allow; a path with no
// route answers 404 not_found.
func TestWrongMethod(t *testing.T) {
	fc := newFakeController()
	for _, tc := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{"POST", "/v1/info", http.StatusMethodNotAllowed, "GET"},
		{"GET", "/v1/similar", http.StatusMethodNotAllowed, "POST"},
		{"DELETE", "/v1/roots", http.StatusMethodNotAllowed, "GET, POST"},
		{"PUT", "/v1/wait", http.StatusMethodNotAllowed, "POST"},
		{"GET", "/v1/nothing", http.StatusNotFound, ""},
		{"POST", "/v2/info", http.StatusNotFound, ""},
	} {
		rec := httptest.NewRecorder()
		New(backendOf(fc), Options{}).ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}")))
		want := ipc.CodeNotFound
		if tc.code == http.StatusMethodNotAllowed {
			want = ipc.CodeMethod
		}
		if rec.Code != tc.code || rec.Header().Get("Allow") != tc.allow || !strings.Contains(rec.Body.String(), `"code":"`+string(want)+`"`) {
			t.Errorf("%s %s: %d, Allow %q, body %s; want %d, Allow %q, code %s",
				tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), rec.Body.String(), tc.code, tc.allow, want)
		}
	}
	// A backend without a Controller still has the routes: 405 for a wrong
	// method, 404 not supported for the right one.
	fb := &fakeBackend{params: fingerprint.DefaultParams()}
	rec := httptest.NewRecorder()
	New(backendOf(fb), Options{}).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/wait", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/wait without a Controller: %d %s", rec.Code, rec.Body.String())
	}
}
