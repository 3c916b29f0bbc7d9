package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPprofLoopbackOnly: --pprof serves the runtime profiles on a loopback
// address, refuses any other, and stops with its context.
func TestPprofLoopbackOnly(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0", "127.0.0.1"} {
		if err := servePprof(context.Background(), addr, log); err == nil || !strings.Contains(err.Error(), "--pprof") {
			t.Errorf("--pprof %s: %v, want an error naming the flag", addr, err)
		}
	}
	// A free port on the loopback.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if err := servePprof(ctx, addr, log); err != nil {
		t.Fatalf("--pprof %s: %v", addr, err)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/block", "/debug/pprof/mutex"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(b) == 0 {
			t.Errorf("GET %s: %s, %d bytes", path, resp.Status, len(b))
		}
	}
	cancel()
	// Once stopped, nothing answers.
	for range 100 {
		if _, err := http.Get("http://" + addr + "/debug/pprof/"); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("the profiles are still served on %s after the context ended", addr)
}
