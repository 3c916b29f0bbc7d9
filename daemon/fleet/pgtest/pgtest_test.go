package pgtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func run(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, conn *pgx.Conn, table string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("counting %s: %v", table, err)
	}
	return n
}

func TestStartConnect(t *testing.T) {
	start := time.Now()
	srv := Start(t, nil)
	t.Logf("started in %v", time.Since(start).Round(time.Millisecond))
	if n := len(filepath.Join(srv.Dir(), ".s.PGSQL.65535")); n > 107 {
		t.Errorf("socket path is %d bytes", n)
	}
	fi, err := os.Stat(filepath.Join(srv.Dir(), ".s.PGSQL.5432"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&0o777 != 0o777 {
		t.Errorf("socket mode %v, want anyone to connect", fi.Mode())
	}
	conn := connect(t, srv.URL("postgres"))
	var fsync, syncCommit string
	if err := conn.QueryRow(context.Background(), "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &syncCommit); err != nil {
		t.Fatal(err)
	}
	if fsync != "off" || syncCommit != "off" {
		t.Errorf("fsync=%s synchronous_commit=%s, want off for speed", fsync, syncCommit)
	}
	var super bool
	if err := conn.QueryRow(context.Background(), "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || !super {
		t.Errorf("connected as a superuser: %v %v", super, err)
	}

	srv.CreateRole("alice", "it's secret")
	srv.CreateDBOwnedBy("fleet", "alice")
	alice := connect(t, srv.URLFor("alice", "it's secret", "fleet"))
	run(t, alice, "CREATE TABLE t (x int)")
	var owner string
	if err := conn.QueryRow(context.Background(), "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'fleet'").Scan(&owner); err != nil || owner != "alice" {
		t.Errorf("fleet owned by %q (%v), want alice", owner, err)
	}
	srv.CreateDB("other")
	connect(t, srv.URL("other"))
}

func TestRestartKeepsData(t *testing.T) {
	srv := Start(t, &Options{TCP: true})
	conn := connect(t, srv.URL("postgres"))
	run(t, conn, "CREATE TABLE t (x int)")
	run(t, conn, "INSERT INTO t SELECT generate_series(1, 1000)")
	conn.Close(context.Background())

	srv.Stop()
	if srv.Running() {
		t.Fatal("running after Stop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, srv.URL("postgres")); err == nil {
		c.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	start := time.Now()
	srv.Start()
	t.Logf("restarted in %v", time.Since(start).Round(time.Millisecond))
	conn = connect(t, srv.TCPURL("postgres"))
	if n := count(t, conn, "t"); n != 1000 {
		t.Errorf("%d rows after a restart, want 1000", n)
	}
}

func TestKillRecovers(t *testing.T) {
	srv := Start(t, nil)
	conn := connect(t, srv.URL("postgres"))
	run(t, conn, "CREATE TABLE t (x int)")
	run(t, conn, "INSERT INTO t SELECT generate_series(1, 500)")
	// A commit with synchronous_commit on writes the WAL of every earlier
	// commit too: all 1000 rows are acknowledged durably (to the kernel;
	// fsync is off, and Kill is not a power cut).
	run(t, conn, "SET synchronous_commit = on")
	run(t, conn, "INSERT INTO t SELECT generate_series(501, 1000)")
	// An open transaction at the crash is rolled back by recovery.
	tx, err := conn.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), "INSERT INTO t SELECT generate_series(1, 5000)"); err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	if srv.Running() {
		t.Fatal("running after Kill")
	}
	srv.Start()
	conn = connect(t, srv.URL("postgres"))
	if n := count(t, conn, "t"); n != 1000 {
		t.Errorf("%d rows after a crash, want the 1000 committed", n)
	}
	if log := srv.Log(); !strings.Contains(log, "not properly shut down") {
		t.Errorf("the log shows no crash recovery:\n%s", log)
	}
}

func TestKillWithSynchronousCommit(t *testing.T) {
	srv := Start(t, &Options{SynchronousCommit: true})
	conn := connect(t, srv.URL("postgres"))
	run(t, conn, "CREATE TABLE t (x int)")
	for i := 0; i < 20; i++ {
		run(t, conn, "INSERT INTO t VALUES ($1)", i)
	}
	srv.Kill()
	srv.Start()
	if n := count(t, connect(t, srv.URL("postgres")), "t"); n != 20 {
		t.Errorf("%d rows after a crash, want the 20 acknowledged", n)
	}
}

func TestWrongPassword(t *testing.T) {
	srv := Start(t, &Options{TCP: true, User: "sifadmin", Password: "right"})
	srv.CreateRole("bob", "bobs")
	for _, url := range []string{
		srv.URLFor("sifadmin", "wrong", "postgres"),
		srv.TCPURLFor("sifadmin", "wrong", "postgres"),
		srv.URLFor("bob", "right", "postgres"),
		srv.TCPURLFor("nobody_here", "x", "postgres"),
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := pgx.Connect(ctx, url)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			t.Errorf("%s: connected with wrong credentials", url)
			continue
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
			t.Errorf("%s: %v, want invalid_password (28P01)", url, err)
		}
	}
	connect(t, srv.URLFor("bob", "bobs", "postgres"))
	connect(t, srv.TCPURLFor("sifadmin", "right", "postgres"))
}

func TestTLS(t *testing.T) {
	srv := Start(t, &Options{TLS: true})
	ca := srv.CAFile()
	if ca == "" {
		t.Fatal("no CA file")
	}
	url := srv.TCPURL("postgres")
	if !strings.Contains(url, "sslmode=verify-full") {
		t.Fatalf("TCPURL %s does not verify the server", url)
	}
	conn := connect(t, url)
	var ssl bool
	if err := conn.QueryRow(context.Background(), "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Errorf("connection not over TLS: %v %v", ssl, err)
	}
	// The same URL by name: the certificate is for localhost too.
	connect(t, strings.Replace(url, "127.0.0.1", "localhost", 1))

	// A CA that did not sign the server's certificate.
	wrongCA := filepath.Join(t.TempDir(), "wrong.crt")
	if err := os.WriteFile(wrongCA, selfSignedCA(t), 0o644); err != nil {
		t.Fatal(err)
	}
	tryFail := func(url, want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			conn.Close(ctx)
			t.Errorf("%s: connected", url)
			return
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", url, err, want)
		}
	}
	tryFail(strings.Replace(url, escapePath(ca), escapePath(wrongCA), 1), "certificate signed by unknown authority")
	// Plain TCP is refused: pg_hba has only hostssl lines for TCP.
	tryFail(strings.Replace(url, "sslmode=verify-full", "sslmode=disable", 1), "no pg_hba.conf entry")
	// The Unix socket needs no TLS.
	connect(t, srv.URL("postgres"))
}

// escapePath is a path as url.Values.Encode writes it.
func escapePath(p string) string { return strings.ReplaceAll(p, "/", "%2F") }

func TestDumpRestore(t *testing.T) {
	srv := Start(t, nil)
	srv.CreateRole("alice", "a")
	srv.CreateDBOwnedBy("fleet", "alice")
	conn := connect(t, srv.URLFor("alice", "a", "fleet"))
	run(t, conn, "CREATE TABLE t (x int PRIMARY KEY, b bytea)")
	run(t, conn, "INSERT INTO t SELECT i, decode(md5(i::text), 'hex') FROM generate_series(1, 100) i")
	dump := filepath.Join(t.TempDir(), "fleet.dump")
	srv.Dump("fleet", dump)

	// Changes after the dump, then restore the older state.
	run(t, conn, "INSERT INTO t SELECT i, '\\x00' FROM generate_series(101, 150) i")
	run(t, conn, "CREATE TABLE later (y int)")
	srv.Restore(dump, "fleet")
	if !conn.IsClosed() {
		if err := conn.Ping(context.Background()); err == nil {
			t.Error("a session of the replaced database survived Restore")
		}
	}
	conn = connect(t, srv.URLFor("alice", "a", "fleet"))
	if n := count(t, conn, "t"); n != 100 {
		t.Errorf("%d rows after restoring, want the dump's 100", n)
	}
	var later *string
	if err := conn.QueryRow(context.Background(), "SELECT to_regclass('later')::text").Scan(&later); err != nil || later != nil {
		t.Errorf("table made after the dump is still there: %v %v", later, err)
	}
	// alice still owns the database and its table, and can write.
	run(t, conn, "INSERT INTO t VALUES (1000, NULL)")

	// Restore into a database that does not exist yet.
	srv.Restore(dump, "copy")
	if n := count(t, connect(t, srv.URL("copy")), "t"); n != 100 {
		t.Errorf("%d rows in the copy, want 100", n)
	}
}

// selfSignedCA returns a CA certificate (PEM) that signed nothing.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "another CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
