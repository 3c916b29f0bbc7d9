package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/server"
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

// slowBodies opens n connections to socket that each announce a query body
// of the largest size accepted and send its first byte only.
func slowBodies(t *testing.T, socket string, n int) {
	t.Helper()
	for i := range n {
		c, err := net.Dial("unix", socket)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /v1/similar HTTP/1.1\r\nHost: sifd\r\nContent-Length: %d\r\n\r\n{", server.DefaultMaxBody)
	}
}

// TestIdleConnectionsDoNotStopClients holds hundreds of idle and slowloris
// connections to the real daemon, and hundreds more sending their
// requests' bodies slowly, each announcing 64 MiB: sifctl is still
// answered at once, well before the header and body timeouts would free
// them, and the daemon holds no more than its connection cap of them.
func TestIdleConnectionsDoNotStopClients(t *testing.T) {
	e := newEnv(t)
	q := e.write("a.txt", words(1, 20000))
	e.write("b.txt", words(1, 20000))
	e.start()
	pid := e.daemon.Process.Pid
	before := openFDs(t, pid)
	const idle, slow = 400, 200
	dialMany(t, e.socket, idle)
	slowBodies(t, e.socket, slow)
	for _, args := range [][]string{{"status"}, {"similar", q}, {"status"}, {"similar", q}} {
		start := time.Now()
		if r := e.sifctl(args...); r.code != 0 {
			t.Fatalf("sifctl %v with %d idle and %d slow connections: exit %d: %s", args, idle, slow, r.code, r.stderr)
		}
		// The header timeout is 10 s and the body's 30 s: an answer
		// within 5 s shows the slow connections did not have to time out
		// first.
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("sifctl %v with %d idle and %d slow connections took %s", args, idle, slow, took)
		}
	}
	got := openFDs(t, pid) - before
	t.Logf("sifd holds %d more descriptors with %d idle and %d slow connections", got, idle, slow)
	if got > server.DefaultMaxConns+8 {
		t.Errorf("sifd holds %d more descriptors with %d idle and %d slow connections, want at most about its cap of %d", got, idle, slow, server.DefaultMaxConns)
	}
}

// TestBusyDaemon fills every request slot of the real daemon with queries
// whose large answers are never read: a request waits its turn for a
// second, then is answered busy; sifctl retries, then says the daemon is
// busy and exits 2; once the stalled clients are gone it is answered
// again.
func TestBusyDaemon(t *testing.T) {
	e := newEnv(t)
	// Identical files with long names: a query for one lists the others,
	// an answer of about a megabyte, more than the socket holds.
	content := words(1, 300)
	var q string
	for i := range 3000 {
		q = e.write(fmt.Sprintf("d%d/a-file-name-long-enough-to-make-the-answer-to-a-query-large-%05d.txt", i/500, i), content)
	}
	e.start()
	info, err := ipc.NewClient(e.socket).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sk, err := ipc.SketchFile(q, info.Params)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(ipc.NewSimilarRequest(q, sk))
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 0, server.DefaultMaxConcurrent)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range server.DefaultMaxConcurrent {
		c, err := net.Dial("unix", e.socket)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /v1/similar HTTP/1.1\r\nHost: sifd\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	// Once the daemon is writing their answers, a request waits for a slot,
	// then is refused.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("unix", e.socket)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		io.WriteString(c, "GET /v1/info HTTP/1.1\r\nHost: sifd\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		took := time.Since(start)
		c.Close()
		if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
			if got := resp.Header.Get("Retry-After"); got != "1" {
				t.Errorf("busy answer with Retry-After %q, want 1", got)
			}
			if took < 900*time.Millisecond || took > 5*time.Second {
				t.Errorf("busy answer after %s, want it after the queue wait of 1 s", took)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon is not busy with %d answers unread: %v %v", server.DefaultMaxConcurrent, resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	r := e.sifctl("similar", q)
	took := time.Since(start)
	if r.code != 2 || !strings.HasPrefix(r.stderr, "sifctl: sifd is busy") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("sifctl similar while busy: exit %d, stderr %q; want 2 and one line saying sifd is busy", r.code, r.stderr)
	}
	// It retried, each try waiting its turn for a second, then honouring
	// Retry-After: 1 s.
	if took < 5*time.Second {
		t.Errorf("sifctl gave up after %s: its tries did not wait", took)
	}
	for _, c := range conns {
		c.Close()
	}
	if r := e.sifctl("similar", q); r.code != 0 {
		t.Errorf("sifctl similar once the stalled clients are gone: exit %d: %s", r.code, r.stderr)
	}
}
