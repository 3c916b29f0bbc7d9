package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/server"
)

// fakeDaemon is an empty index.Querier and a server.Controller with a
// list of roots.
type fakeDaemon struct {
	mu      sync.Mutex
	roots   []string
	rescans []string
	waited  time.Duration // the timeout of the last wait
	catchUp bool          // whether Wait succeeds, or waits for its timeout
	// stopping is the number of waits still to answer as a daemon that
	// is shutting down does.
	stopping int
	dupes    []index.DupeSet // what Dupes answers
}

func (f *fakeDaemon) Params() fingerprint.Params { return fingerprint.DefaultParams() }
func (f *fakeDaemon) Similar(context.Context, index.Query, index.QueryOptions) (*index.Result, error) {
	return &index.Result{}, nil
}
func (f *fakeDaemon) EachGroup(context.Context, index.GroupOptions, func(index.Group) error) error {
	return nil
}
func (f *fakeDaemon) Dupes(context.Context, string) ([]index.DupeSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.dupes), nil
}
func (f *fakeDaemon) Stats() (index.Stats, error) { return index.Stats{}, nil }
func (f *fakeDaemon) Status() ipc.Status          { return ipc.Status{State: "ready"} }

func (f *fakeDaemon) Roots() []ipc.RootStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ipc.RootStatus
	for _, r := range f.roots {
		out = append(out, ipc.RootStatus{Path: r, State: ipc.RootWatching, Source: "added", Watched: 3})
	}
	return out
}

func (f *fakeDaemon) AddRoot(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roots = append(f.roots, path)
	return nil
}

func (f *fakeDaemon) RemoveRoot(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.roots, path)
	if i < 0 {
		return fmt.Errorf("%w: %s is not a root", server.ErrBadRoot, path)
	}
	f.roots = slices.Delete(f.roots, i, i+1)
	return nil
}

func (f *fakeDaemon) Rescan(path string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rescans = append(f.rescans, path)
	if path == "" {
		return f.roots, nil
	}
	return []string{path}, nil
}

func (f *fakeDaemon) Wait(ctx context.Context, timeout time.Duration) (server.WaitResult, error) {
	f.mu.Lock()
	f.waited = timeout
	catchUp := f.catchUp
	stopping := f.stopping > 0
	if stopping {
		f.stopping--
	}
	f.mu.Unlock()
	if stopping {
		return server.WaitResult{}, context.Canceled
	}
	if catchUp {
		return server.WaitResult{Cookies: 1, Rescanned: []string{"/nfs"}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	<-ctx.Done()
	return server.WaitResult{}, ctx.Err()
}

// startFake serves f on a fresh socket until the test ends and returns the
// socket.
func startFake(t *testing.T, f *fakeDaemon) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	startFakeAt(t, f, sock)
	return sock
}

// startFakeAt serves f on sock until the test ends.
func startFakeAt(t *testing.T, f *fakeDaemon, sock string) {
	t.Helper()
	ln, err := server.Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- server.New(server.Backend{Query: f, Control: f}, server.Options{Version: "test"}).Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// result is what one run of sifctl did.
type result struct {
	code           int
	stdout, stderr string
}

func sifctl(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

func (r result) want(t *testing.T, what string, code int, stdout, stderr string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.stdout, stdout) || !strings.Contains(r.stderr, stderr) {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
			what, r.code, r.stdout, r.stderr, code, stdout, stderr)
	}
}

func TestArgumentsChecked(t *testing.T) {
	// Each fails before talking to a daemon: there is none.
	sock := filepath.Join(t.TempDir(), "none.sock")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"roots", "add"}, "accepts 1 arg(s), received 0"},
		{[]string{"roots", "add", "a", "b"}, "accepts 1 arg(s), received 2"},
		{[]string{"roots", "remove"}, "accepts 1 arg(s), received 0"},
		{[]string{"roots", "add", ""}, "empty directory name"},
		{[]string{"roots", "frob"}, `unknown command "frob"`},
		{[]string{"rescan", "a", "b"}, "accepts at most 1 arg(s), received 2"},
		{[]string{"wait", "--timeout", "0s"}, "--timeout 0s: want a duration above 0, at most 1h0m0s"},
		{[]string{"wait", "--timeout", "-1s"}, "--timeout -1s"},
		{[]string{"wait", "--timeout", "2h"}, "at most 1h0m0s"},
		{[]string{"wait", "--timeout", "soon"}, "invalid argument"},
		{[]string{"wait", "now"}, `unknown command "now"`},
	} {
		r := sifctl(t, append([]string{"--socket", sock}, tc.args...)...)
		r.want(t, strings.Join(tc.args, " "), exitError, "", tc.msg)
		if strings.Contains(r.stderr, "no sifd is listening") {
			t.Errorf("%s: talked to the daemon", strings.Join(tc.args, " "))
		}
	}
	sifctl(t, "--socket", sock, "roots").want(t, "roots without a daemon", exitError, "", "no sifd is listening on "+sock)
}

func TestRootsCommands(t *testing.T) {
	f := &fakeDaemon{}
	sock := startFake(t, f)
	dir := t.TempDir()
	t.Chdir(dir)

	sifctl(t, "--socket", sock, "roots").want(t, "no roots", exitNothing, "No roots.", "")
	sifctl(t, "--socket", sock, "roots", "--json").want(t, "no roots, JSON", exitNothing, `{"roots":[]}`, "")

	// A relative DIR is made absolute here, not in the daemon.
	r := sifctl(t, "--socket", sock, "roots", "add", "photos")
	r.want(t, "roots add", exitFound, filepath.Join(dir, "photos"), "")
	for _, col := range []string{"PATH", "STATE", "WATCHED", "FILES", "SOURCE", "REASON", "watching", "added"} {
		if !strings.Contains(r.stdout, col) {
			t.Errorf("roots add: table without %q:\n%s", col, r.stdout)
		}
	}
	// A name that is not UTF-8 reaches the daemon byte for byte.
	odd := "caf\xe9"
	sifctl(t, "--socket", sock, "roots", "add", odd).want(t, "roots add (Latin-1 name)", exitFound, "", "")
	f.mu.Lock()
	if want := []string{filepath.Join(dir, "photos"), filepath.Join(dir, odd)}; !slices.Equal(f.roots, want) {
		t.Errorf("daemon roots %q, want %q", f.roots, want)
	}
	f.mu.Unlock()

	r = sifctl(t, "--socket", sock, "roots", "list", "--json")
	var resp ipc.RootsResponse
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil || len(resp.Roots) != 2 {
		t.Errorf("roots list --json: %v: %q", err, r.stdout)
	}

	sifctl(t, "--socket", sock, "roots", "remove", "photos").want(t, "roots remove", exitFound, "caf", "")
	sifctl(t, "--socket", sock, "roots", "remove", "photos").want(t, "roots remove twice", exitError, "",
		filepath.Join(dir, "photos")+" is not a root (bad_request)")
}

func TestRescanCommand(t *testing.T) {
	f := &fakeDaemon{roots: []string{"/srv/a", "/srv/b"}}
	sock := startFake(t, f)
	sifctl(t, "--socket", sock, "rescan").want(t, "rescan", exitFound, "queued 2 directories\n  /srv/a\n  /srv/b\n", "")
	sifctl(t, "--socket", sock, "rescan", "/srv/a/x").want(t, "rescan DIR", exitFound, "queued 1 directory\n  /srv/a/x\n", "")
	sifctl(t, "--socket", sock, "--json", "rescan", "/srv/b").want(t, "rescan --json", exitFound, `{"queued":[{"path":"/srv/b"}]}`, "")
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.rescans, []string{"", "/srv/a/x", "/srv/b"}) {
		t.Errorf("rescans %q", f.rescans)
	}
}

func TestWaitCommand(t *testing.T) {
	f := &fakeDaemon{catchUp: true}
	sock := startFake(t, f)
	r := sifctl(t, "--socket", sock, "wait")
	r.want(t, "wait", exitFound, "up to date after ", "")
	r.want(t, "wait", exitFound, ": 1 root synchronised by cookie file, 1 rescanned\n  rescanned /nfs\n", "")
	f.mu.Lock()
	if f.waited != ipc.DefaultWait {
		t.Errorf("wait without --timeout waited up to %s, want %s", f.waited, ipc.DefaultWait)
	}
	f.mu.Unlock()
	r = sifctl(t, "--socket", sock, "wait", "--json", "--timeout", "5s")
	var resp ipc.WaitResponse
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil || r.code != exitFound || resp.Cookies != 1 || len(resp.Rescanned) != 1 {
		t.Errorf("wait --json: exit %d, %v: %q", r.code, err, r.stdout)
	}

	f.mu.Lock()
	f.catchUp = false
	f.mu.Unlock()
	sifctl(t, "--socket", sock, "wait", "--timeout", "20ms").want(t, "wait that times out", exitNothing, "",
		"sifctl: wait: timed out after 20ms: the daemon has not applied every change yet")
	if r := sifctl(t, "--socket", sock, "wait", "--json", "--timeout", "20ms"); r.code != exitNothing || r.stdout != "" {
		t.Errorf("wait --json that times out: exit %d, stdout %q", r.code, r.stdout)
	}
}

// wait waits for a daemon that is not listening yet, and asks again a
// daemon that answers it is shutting down; it says what it waited for.
func TestWaitForDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	done := make(chan result, 1)
	go func() { done <- sifctl(t, "--socket", sock, "wait", "--timeout", "10s") }()
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("wait returned with no daemon: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	default:
	}
	startFakeAt(t, &fakeDaemon{catchUp: true}, sock)
	r := <-done
	r.want(t, "wait before the daemon", exitFound, "sifd at "+sock+" answered after ", "")
	r.want(t, "wait before the daemon", exitFound, "; index up to date after ", "")
	r.want(t, "wait before the daemon", exitFound, ": 1 root synchronised by cookie file", "")

	f := &fakeDaemon{catchUp: true, stopping: 3}
	sock = startFake(t, f)
	r = sifctl(t, "--socket", sock, "--json", "wait", "--timeout", "10s")
	var resp struct {
		ipc.WaitResponse
		Socket       string `json:"socket"`
		DaemonWaitNs int64  `json:"daemon_wait_ns"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil || r.code != exitFound || resp.Cookies != 1 ||
		resp.Socket != sock || resp.DaemonWaitNs < int64(firstRetry) {
		t.Errorf("wait --json on a daemon shutting down 3 times: exit %d, %v: %q", r.code, err, r.stdout)
	}
	if f.stopping != 0 {
		t.Errorf("%d waits left unasked", f.stopping)
	}
}

// With no daemon in time, wait times out with exit 1 once --timeout has
// passed, saying what it waited for; a path that is not a socket fails at
// once.
func TestWaitForNoDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	t0 := time.Now()
	r := sifctl(t, "--socket", sock, "wait", "--timeout", "400ms")
	if d := time.Since(t0); d < 400*time.Millisecond || d > 5*time.Second {
		t.Errorf("wait with no daemon returned after %s, want about 400ms", d)
	}
	r.want(t, "wait with no daemon", exitNothing, "",
		"sifctl: wait: timed out after 400ms waiting for sifd to answer on "+sock+" (nothing listened there, ")

	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	r = sifctl(t, "--socket", sock, "wait", "--timeout", "10s")
	r.want(t, "wait on a regular file", exitError, "", sock+" is not a socket")
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("wait on a regular file took %s", d)
	}
}

func TestPrintStatus(t *testing.T) {
	eta := 85.4
	st := &ipc.Status{
		Version: "1.2", PID: 7, Started: time.Now(), State: "scanning", UncleanStart: true,
		Roots: []ipc.RootStatus{
			{Path: "/srv/big", State: ipc.RootScanning, FilesSeen: 5000, FilesDone: 1200, BytesSeen: 5 << 30, BytesDone: 1 << 30,
				BytesPerSec: 45.3e6, ETASecs: &eta, WalkDone: true, Watched: 12, FS: "ext4", Source: "config"},
			{Path: "/srv/new", State: ipc.RootScanning, FilesSeen: 10, FilesDone: 2},
			{Path: "/mnt/nfs", State: ipc.RootPolling, Reason: "nfs has no change events", Scans: 2, FilesSeen: 40,
				ScanSecs: 1.5, ScanFinish: "2025-01-02T03:04:05Z", Watched: 0},
			{Path: "/srv/part", State: ipc.RootDegraded, Reason: "out of inotify watches", Watched: 8190, Unwatched: 3},
		},
		RemovedRoots: []ipc.FilePath{{Path: "/srv/old"}},
		Queue:        ipc.QueueStatus{Settling: 3, Live: 1, Scan: 120, Scans: 2, Busy: 4},
		Counters:     ipc.Counters{Renamed: 5, TooSmall: 6, Excluded: 7, Events: 8, Overflows: 9},
	}
	var out bytes.Buffer
	printStatus(&globals{stdout: &out}, st)
	got := out.String()
	for _, want := range []string{
		"sifd 1.2 (pid 7), scanning, up 0s\n",
		"  note:    previous run did not shut down cleanly; first scan re-read recent changes\n",
		"  root /srv/big: scanning\n    scan: 1200/5000 files, 1.0 GiB/5.0 GiB, 45.3 MB/s, ETA 1m25s; 0 read (0 B) in 0.0s\n",
		"    watched dirs: 12; filesystem ext4; from the configuration (file or --root)\n",
		"  root /srv/old: not in effect: configured, but removed with sifctl roots remove (sifctl roots add puts it back)\n",
		"  root /srv/new: scanning\n    scan: 2/10 files, 0 B/0 B, still finding files;",
		"  root /mnt/nfs: polling (nfs has no change events)\n    last scan: 40 files seen (0 B), 0 read (0 B) in 1.5s, finished 2025-01-02T03:04:05Z\n",
		"  root /srv/part: degraded (out of inotify watches)\n    watched dirs: 8190, 3 subtrees could not be watched\n",
		"  queue: 3 settling, 1 live, 120 from scans, 2 directory scans; 4 workers busy\n",
		"5 renamed", "7 excluded", "6 too small",
		"  events: 8 received, 9 overflows",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "ETA") != 1 {
		t.Errorf("ETA shown for a root without eta_seconds:\n%s", got)
	}
	st.UncleanStart = false
	out.Reset()
	printStatus(&globals{stdout: &out}, st)
	if strings.Contains(out.String(), "did not shut down cleanly") {
		t.Errorf("unclean-start note after a clean start:\n%s", out.String())
	}
}

func TestPrintRoots(t *testing.T) {
	var out bytes.Buffer
	printRoots(&out, []ipc.RootStatus{
		{Path: "/a", State: ipc.RootWatching, Watched: 10, FilesSeen: 99, Source: "config"},
		{Path: "/long/root/path", State: ipc.RootFailed, LastError: "permission denied"},
		{Path: "/p", State: ipc.RootDegraded, Reason: "out of inotify watches", Watched: 5, Unwatched: 2, Source: "added"},
	})
	want := `PATH             STATE     WATCHED    FILES  SOURCE  REASON
/a               watching  10         99     config  
/long/root/path  failed    0          0      -       permission denied
/p               degraded  5 (2 not)  0      added   out of inotify watches
`
	if out.String() != want {
		t.Errorf("roots table:\n%s\nwant:\n%s", out.String(), want)
	}
}
