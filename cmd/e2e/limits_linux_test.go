package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// openFDs counts the file descriptors process pid holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// dialMany opens n connections to socket; every other one sends the start
// of a request header and no more (a slowloris).
func dialMany(t *testing.T, socket string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range n {
		c, err := net.Dial("unix", socket)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 1 {
			io.WriteString(c, "GET /v1/status HTTP/1.1\r\nHo")
		}
	}
	return conns
}

// TestIdleConnectionsDoNotStopClients holds hundreds of idle and slowloris
// connections to the real daemon: sifctl is still answered at once, well
// before the header timeout would free them, and the daemon holds no more
// than its connection cap of them.
func TestIdleConnectionsDoNotStopClients(t *testing.T) {
	e := newEnv(t)
	q := e.write("a.txt", words(1, 20000))
	e.write("b.txt", words(1, 20000))
	e.start()
	pid := e.daemon.Process.Pid
	before := openFDs(t, pid)
	const idle = 400
	dialMany(t, e.socket, idle)
	for _, args := range [][]string{{"status"}, {"similar", q}, {"status"}} {
		start := time.Now()
		if r := e.sifctl(args...); r.code != 0 {
			t.Fatalf("sifctl %v with %d idle connections: exit %d: %s", args, idle, r.code, r.stderr)
		}
		// The header timeout is 10 s: an answer within 5 s shows the
		// idle connections did not have to time out first.
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("sifctl %v with %d idle connections took %s", args, idle, took)
		}
	}
	got := openFDs(t, pid) - before
	t.Logf("sifd holds %d more descriptors with %d idle connections", got, idle)
	if got > ipc.DefaultMaxConns+8 {
		t.Errorf("sifd holds %d more descriptors with %d idle connections, want at most about its cap of %d", got, idle, ipc.DefaultMaxConns)
	}
}

// TestBusyDaemon fills every request slot of the real daemon with requests
// whose bodies never come: sifctl retries, then says the daemon is busy
// and exits 2; once they are gone it is answered again.
func TestBusyDaemon(t *testing.T) {
	e := newEnv(t)
	q := e.write("a.txt", words(1, 20000))
	e.write("b.txt", words(1, 20000))
	e.start()
	conns := make([]net.Conn, 0, ipc.DefaultMaxConcurrent)
	for range ipc.DefaultMaxConcurrent {
		c, err := net.Dial("unix", e.socket)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		io.WriteString(c, "POST /v1/similar HTTP/1.1\r\nHost: sifd\r\nContent-Length: 100000\r\n\r\n{")
	}
	// Once the daemon has taken them all, a request is refused.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("unix", e.socket)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET /v1/info HTTP/1.1\r\nHost: sifd\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
			if got := resp.Header.Get("Retry-After"); got != "1" {
				t.Errorf("busy answer with Retry-After %q, want 1", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon is not busy with %d requests held: %v %v", ipc.DefaultMaxConcurrent, resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	r := e.sifctl("similar", q)
	took := time.Since(start)
	if r.code != 2 || !strings.HasPrefix(r.stderr, "sifctl: sifd is busy") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("sifctl similar while busy: exit %d, stderr %q; want 2 and one line saying sifd is busy", r.code, r.stderr)
	}
	// It retried, honouring Retry-After: 1 s between tries.
	if took < 3*time.Second {
		t.Errorf("sifctl gave up after %s: it did not wait between its tries", took)
	}
	for _, c := range conns {
		c.Close()
	}
	if r := e.sifctl("similar", q); r.code != 0 {
		t.Errorf("sifctl similar once the held requests are gone: exit %d: %s", r.code, r.stderr)
	}
}
