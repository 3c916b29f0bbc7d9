package pgserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options says how to start a server. A nil *Options means the
// defaults: a Unix socket only, no TLS, superuser "postgres" with a random
// password, synchronous commit off, 16 MB of shared buffers.
type Options struct {
	// TCP makes the server also listen on 127.0.0.1, on a free port
	// (TCPURL).
	TCP bool
	// TLS turns on TLS with a certificate for localhost and 127.0.0.1
	// signed by a CA made for this server (CAFile). It implies TCP, and
	// TCP clients must then use TLS (pg_hba has only hostssl lines for
	// 127.0.0.1); the Unix socket stays without TLS.
	TLS bool
	// User and Password are the superuser's; empty means "postgres" and a
	// random password.
	User, Password string
	// SynchronousCommit keeps synchronous_commit on, so a transaction
	// acknowledged before Kill survives it. Off by default, for speed.
	SynchronousCommit bool
	// MaxConnections is the server's max_connections; 0 means 100.
	MaxConnections int
	// Settings are more lines of postgresql.conf, name to value (the
	// value as postgresql.conf spells it, quoted where it must be), set
	// after the defaults above and so overriding them: a benchmark raises
	// shared_buffers or max_wal_size here.
	Settings map[string]string
}

// EnvBin names the environment variable that, when set, is the directory
// holding PostgreSQL's server binaries (initdb, postgres, pg_dump,
// pg_restore).
const EnvBin = "SIF_TEST_PGBIN"

// How long the server may take to accept connections after it starts, and
// to shut down after SIGINT before it is killed.
const (
	readyTimeout = 90 * time.Second
	stopTimeout  = 30 * time.Second
)

// Server is a PostgreSQL server started by Start. Its methods must not be
// called concurrently with each other; the URLs they return may be used
// from any goroutine.
type Server struct {
	bin      string // directory of the server binaries
	dir      string // the temporary directory: socket, log, certificates
	data     string // the cluster's data directory, under dir
	logPath  string
	port     int // TCP port, and the number in the socket's name
	tcp, tls bool
	user     string
	password string
	runAs    *account // nil: as this process's user

	proc *process // nil when stopped
}

// Start starts a fresh PostgreSQL server in a new temporary directory and
// returns it; opts may be nil. The caller must Close it, which stops the
// server and removes the directory. Start fails when PostgreSQL's server
// binaries are not installed (saying what to install) or the server does
// not start (with the end of its log); it then leaves nothing behind.
func Start(opts *Options) (_ *Server, err error) {
	if opts == nil {
		opts = &Options{}
	}
	if err := supported(); err != nil {
		return nil, err
	}
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	s := &Server{
		bin:      bin,
		tcp:      opts.TCP || opts.TLS,
		tls:      opts.TLS,
		user:     opts.User,
		password: opts.Password,
		port:     5432,
	}
	if s.user == "" {
		s.user = "postgres"
	}
	if s.password == "" {
		s.password = randomHex(16)
	}
	if os.Geteuid() == 0 {
		if s.runAs, err = serverAccount(); err != nil {
			return nil, err
		}
	}
	if s.dir, err = shortTempDir(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.data = filepath.Join(s.dir, "data")
	s.logPath = filepath.Join(s.dir, "postgres.log")
	if s.tcp {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
	}
	if err := s.initdb(opts); err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// findBin returns the directory holding initdb and postgres.
func findBin() (string, error) {
	has := func(dir string) bool {
		for _, name := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(EnvBin); dir != "" {
		if !has(dir) {
			return "", fmt.Errorf("pgserver: %s=%s holds no initdb and postgres", EnvBin, dir)
		}
		return dir, nil
	}
	// Debian: /usr/lib/postgresql/<major>/bin, the highest major first.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); has(dir) {
			return dir, nil
		}
	}
	return "", errors.New("pgserver: PostgreSQL's server is needed " +
		"(initdb and postgres were not found in /usr/lib/postgresql/*/bin nor by pg_config): " +
		"apt-get install postgresql (as .ci/run does), or set " + EnvBin + " to the directory holding them")
}

// majorOf returns the version number in /usr/lib/postgresql/<n>/bin, or -1.
func majorOf(dir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
	if err != nil {
		return -1
	}
	return v
}

// shortTempDir makes the server's directory. Not t.TempDir: its path,
// with the socket's name, would overflow a Unix socket's 107 bytes.
func shortTempDir() (string, error) {
	dir, err := os.MkdirTemp("", "sifpg")
	if err == nil && len(dir)+len("/.s.PGSQL.65535") > 107 {
		os.RemoveAll(dir)
		dir, err = os.MkdirTemp("/tmp", "sifpg")
	}
	if err != nil {
		return "", fmt.Errorf("pgserver: %w", err)
	}
	// Anyone may reach the socket (a daemon running as nobody); the data
	// directory below stays 0700.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("pgserver: %w", err)
	}
	return dir, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgserver: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// initdb makes the cluster and writes its configuration.
func (s *Server) initdb(opts *Options) error {
	if err := s.chown(s.dir); err != nil {
		return err
	}
	pwfile := filepath.Join(s.dir, "pwfile")
	if err := s.writeFile(pwfile, []byte(s.password+"\n"), 0o600); err != nil {
		return err
	}
	out, err := s.command("initdb", "-D", s.data, "-U", s.user, "--pwfile="+pwfile,
		"--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync").CombinedOutput()
	os.Remove(pwfile)
	if err != nil {
		return fmt.Errorf("pgserver: initdb in %s: %v\n%s", s.data, err, out)
	}
	if s.tls {
		if err := s.writeCerts(); err != nil {
			return err
		}
	}
	listen := ""
	if s.tcp {
		listen = "127.0.0.1"
	}
	maxConn := opts.MaxConnections
	if maxConn == 0 {
		maxConn = 100
	}
	syncCommit := "off"
	if opts.SynchronousCommit {
		syncCommit = "on"
	}
	conf := fmt.Sprintf(`
# pgserver: fast rather than durable.
listen_addresses = '%s'
port = %d
unix_socket_directories = '%s'
unix_socket_permissions = 0777
max_connections = %d
shared_buffers = 16MB
huge_pages = off
fsync = off
synchronous_commit = %s
full_page_writes = off
logging_collector = off
`, listen, s.port, s.dir, maxConn, syncCommit)
	names := make([]string, 0, len(opts.Settings))
	for name := range opts.Settings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		conf += name + " = " + opts.Settings[name] + "\n"
	}
	hba := "local all all scram-sha-256\n"
	if s.tls {
		conf += fmt.Sprintf("ssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\n",
			filepath.Join(s.dir, "server.crt"), filepath.Join(s.dir, "server.key"))
		hba += "hostssl all all 127.0.0.1/32 scram-sha-256\n"
	} else if s.tcp {
		hba += "host all all 127.0.0.1/32 scram-sha-256\n"
	}
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		// The file keeps its owner (the server's user): it is rewritten,
		// not replaced.
		err = os.WriteFile(filepath.Join(s.data, "pg_hba.conf"), []byte(hba), 0o600)
	}
	if err != nil {
		return fmt.Errorf("pgserver: configuring the cluster: %w", err)
	}
	return nil
}

// writeFile writes a file that the server's user owns.
func (s *Server) writeFile(path string, data []byte, perm os.FileMode) error {
	if err := os.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	return s.chown(path)
}

func (s *Server) chown(path string) error {
	if s.runAs == nil {
		return nil
	}
	if err := os.Chown(path, s.runAs.uid, s.runAs.gid); err != nil {
		return fmt.Errorf("pgserver: giving %s to %s: %w", path, s.runAs.name, err)
	}
	return nil
}

// command returns a command running one of the server's binaries as the
// server's user, in the server's directory.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
	cmd.SysProcAttr = sysProcAttr(s.runAs)
	return cmd
}

// Start starts the server again after Stop or Kill, on the same data,
// port and socket, and waits until it accepts connections. Start (the
// function) already started it once.
func (s *Server) Start() error {
	if s.proc != nil {
		return errors.New("pgserver: Start: the server is already running")
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	defer logf.Close()
	cmd := s.command("postgres", "-D", s.data)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	proc, err := startProcess(cmd)
	if err != nil {
		return fmt.Errorf("pgserver: starting postgres: %w", err)
	}
	s.proc = proc
	if err := s.waitReady(); err != nil {
		return fmt.Errorf("pgserver: %v after %v; the end of the server's log (%s):\n%s",
			err, time.Since(start).Round(time.Millisecond), s.logPath, s.LogTail(4000))
	}
	return nil
}

// waitReady connects until the server answers, it exits, or readyTimeout.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.proc.done:
			s.proc = nil
			return errors.New("postgres exited while starting")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("postgres did not accept connections (last: %v)", last)
}

// Stop shuts the server down cleanly (SIGINT: PostgreSQL's fast shutdown,
// which ends sessions and writes a checkpoint), killing it if it has not
// exited within 30 s (and saying so). Start starts it again.
func (s *Server) Stop() error {
	if s.proc == nil {
		return errors.New("pgserver: Stop: the server is not running")
	}
	return s.stop()
}

func (s *Server) stop() error {
	p := s.proc
	s.proc = nil
	p.interrupt()
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		p.killGroup()
		<-p.done
		p.waitGroupGone(10 * time.Second)
		return fmt.Errorf("pgserver: postgres did not stop within %v of SIGINT and was killed", stopTimeout)
	}
}

// Kill kills the server and every process it started at once (SIGKILL),
// as a crash would, and waits until they are gone. Start then recovers the
// cluster from its write-ahead log.
func (s *Server) Kill() error {
	if s.proc == nil {
		return errors.New("pgserver: Kill: the server is not running")
	}
	p := s.proc
	s.proc = nil
	p.killGroup()
	<-p.done
	// Until every killed process is gone, its shared memory is in use and
	// a new server on the same data refuses to start.
	p.waitGroupGone(10 * time.Second)
	return nil
}

// Pause stops the server and every process it started (SIGSTOP), as a
// server that no longer answers: connections stay open and requests wait.
// Resume lets it go on.
func (s *Server) Pause() error {
	if s.proc == nil {
		return errors.New("pgserver: Pause: the server is not running")
	}
	s.proc.pause(true)
	return nil
}

// Resume lets a paused server go on (SIGCONT).
func (s *Server) Resume() error {
	if s.proc == nil {
		return errors.New("pgserver: Resume: the server is not running")
	}
	s.proc.pause(false)
	return nil
}

// Running reports whether the server is running (started and not stopped
// or killed by a method of s).
func (s *Server) Running() bool { return s.proc != nil }

// Close stops the server if it is running and removes its directory,
// data and all. It returns the error of stopping, if any; the directory
// is removed regardless.
func (s *Server) Close() error {
	var err error
	if s.proc != nil {
		err = s.stop()
	}
	if rerr := os.RemoveAll(s.dir); err == nil && rerr != nil {
		err = fmt.Errorf("pgserver: %w", rerr)
	}
	return err
}

// Log returns the server's log so far (its standard error, over every
// Start).
func (s *Server) Log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// LogTail returns at most the last n bytes of the server's log.
func (s *Server) LogTail(n int) string {
	log := s.Log()
	if len(log) > n {
		log = "..." + log[len(log)-n:]
	}
	return log
}

// Bin returns the directory of the server's binaries (initdb, postgres,
// psql, pg_dump, pg_restore).
func (s *Server) Bin() string { return s.bin }

// Dir returns the server's temporary directory, which also holds its Unix
// socket.
func (s *Server) Dir() string { return s.dir }

// Port returns the server's TCP port (with Options.TCP), which is also the
// number in its socket's name.
func (s *Server) Port() int { return s.port }

// User and Password return the superuser's name and password.
func (s *Server) User() string     { return s.user }
func (s *Server) Password() string { return s.password }

// CAFile returns the path of the CA certificate (PEM) that signed the
// server's certificate; "" unless started with Options.TLS.
func (s *Server) CAFile() string {
	if !s.tls {
		return ""
	}
	return filepath.Join(s.dir, "ca.crt")
}

// URL returns a postgres:// URL for the superuser and database db over the
// Unix socket (the socket's directory in the host parameter, as pgx and
// libpq read it).
func (s *Server) URL(db string) string { return s.URLFor(s.user, s.password, db) }

// URLFor returns a postgres:// URL for user with password and database db
// over the Unix socket.
func (s *Server) URLFor(user, password, db string) string {
	q := url.Values{"host": {s.dir}, "port": {strconv.Itoa(s.port)}, "sslmode": {"disable"}}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Path: "/" + db, RawQuery: q.Encode()}
	return u.String()
}

// TCPURL returns a postgres:// URL for the superuser and database db over
// TCP to 127.0.0.1; see TCPURLFor.
func (s *Server) TCPURL(db string) (string, error) { return s.TCPURLFor(s.user, s.password, db) }

// TCPURLFor returns a postgres:// URL for user with password and database
// db over TCP to 127.0.0.1. With Options.TLS it asks for
// sslmode=verify-full with CAFile as the root; else sslmode=disable. It
// fails when the server was started without Options.TCP.
func (s *Server) TCPURLFor(user, password, db string) (string, error) {
	if !s.tcp {
		return "", errors.New("pgserver: TCPURL: the server was started without Options.TCP")
	}
	q := url.Values{"sslmode": {"disable"}}
	if s.tls {
		q = url.Values{"sslmode": {"verify-full"}, "sslrootcert": {s.CAFile()}}
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), Path: "/" + db, RawQuery: q.Encode()}
	return u.String(), nil
}

// Exec runs sql with args as the superuser in database db, on a
// connection of its own.
func (s *Server) Exec(db, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL(db))
	if err != nil {
		return fmt.Errorf("pgserver: connecting to %s: %w", db, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("pgserver: in %s: %s: %w", db, sql, err)
	}
	return nil
}

// CreateDB creates database name, owned by the superuser.
func (s *Server) CreateDB(name string) error {
	return s.Exec("postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// CreateDBOwnedBy creates database name owned by role owner, who may then
// create tables in it.
func (s *Server) CreateDBOwnedBy(name, owner string) error {
	return s.Exec("postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" OWNER "+pgx.Identifier{owner}.Sanitize())
}

// CreateRole creates a role that may log in with password.
func (s *Server) CreateRole(name, password string) error {
	return s.Exec("postgres", "CREATE ROLE "+pgx.Identifier{name}.Sanitize()+" LOGIN PASSWORD "+quoteLiteral(password))
}

// quoteLiteral quotes s as an SQL string literal (standard_conforming_strings
// is on, so only quotes are doubled).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// clientEnv is the environment of pg_dump and pg_restore: the superuser
// over the Unix socket.
func (s *Server) clientEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C",
		"PGHOST=" + s.dir, "PGPORT=" + strconv.Itoa(s.port),
		"PGUSER=" + s.user, "PGPASSWORD=" + s.password, "PGSSLMODE=disable"}
}

// Dump writes database db to path with pg_dump, in its custom format.
func (s *Server) Dump(db, path string) error {
	cmd := exec.Command(filepath.Join(s.bin, "pg_dump"), "--format=custom", "--file="+path, "--dbname="+db)
	cmd.Env = s.clientEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgserver: pg_dump of %s: %v\n%s", db, err, out)
	}
	return nil
}

// Restore replaces database db with the dump at path (made by Dump): it
// drops db if it exists (ending its sessions), creates it again with the
// same owner (the superuser when it did not exist) and restores the dump
// into it with pg_restore, in one transaction.
func (s *Server) Restore(path, db string) error {
	owner := s.user
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgserver: Restore: %w", err)
	}
	err = conn.QueryRow(ctx, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1", db).Scan(&owner)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		conn.Close(ctx)
		return fmt.Errorf("pgserver: Restore: %w", err)
	}
	id := pgx.Identifier{db}.Sanitize()
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+id+" WITH (FORCE)")
	if err == nil {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+id+" OWNER "+pgx.Identifier{owner}.Sanitize())
	}
	conn.Close(ctx)
	if err != nil {
		return fmt.Errorf("pgserver: Restore: recreating %s: %w", db, err)
	}
	cmd := exec.Command(filepath.Join(s.bin, "pg_restore"), "--exit-on-error", "--single-transaction", "--dbname="+db, path)
	cmd.Env = s.clientEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgserver: pg_restore of %s into %s: %v\n%s", path, db, err, bytes.TrimSpace(out))
	}
	return nil
}
