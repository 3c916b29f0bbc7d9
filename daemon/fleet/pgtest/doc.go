// Package pgtest starts a real PostgreSQL server for a test, in a temporary
// directory, and stops and removes it when the test ends.
//
// The fleet index (package daemon/fleet) speaks the PostgreSQL wire
// protocol, and its tests run against the real server rather than a fake:
// a test calls Start, gets a *Server, and connects to it with the URL it
// gives. Nothing is shared between tests and nothing outside the temporary
// directory is touched: no system cluster, no service, no fixed port.
//
// # Vocabulary
//
// The server binaries are PostgreSQL's initdb, postgres, pg_dump and
// pg_restore. They are found in $SIF_TEST_PGBIN when it is set, else in the
// newest /usr/lib/postgresql/*/bin (the layout of Debian's postgresql
// package), else where `pg_config --bindir` says. A machine without them
// fails the test with a message saying what to install: the fleet tests are
// never skipped.
//
// The cluster is the data directory initdb makes, with one superuser (by
// default "postgres", with a random password) that signs in with
// scram-sha-256, so a wrong password really fails, over the Unix socket as
// over TCP. The socket lives in the temporary directory (made with
// os.MkdirTemp, whose path is short: a socket's path must fit in 107
// bytes) and any local user may connect to it, so a daemon running as
// nobody can reach the server. With Options.TCP the server also listens on
// 127.0.0.1 on a free port; with Options.TLS it presents a certificate for
// localhost and 127.0.0.1 signed by a CA generated for the test
// (CAFile), and TCP clients must use TLS.
//
// The server is tuned for tests, not for durability: fsync, full page
// writes and (unless Options.SynchronousCommit) synchronous commit are off,
// and its shared buffers are small. Stop shuts it down cleanly and Start
// starts it again on the same data; Kill kills every process of the server
// at once, as a crash would, and the next Start recovers from the
// write-ahead log. With synchronous commit off, transactions committed in
// the last fraction of a second before Kill may be lost, as on a
// production server configured the same way.
//
// # Running as root
//
// initdb and postgres refuse to run as root. When the test runs as root
// (CI does), the server runs as the postgres user when it exists (Debian's
// package makes it), else as nobody, and the temporary directory is given
// to that user. This is Linux-only: on other systems Start fails the test.
//
// # Concurrency
//
// The methods of Server fail the test with t.Fatal and so must be called
// from the test's goroutine; the URLs they return may be used from any
// goroutine.
package pgtest
