// Package pgtest starts a real PostgreSQL server for a test, in a temporary
// directory, and stops and removes it when the test ends.
//
// The fleet index (package daemon/fleet) speaks the PostgreSQL wire
// protocol, and its tests run against the real server rather than a fake:
// a test calls Start, gets a *Server, and connects to it with the URL it
// gives. The server itself is package pgserver's (see its doc for where
// the binaries are found, the cluster's superuser and socket, TLS, the
// settings that favour speed over durability, and running as root); pgtest
// turns its errors into test failures.
//
// A machine without PostgreSQL's server binaries fails the test with a
// message saying what to install: the fleet tests are never skipped. On
// systems other than Linux, Start fails the test.
//
// # Concurrency
//
// The methods of Server fail the test with t.Fatal and so must be called
// from the test's goroutine; the URLs they return may be used from any
// goroutine.
package pgtest
