//go:build unix

package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/peer"
)

// rootsController is a fakeController whose roots carry file counts.
type rootsController struct {
	*fakeController
	roots []ipc.RootStatus
}

func (c *rootsController) Roots() []ipc.RootStatus { return c.roots }

func (c *rootsController) Status() ipc.Status {
	return ipc.Status{State: "ready", DB: "/var/lib/sifd/index", Roots: c.roots, Counters: ipc.Counters{Indexed: 7}}
}

// Through the routes, with the caller's real view of the disk: another
// user is told of a root whose directory it can list, without its counts,
// and not of one it cannot list; the daemon's user is told of both, with
// their counts.
func TestRootsRedactedByPermission(t *testing.T) {
	// Not t.TempDir: its parent is private, and the caller must reach top.
	top, err := os.MkdirTemp("", "sif-redact-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	open, closed := filepath.Join(top, "open"), filepath.Join(top, "closed")
	for p, mode := range map[string]os.FileMode{top: 0o755, open: 0o755, closed: 0o700} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	// Someone who is neither the files' owner nor in their group.
	other := peer.Cred{UID: uint32(os.Geteuid()) + 1000, GID: uint32(os.Getegid()) + 1000}
	if v := peer.NewView(other); !v.CanList(open) || v.CanList(closed) {
		t.Fatalf("uid %d: can list %s: %v, %s: %v; want true, false (is %s reachable by everyone?)",
			other.UID, open, v.CanList(open), closed, v.CanList(closed), os.TempDir())
	}
	c := &rootsController{fakeController: newFakeController(), roots: []ipc.RootStatus{rootWithCounts(closed), rootWithCounts(open)}}
	acc := Access{Owner: 500}

	var roots ipc.RootsResponse
	get := func(cred peer.Cred, path string, v any) {
		t.Helper()
		rec := sendAs(t, c, acc, cred, nil, "GET", path, "")
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil || rec.Code != 200 {
			t.Fatalf("GET %s as uid %d: %d %s", path, cred.UID, rec.Code, rec.Body)
		}
	}
	get(other, "/v1/roots", &roots)
	if want := []ipc.RootStatus{redactedRoot(open)}; jsonOf(roots.Roots) != jsonOf(want) {
		t.Errorf("roots for another user:\n got %s\nwant %s", jsonOf(roots.Roots), jsonOf(want))
	}
	var st ipc.Status
	get(other, "/v1/status", &st)
	if want := []ipc.RootStatus{redactedRoot(open)}; jsonOf(st.Roots) != jsonOf(want) || !st.Redacted || st.DB != "" || st.Counters.Indexed != 0 {
		t.Errorf("status for another user: %s, want roots %s, redacted, no db, no counters", jsonOf(st), jsonOf(want))
	}

	owner := peer.Cred{UID: 500, GID: 500}
	get(owner, "/v1/roots", &roots)
	if jsonOf(roots.Roots) != jsonOf(c.roots) {
		t.Errorf("roots for the daemon's user:\n got %s\nwant %s", jsonOf(roots.Roots), jsonOf(c.roots))
	}
	st = ipc.Status{}
	get(owner, "/v1/status", &st)
	if jsonOf(st.Roots) != jsonOf(c.roots) || st.Redacted || st.DB == "" {
		t.Errorf("status for the daemon's user: %s", jsonOf(st))
	}
}
