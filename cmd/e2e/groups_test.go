//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// TestGroupsStreamedFiltered indexes 600 pairs of similar files, 200 of
// them in a directory only root may enter, and asks the real sifd for
// groups through the real sifctl: the answer comes in pieces, not as one
// write of the whole (read off the socket by hand), is whole and valid
// JSON with --json, and a user who may not read the hidden pairs gets
// only the others, printed and counted.
func TestGroupsStreamedFiltered(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: sifd and sifctl run as other users here (CI runs as root)")
	}
	e := newEnv(t)
	os.Chmod(e.root, 0o755)
	const open, hidden = 400, 200
	for i := range open + hidden {
		dir := "open"
		if i >= open {
			dir = "closed"
		}
		base := words(uint64(5000+i), 500)
		e.write(fmt.Sprintf("%s/%03d/a.txt", dir, i), base)
		e.write(fmt.Sprintf("%s/%03d/b.txt", dir, i), edit(uint64(9000+i), base, 0.1))
	}
	for _, d := range []string{"open", "closed"} {
		filepath.WalkDir(filepath.Join(e.root, d), func(p string, de os.DirEntry, err error) error {
			if err == nil && de.IsDir() {
				os.Chmod(p, 0o755)
			}
			return err
		})
	}
	must(t, os.Chmod(filepath.Join(e.root, "closed"), 0o700))
	e.daemonAttr = asSystemService()
	e.start("--socket-access", "all")
	if got := e.status().Index.Files; got != 2*(open+hidden) {
		t.Fatalf("%d files indexed, want %d\n%s", got, 2*(open+hidden), e.logs.String())
	}

	// In pieces: a server that wrote the answer whole sends it as one chunk.
	chunks, body := rawChunks(t, e.socket, "/v1/groups")
	var whole ipc.GroupsResponse
	if err := json.Unmarshal(body, &whole); err != nil || len(whole.Groups) != open+hidden {
		t.Fatalf("groups read off the socket: %v, %d groups, want %d", err, len(whole.Groups), open+hidden)
	}
	biggest := 0
	for _, n := range chunks {
		biggest = max(biggest, n)
	}
	if len(chunks) < 3 || biggest > 40<<10 {
		t.Errorf("an answer of %d bytes came in %d chunks, the largest %d bytes: want it sent in pieces of about 32 KiB", len(body), len(chunks), biggest)
	}

	for _, c := range []struct {
		w      who
		groups int
	}{{asRoot, open + hidden}, {asAlice, open}} {
		r := e.sifctlAs(c.w, "groups", "--json")
		var g ipc.GroupsResponse
		if err := json.Unmarshal([]byte(r.stdout), &g); err != nil || r.code != 0 {
			t.Fatalf("groups --json as %s: exit %d, %v\n%.300s", c.w.name, r.code, err, r.stderr)
		}
		if len(g.Groups) != c.groups || g.Threshold != 25 || g.ElapsedNs <= 0 {
			t.Errorf("groups --json as %s: %d groups, threshold %v, elapsed %d; want %d", c.w.name, len(g.Groups), g.Threshold, g.ElapsedNs, c.groups)
		}
		for _, grp := range g.Groups {
			for _, p := range groupPaths(grp) {
				if c.w != asRoot && strings.Contains(p, "/closed/") {
					t.Fatalf("groups as %s lists %s, which it may not read", c.w.name, p)
				}
			}
			if len(grp.Members) != 1 {
				t.Fatalf("group of %s: %d members, want 1", grp.Reference.Path, len(grp.Members))
			}
		}
		r = e.sifctlAs(c.w, "groups")
		want := fmt.Sprintf("\n%d groups of similar files, %d files.\n", c.groups, 2*c.groups)
		if r.code != 0 || !strings.HasSuffix(r.stdout, want) || strings.Count(r.stdout, "R100 ") != c.groups {
			t.Errorf("groups as %s: exit %d, %d groups printed, want %d and the line %q; ends with\n%s", c.w.name, r.code,
				strings.Count(r.stdout, "R100 "), c.groups, want, r.stdout[max(0, len(r.stdout)-300):])
		}
		if c.w != asRoot && strings.Contains(r.stdout, "/closed/") {
			t.Errorf("groups as %s prints files it may not read", c.w.name)
		}
	}
}

// rawChunks asks GET path over the socket with HTTP/1.1 by hand and
// returns the sizes of the chunks the answer came in, and its body.
func rawChunks(t *testing.T, socket, path string) ([]int, []byte) {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: sifd\r\nConnection: close\r\n\r\n", path)
	tp := textproto.NewReader(bufio.NewReaderSize(c, 1<<20))
	status, err := tp.ReadLine()
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("GET %s: %q %v", path, status, err)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("Transfer-Encoding") != "chunked" {
		t.Fatalf("GET %s: not chunked (header %v)", path, h)
	}
	var sizes []int
	var body []byte
	for {
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatalf("chunk size: %v", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		if err != nil {
			t.Fatalf("chunk size %q: %v", line, err)
		}
		if n == 0 {
			return sizes, body
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(tp.R, b); err != nil {
			t.Fatalf("chunk of %d bytes: %v", n, err)
		}
		sizes, body = append(sizes, int(n)), append(body, b[:n]...)
	}
}
