package pgserver

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestErrorsAndClose: misuse is an error, not a crash; Settings reach
// postgresql.conf; Close stops the server and removes its directory.
func TestErrorsAndClose(t *testing.T) {
	s, err := Start(&Options{Settings: map[string]string{"shared_buffers": "32MB", "max_wal_size": "'2GB'"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("Start while running: %v", err)
	}
	if _, err := s.TCPURL("postgres"); err == nil || !strings.Contains(err.Error(), "without Options.TCP") {
		t.Errorf("TCPURL without TCP: %v", err)
	}
	if err := s.Exec("postgres", "SELECT nonsense FROM nowhere"); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("Exec of a bad statement: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	var sb, wal string
	if err := conn.QueryRow(ctx, "SELECT current_setting('shared_buffers'), current_setting('max_wal_size')").Scan(&sb, &wal); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if sb != "32MB" || wal != "2GB" {
		t.Errorf("shared_buffers=%s max_wal_size=%s, want the Settings' 32MB and 2GB", sb, wal)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Kill while stopped: %v", err)
	}
	if err := s.Stop(); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Stop while stopped: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Error("running after Close")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Close: %v", dir, err)
	}
}

// TestStartFailsCleanly: a server that cannot start (a setting postgres
// refuses) is an error quoting the server's log, and leaves no directory.
func TestStartFailsCleanly(t *testing.T) {
	s, err := Start(&Options{Settings: map[string]string{"shared_buffers": "'lots'"}})
	if err == nil {
		s.Close()
		t.Fatal("a server with shared_buffers = 'lots' started")
	}
	if !strings.Contains(err.Error(), "shared_buffers") {
		t.Errorf("the error does not quote the server's complaint: %v", err)
	}
	m := regexp.MustCompile(`\((\S+)/postgres\.log\)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the error does not name the server's log: %v", err)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", m[1], err)
	}
}
