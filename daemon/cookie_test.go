package daemon

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Wait is synchronised by a cookie however the root is set up. On Linux
// the cookie is the daemon's own: with hidden files excluded, and on a
// root the daemon may not write to, Wait is answered by it, not by a
// rescan, writes nothing in the root, and a file written before it is
// indexed when it returns.
func TestWaitCookieOfTheDaemonsOwn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the daemon's own cookie needs inotify's ordering")
	}
	root := t.TempDir()
	d, logs := startDaemon(t, Config{Roots: []string{root}, Exclude: []string{".*"}, SettleDelay: 20 * time.Millisecond})
	p := filepath.Join(root, "a.txt")
	os.WriteFile(p, []byte(strings.Repeat("a file that wait must cover; ", 100)), 0o644)
	st0, _ := os.Stat(root)
	res, err := d.Wait(context.Background(), 10*time.Second)
	if err != nil {
		t.Fatalf("wait with hidden files excluded: %v\n%s", err, logs)
	}
	if res.Cookies != 1 || len(res.Rescanned) != 0 {
		t.Errorf("wait: %d roots by cookie, rescanned %v; want 1 by cookie", res.Cookies, res.Rescanned)
	}
	if _, err := d.ix.Lookup(p); err != nil {
		t.Errorf("%s not indexed when wait returned: %v", p, err)
	}
	if st1, _ := os.Stat(root); !st1.ModTime().Equal(st0.ModTime()) {
		t.Errorf("wait wrote in the root: its mtime moved from %v to %v", st0.ModTime(), st1.ModTime())
	}
	// A root nobody may write to: the daemon's own cookie needs no right
	// there (as root, only the first part of this holds anyway).
	os.Chmod(root, 0o555)
	t.Cleanup(func() { os.Chmod(root, 0o755) })
	if res, err := d.Wait(context.Background(), 10*time.Second); err != nil || res.Cookies != 1 || len(res.Rescanned) != 0 {
		t.Errorf("wait on a read-only root: %+v, %v; want 1 root by cookie and no rescan", res, err)
	}
	if ents, _ := os.ReadDir(d.cookies.dir); len(ents) != 0 {
		t.Errorf("cookies left behind in %s: %v", d.cookies.dir, ents)
	}
}

// Where each root takes its own cookie, a root whose exclusions would hide
// it is rescanned instead, so Wait neither hangs nor misses a change; a
// root that can take one is answered by it.
func TestWaitRootCookies(t *testing.T) {
	for _, tc := range []struct {
		exclude          []string
		cookies, rescans int
	}{
		{nil, 1, 0},
		{[]string{".*"}, 0, 1},
	} {
		root := t.TempDir()
		d, logs := startDaemon(t, Config{Roots: []string{root}, Exclude: tc.exclude, SettleDelay: 20 * time.Millisecond})
		d.cookies.dir = "" // as where events are ordered only per directory
		p := filepath.Join(root, "a.txt")
		os.WriteFile(p, []byte(strings.Repeat("a file that wait must cover; ", 100)), 0o644)
		res, err := d.Wait(context.Background(), 10*time.Second)
		if err != nil {
			t.Fatalf("exclude %q: wait: %v\n%s", tc.exclude, err, logs)
		}
		if res.Cookies != tc.cookies || len(res.Rescanned) != tc.rescans {
			t.Errorf("exclude %q: %d roots by cookie, rescanned %v; want %d by cookie, %d rescanned", tc.exclude, res.Cookies, res.Rescanned, tc.cookies, tc.rescans)
		}
		if _, err := d.ix.Lookup(p); err != nil {
			t.Errorf("exclude %q: %s not indexed when wait returned: %v", tc.exclude, p, err)
		}
	}
}
