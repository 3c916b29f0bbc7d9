package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/peer"
)

// sendAs serves one request from the caller a server with access acc makes
// of cred (or of an unknown caller, when credErr is set).
func sendAs(t *testing.T, b any, acc Access, cred peer.Cred, credErr error, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	s := New(backendOf(b), Options{Version: "test", Access: &acc})
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req = req.WithContext(context.WithValue(req.Context(), callerKey{}, s.judge(cred, credErr)))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func TestCallerJudgement(t *testing.T) {
	acc := Access{Owner: 500, Operators: []uint32{77}}
	s := New(backendOf(&fakeBackend{}), Options{Access: &acc})
	for _, c := range []struct {
		name       string
		cred       peer.Cred
		all, admin bool
	}{
		{"root", peer.Cred{UID: 0, GID: 0}, true, true},
		{"owner", peer.Cred{UID: 500, GID: 500}, true, true},
		{"operator by supplementary group", peer.Cred{UID: 1000, GID: 1000, Groups: []uint32{5, 77}}, false, true},
		{"operator by primary group", peer.Cred{UID: 1001, GID: 77}, false, true},
		{"anyone", peer.Cred{UID: 1002, GID: 1002, Groups: []uint32{5}}, false, false},
	} {
		got := s.judge(c.cred, nil)
		if got.all != c.all || got.admin != c.admin || !got.known {
			t.Errorf("%s: all %v admin %v known %v, want all %v admin %v", c.name, got.all, got.admin, got.known, c.all, c.admin)
		}
	}
	// Credentials that cannot be learned: the owner on a private socket,
	// nobody on a shared one.
	if c := s.judge(peer.Cred{}, peer.ErrUnsupported); c.err == nil {
		t.Error("unknown caller on a shared socket accepted")
	}
	acc.Private = true
	s = New(backendOf(&fakeBackend{}), Options{Access: &acc})
	if c := s.judge(peer.Cred{}, peer.ErrUnsupported); c.err != nil || !c.all {
		t.Errorf("unknown caller on a private socket: %+v", c)
	}
}

func TestUnknownCallerRefused(t *testing.T) {
	fc := newFakeController()
	for _, route := range [][2]string{{"GET", "/v1/info"}, {"GET", "/v1/status"}, {"GET", "/v1/groups"}, {"GET", "/v1/dupes"},
		{"GET", "/v1/roots"}, {"POST", "/v1/similar"}, {"POST", "/v1/wait"}, {"POST", "/v1/rescan"}} {
		rec := sendAs(t, fc, Access{Owner: 500}, peer.Cred{}, errors.New("no SO_PEERCRED"), route[0], route[1], "{}")
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"forbidden"`) {
			t.Errorf("%s %s by an unknown caller: %d %s", route[0], route[1], rec.Code, rec.Body)
		}
	}
}

func TestInfoAndStatusRedacted(t *testing.T) {
	fc := newFakeController()
	anyone := peer.Cred{UID: 1002, GID: 1002}
	rec := sendAs(t, fc, Access{Owner: 500}, anyone, nil, "GET", "/v1/info", "")
	var info ipc.Info
	if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil || rec.Code != 200 {
		t.Fatalf("info: %d %s", rec.Code, rec.Body)
	}
	if info.Index != (ipc.IndexStats{}) {
		t.Errorf("info for another user counts the index: %+v", info.Index)
	}
	rec = sendAs(t, fc, Access{Owner: 500}, peer.Cred{UID: 500}, nil, "GET", "/v1/info", "")
	if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil || info.Index.Files != 7 {
		t.Errorf("info for the owner: %s", rec.Body)
	}
	// Roots the caller cannot reach are left out (the fake's roots do not
	// exist on disk, so nobody but the privileged can list them).
	rec = sendAs(t, fc, Access{Owner: 500}, anyone, nil, "GET", "/v1/roots", "")
	if !strings.Contains(rec.Body.String(), `"roots":[]`) {
		t.Errorf("roots for another user: %s", rec.Body)
	}
}
