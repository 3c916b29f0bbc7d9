package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/daemon"
)

// TestProgram runs the daemon the way a service manager does: Start
// returns at once, Stop cancels and waits.
func TestProgram(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte(strings.Repeat("sif service test\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "sifsvc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "s.sock")
	p := newProgram(context.Background(), daemon.Config{Roots: []string{root}, DB: filepath.Join(t.TempDir(), "db"), Socket: sock})
	start := time.Now()
	if err := p.Start(nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Start blocked for %s", d)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not create its socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	waited := make(chan struct{})
	go func() { p.wait(); close(waited) }()
	if err := p.Stop(nil); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return after the daemon stopped")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind after Stop: %v", err)
	}
}

// TestProgramFails: a daemon that cannot start ends wait, and its error is
// the result.
func TestProgramFails(t *testing.T) {
	p := newProgram(context.Background(), daemon.Config{})
	p.stopTimeout = time.Second
	if err := p.Start(nil); err != nil {
		t.Fatal(err)
	}
	p.wait()
	if err := p.result(); err == nil || !strings.Contains(err.Error(), "no roots") {
		t.Errorf("result = %v, want the no-roots error", err)
	}
	if err := p.Stop(nil); err == nil {
		t.Error("Stop after a failed start returned nil")
	}
}

// startProgram starts a daemon on a fresh root through p's Start and waits
// until it serves its socket.
func startProgram(t *testing.T, ctx context.Context) *program {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "sifsvc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s.sock")
	p := newProgram(ctx, daemon.Config{Roots: []string{t.TempDir()}, DB: filepath.Join(t.TempDir(), "db"), Socket: sock})
	p.exit = func(code int) { t.Errorf("exit(%d) after a stop", code) }
	if err := p.Start(nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(sock); err == nil {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not create its socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProgramRootContext: the service waits on the root context that
// main's SIGINT/SIGTERM handler cancels, with no signal handler of its own:
// cancelling it ends wait and stops the daemon cleanly, and a daemon
// stopped so does not exit the process, even where failures do.
func TestProgramRootContext(t *testing.T) {
	// wait returns on the context alone, before the daemon has returned.
	stuck, cancelStuck := context.WithCancel(context.Background())
	q := &program{parent: stuck, done: make(chan struct{})}
	waited := make(chan struct{})
	go func() { q.wait(); close(waited) }()
	cancelStuck()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return when the root context was cancelled")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := startProgram(t, ctx)
	p.exitOnFailure = true
	waited = make(chan struct{})
	go func() { p.wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("wait returned while the daemon runs")
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return after the root context was cancelled")
	}
	if err := p.Stop(nil); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := p.result(); err != nil {
		t.Errorf("result = %v, want nil for a daemon stopped by its context", err)
	}
}

// TestProgramExitsOnFailure: where the service manager notices a failure
// only by the process's death (Windows), a daemon that fails on its own
// ends the process with exitError; elsewhere it does not.
func TestProgramExitsOnFailure(t *testing.T) {
	for _, exits := range []bool{true, false} {
		p := newProgram(context.Background(), daemon.Config{})
		p.exitOnFailure = exits
		codes := make(chan int, 1)
		p.exit = func(code int) { codes <- code }
		if err := p.Start(nil); err != nil {
			t.Fatal(err)
		}
		p.wait()
		select {
		case code := <-codes:
			if !exits || code != exitError {
				t.Errorf("exitOnFailure %v: exit(%d), want %s", exits, code, map[bool]string{true: "exit(2)", false: "no exit"}[exits])
			}
		case <-time.After(time.Second):
			if exits {
				t.Errorf("exitOnFailure: the failed daemon did not end the process")
			}
		}
	}
}
