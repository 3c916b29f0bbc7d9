// Package pgserver starts a private PostgreSQL server in a temporary
// directory, for the fleet index's tests (through package pgtest) and for
// sifbench's fleet benchmark, and stops and removes it on Close.
//
// Nothing is shared between servers and nothing outside the temporary
// directory is touched: no system cluster, no service, no fixed port.
// Every method returns an error rather than failing a test; package
// pgtest wraps them for a test.
//
// # Vocabulary
//
// The server binaries are PostgreSQL's initdb, postgres, pg_dump and
// pg_restore. They are found in $SIF_TEST_PGBIN when it is set, else in the
// newest /usr/lib/postgresql/*/bin (the layout of Debian's postgresql
// package), else where `pg_config --bindir` says. A machine without them
// gets an error saying what to install.
//
// The cluster is the data directory initdb makes, with one superuser (by
// default "postgres", with a random password) that signs in with
// scram-sha-256, so a wrong password really fails, over the Unix socket as
// over TCP. The socket lives in the temporary directory (made with
// os.MkdirTemp, whose path is short: a socket's path must fit in 107
// bytes) and any local user may connect to it, so a daemon running as
// nobody can reach the server. With Options.TCP the server also listens on
// 127.0.0.1 on a free port; with Options.TLS it presents a certificate for
// localhost and 127.0.0.1 signed by a CA generated for the server
// (CAFile), and TCP clients must use TLS.
//
// The server is tuned for speed, not for durability: fsync, full page
// writes and (unless Options.SynchronousCommit) synchronous commit are off,
// and its shared buffers are small unless Options.Settings says otherwise.
// Stop shuts it down cleanly and Start starts it again on the same data;
// Kill kills every process of the server at once, as a crash would, and
// the next Start recovers from the write-ahead log. With synchronous
// commit off, transactions committed in the last fraction of a second
// before Kill may be lost, as on a production server configured the same
// way.
//
// # Running as root
//
// initdb and postgres refuse to run as root. When the caller runs as root
// (CI does), the server runs as the postgres user when it exists (Debian's
// package makes it), else as nobody, and the temporary directory is given
// to that user. This is Linux-only: on other systems Start fails.
//
// # Concurrency
//
// The methods of a Server must not be called concurrently with each
// other; the URLs they return may be used from any goroutine.
package pgserver
