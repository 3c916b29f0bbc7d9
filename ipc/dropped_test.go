//go:build unix

package ipc

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// dropFirst serves on a Unix socket: it closes the connections of its
// first drops requests once it has read them, unanswered, and answers the
// others with an empty JSON object.
func dropFirst(t *testing.T, drops int32) (sock string, requests *atomic.Int32) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	requests = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(r); err != nil {
						return
					}
					if requests.Add(1) <= drops {
						return // closed, unanswered
					}
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"))
				}
			}()
		}
	}()
	return sock, requests
}

// A request that only reads is sent again when the daemon closes the
// connection before it answers (as a daemon does to a user at its share
// of connections); one that changes something is not, and fails.
func TestReadOnlyRequestsSurviveDroppedConnections(t *testing.T) {
	ctx := context.Background()
	sock, n := dropFirst(t, 2)
	if _, err := NewClient(sock).Status(ctx); err != nil {
		t.Fatalf("status after two dropped connections: %v", err)
	}
	if got := n.Load(); got != 3 {
		t.Errorf("%d requests reached the daemon, want 3 (two dropped, one answered)", got)
	}

	sock, n = dropFirst(t, 1)
	_, err := NewClient(sock).Rescan(ctx, "/srv")
	if err == nil {
		t.Fatal("a rescan whose connection was dropped succeeded")
	}
	if got := n.Load(); got != 1 {
		t.Errorf("a rescan reached the daemon %d times, want once: it changes something, and is not sent again", got)
	}
}
