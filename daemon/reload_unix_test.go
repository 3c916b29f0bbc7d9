//go:build unix

package daemon

import (
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// SIGHUP makes the socket file again if it was removed, and reloads the
// configuration.
func TestReloadOnSignal(t *testing.T) {
	// The test's own registration: a SIGHUP sent before the daemon's
	// reload loop has registered must not end the test process.
	own := make(chan os.Signal, 1)
	signal.Notify(own, syscall.SIGHUP)
	defer signal.Stop(own)

	root := t.TempDir()
	var reloads atomic.Int32
	cfg := Config{Roots: []string{root}, NoWatch: true}
	cfg.Reload = func() (Config, error) {
		reloads.Add(1)
		return Config{Roots: []string{root}, NoWatch: true}, nil
	}
	cfg.Socket = filepath.Join(t.TempDir(), "s.sock")
	cfg.SocketCheckEvery = time.Hour // only SIGHUP makes the socket again
	d, logs := startDaemon(t, cfg)
	if err := os.Remove(d.cfg.Socket); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for reloads.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no reload 10s after SIGHUP\n%s", logs.String())
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The socket is seen to before the configuration is reloaded.
	if _, err := os.Stat(d.cfg.Socket); err != nil {
		t.Fatalf("socket file not made again on SIGHUP: %v\n%s", err, logs.String())
	}
}
