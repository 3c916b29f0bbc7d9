package pgtest

import (
	"testing"

	"github.com/sif-dev/sif/daemon/fleet/pgserver"
)

// Options says how to start a test server; see pgserver.Options. A nil
// *Options means the defaults: a Unix socket only, no TLS, superuser
// "postgres" with a random password, synchronous commit off.
type Options = pgserver.Options

// EnvBin names the environment variable that, when set, is the directory
// holding PostgreSQL's server binaries (initdb, postgres, pg_dump,
// pg_restore).
const EnvBin = pgserver.EnvBin

// Server is a PostgreSQL server started by Start for one test. Its
// methods must be called from the test's goroutine (they call t.Fatal).
type Server struct {
	t   testing.TB
	srv *pgserver.Server
}

// Start starts a fresh PostgreSQL server for t and returns it; opts may be
// nil. The server is stopped and its directory removed when the test ends
// (t.Cleanup); a failed test logs the end of the server's log first. Start
// fails the test, never skips it, when PostgreSQL's server binaries are
// not installed or the server does not start.
func Start(t testing.TB, opts *Options) *Server {
	t.Helper()
	srv, err := pgserver.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, srv: srv}
	t.Cleanup(s.cleanup)
	return s
}

func (s *Server) cleanup() {
	if s.srv.Running() {
		if err := s.srv.Stop(); err != nil {
			s.t.Error(err)
		}
	}
	if s.t.Failed() {
		s.t.Logf("pgtest: the end of the server's log (%s/postgres.log):\n%s", s.srv.Dir(), s.srv.LogTail(4000))
	}
	if err := s.srv.Close(); err != nil {
		s.t.Error(err)
	}
}

func (s *Server) check(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

// Server returns the pgserver.Server underneath, for what pgtest does not
// wrap.
func (s *Server) Server() *pgserver.Server { return s.srv }

// Start starts the server again after Stop or Kill, on the same data,
// port and socket, and waits until it accepts connections. Start (the
// function) already started it once.
func (s *Server) Start() {
	s.t.Helper()
	s.check(s.srv.Start())
}

// Stop shuts the server down cleanly (SIGINT: PostgreSQL's fast shutdown,
// which ends sessions and writes a checkpoint), killing it if it has not
// exited within 30 s. Start starts it again.
func (s *Server) Stop() {
	s.t.Helper()
	s.check(s.srv.Stop())
}

// Kill kills the server and every process it started at once (SIGKILL),
// as a crash would, and waits until they are gone. Start then recovers the
// cluster from its write-ahead log.
func (s *Server) Kill() {
	s.t.Helper()
	s.check(s.srv.Kill())
}

// Pause makes the server stop answering (SIGSTOP to it and every process
// it started): requests wait, as on a server that hangs. Resume undoes it.
func (s *Server) Pause() { s.check(s.srv.Pause()) }

// Resume lets a paused server answer again.
func (s *Server) Resume() { s.check(s.srv.Resume()) }

// Running reports whether the server is running (started and not stopped
// or killed by a method of s).
func (s *Server) Running() bool { return s.srv.Running() }

// Log returns the server's log so far (its standard error, over every
// Start).
func (s *Server) Log() string { return s.srv.Log() }

// Dir returns the server's temporary directory, which also holds its Unix
// socket.
func (s *Server) Dir() string { return s.srv.Dir() }

// Bin returns the directory of the PostgreSQL binaries the server runs
// from, which holds the client programs (psql) of the same version too.
func (s *Server) Bin() string { return s.srv.Bin() }

// Port returns the server's TCP port (with Options.TCP), which is also the
// number in its socket's name.
func (s *Server) Port() int { return s.srv.Port() }

// User and Password return the superuser's name and password.
func (s *Server) User() string     { return s.srv.User() }
func (s *Server) Password() string { return s.srv.Password() }

// CAFile returns the path of the CA certificate (PEM) that signed the
// server's certificate; "" unless started with Options.TLS.
func (s *Server) CAFile() string { return s.srv.CAFile() }

// URL returns a postgres:// URL for the superuser and database db over the
// Unix socket (the socket's directory in the host parameter, as pgx and
// libpq read it).
func (s *Server) URL(db string) string { return s.srv.URL(db) }

// URLFor returns a postgres:// URL for user with password and database db
// over the Unix socket.
func (s *Server) URLFor(user, password, db string) string { return s.srv.URLFor(user, password, db) }

// TCPURL returns a postgres:// URL for the superuser and database db over
// TCP to 127.0.0.1; see TCPURLFor.
func (s *Server) TCPURL(db string) string {
	s.t.Helper()
	return s.TCPURLFor(s.srv.User(), s.srv.Password(), db)
}

// TCPURLFor returns a postgres:// URL for user with password and database
// db over TCP to 127.0.0.1. With Options.TLS it asks for
// sslmode=verify-full with CAFile as the root; else sslmode=disable. It
// fails the test when the server was started without Options.TCP.
func (s *Server) TCPURLFor(user, password, db string) string {
	s.t.Helper()
	u, err := s.srv.TCPURLFor(user, password, db)
	s.check(err)
	return u
}

// Exec runs sql with args as the superuser in database db.
func (s *Server) Exec(db, sql string, args ...any) {
	s.t.Helper()
	s.check(s.srv.Exec(db, sql, args...))
}

// CreateDB creates database name, owned by the superuser.
func (s *Server) CreateDB(name string) {
	s.t.Helper()
	s.check(s.srv.CreateDB(name))
}

// CreateDBOwnedBy creates database name owned by role owner, who may then
// create tables in it.
func (s *Server) CreateDBOwnedBy(name, owner string) {
	s.t.Helper()
	s.check(s.srv.CreateDBOwnedBy(name, owner))
}

// CreateRole creates a role that may log in with password.
func (s *Server) CreateRole(name, password string) {
	s.t.Helper()
	s.check(s.srv.CreateRole(name, password))
}

// Dump writes database db to path with pg_dump, in its custom format.
func (s *Server) Dump(db, path string) {
	s.t.Helper()
	s.check(s.srv.Dump(db, path))
}

// Restore replaces database db with the dump at path (made by Dump): it
// drops db if it exists (ending its sessions), creates it again with the
// same owner (the superuser when it did not exist) and restores the dump
// into it with pg_restore, in one transaction.
func (s *Server) Restore(path, db string) {
	s.t.Helper()
	s.check(s.srv.Restore(path, db))
}
