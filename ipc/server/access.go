package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/peer"
)

// Access says who may see and change what through the socket
// (Options.Access).
//
// Every connection's caller is learned from the socket's peer credentials.
// Root and Owner see every indexed file and may change the daemon. Any
// other caller is answered with only the files it could open for reading
// now (peer.View), and with no counts that would include others; members
// of an Operators group may also change the daemon, but only for
// directories they can read themselves.
type Access struct {
	// Owner is the user the daemon runs as.
	Owner uint32
	// Operators are groups whose members may add and remove roots and ask
	// for rescans.
	Operators []uint32
	// Private means only Owner and root can connect (a socket of mode
	// 0600): a caller whose credentials cannot be learned here is then
	// taken to be Owner. Otherwise such a caller is refused.
	Private bool
	// FleetAskers are groups whose members may ask the fleet index,
	// besides root and the daemon's user.
	FleetAskers []uint32
}

// caller is who sent a request, and what follows from it.
type caller struct {
	cred  peer.Cred
	known bool // cred was learned from the connection
	all   bool // sees every file: root, the daemon's user, or a private socket's unknown caller
	admin bool // may change the daemon
	fleet bool // may ask the fleet index
	err   error
}

type callerKey struct{}

// connContext records the peer credentials of a new connection.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	var cred peer.Cred
	var ok bool
	var err error
	if s.conns != nil {
		cred, ok, err = s.conns.credOf(c) // learned by Accept
	}
	if !ok {
		cred, err = peer.FromConn(c)
	}
	return context.WithValue(ctx, callerKey{}, s.judge(cred, err))
}

// judge decides what a caller with cred (or whose credentials could not be
// learned, err) may do.
func (s *Server) judge(cred peer.Cred, err error) *caller {
	a := s.access
	if err != nil {
		if a.Private {
			return &caller{all: true, admin: true, fleet: true}
		}
		s.log.Warn("cannot tell who is calling: refusing the connection's requests", "err", err)
		return &caller{err: err}
	}
	c := &caller{cred: cred, known: true}
	c.all = cred.UID == 0 || cred.UID == a.Owner
	c.admin = c.all || slices.ContainsFunc(a.Operators, cred.InGroup)
	c.fleet = c.all || slices.ContainsFunc(a.FleetAskers, cred.InGroup)
	return c
}

// callerOf returns the caller of r. A request that did not come through
// Serve (a test calling ServeHTTP) is the daemon's own user.
func (s *Server) callerOf(r *http.Request) *caller {
	if c, ok := r.Context().Value(callerKey{}).(*caller); ok {
		return c
	}
	return &caller{cred: peer.Cred{UID: s.access.Owner, GID: uint32(os.Getegid())}, known: true, all: true, admin: true, fleet: true}
}

// view returns what c may read, or nil when c sees everything.
func (c *caller) view() *peer.View {
	if c.all {
		return nil
	}
	return peer.NewView(c.cred)
}

// visibleTo is the index's Visible for a caller who sees only what v
// lets them read: a file is kept if they could read it now and it is
// still the file indexed (peer.View.CanReadIndexed). Between a path's
// file being replaced and the daemon reading it again, the index holds
// the old file's fingerprints under that path; an answer computed on them
// would tell a caller about content they could not read.
func visibleTo(v *peer.View) func(*index.FileMeta) bool {
	return func(m *index.FileMeta) bool {
		return v.CanReadIndexed(m.Path, peer.Indexed{Dev: m.Dev, Ino: m.Ino, CtimeNs: m.CtimeNs})
	}
}

// identify answers 403 and returns nil when the caller's credentials are
// unknown on a shared socket.
func (s *Server) identify(w http.ResponseWriter, r *http.Request) *caller {
	c := s.callerOf(r)
	if c.err != nil {
		writeError(w, http.StatusForbidden, ipc.CodeForbidden,
			fmt.Sprintf("sifd cannot tell who is calling (%v), so it answers nothing on this socket", c.err))
		return nil
	}
	return c
}

// authorize answers 403 and returns false unless the caller may change the
// daemon.
func (s *Server) authorize(w http.ResponseWriter, c *caller, what string) bool {
	if c.admin {
		return true
	}
	msg := fmt.Sprintf("%s is for root, the daemon's user (uid %d)", what, s.access.Owner)
	if len(s.access.Operators) > 0 {
		msg += fmt.Sprintf(" or members of its operator group (gid %d)", s.access.Operators[0])
	}
	msg += fmt.Sprintf("; you are uid %d. Ask an administrator, or run a sifd of your own (sifd run --root DIR)", c.cred.UID)
	writeError(w, http.StatusForbidden, ipc.CodeForbidden, msg)
	return false
}

// lister says which directories a caller can list: a *peer.View, or a
// fake in tests.
type lister interface{ CanList(dir string) bool }

// redactStatus leaves in st only what a caller who does not see every file
// may know: the daemon's state and the roots it can list, without counts of
// files (which would count files it cannot read) and without error lines
// (which name them).
func redactStatus(st ipc.Status, v lister) ipc.Status {
	st.DB = ""
	st.Counters = ipc.Counters{}
	st.Index = ipc.IndexStats{}
	st.LastError = nil
	st.StillChanging = nil
	st.Forgetting = nil
	if rb := st.IndexRebuilt; rb != nil {
		st.IndexRebuilt = &ipc.IndexRebuild{At: rb.At} // the reason and old place name the db
	}
	if f := st.Fleet; f != nil {
		// The link's state, without counts of files or the database's
		// errors (which may name its host and user).
		st.Fleet = &ipc.FleetStatus{Host: f.Host, Connected: f.Connected, LagSecs: f.LagSecs,
			Publishing: slices.DeleteFunc(slices.Clone(f.Publishing), func(p string) bool { return !v.CanList(p) })}
	}
	st.Roots = redactRoots(st.Roots, v)
	st.RemovedRoots = slices.DeleteFunc(slices.Clone(st.RemovedRoots), func(p ipc.FilePath) bool { return !v.CanList(p.Exact()) })
	st.Redacted = true
	return st
}

// redactRoots keeps the roots v can list, without their file counts.
func redactRoots(roots []ipc.RootStatus, v lister) []ipc.RootStatus {
	out := make([]ipc.RootStatus, 0, len(roots))
	for _, r := range roots {
		if !v.CanList(r.Path) {
			continue
		}
		out = append(out, ipc.RootStatus{
			Path: r.Path, State: r.State, Reason: r.Reason, FS: r.FS, Source: r.Source,
			WalkDone: r.WalkDone, ScanSecs: r.ScanSecs, ETASecs: r.ETASecs, Scans: r.Scans, ScanFinish: r.ScanFinish,
		})
	}
	return out
}
