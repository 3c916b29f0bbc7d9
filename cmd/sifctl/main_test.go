package main

import (
	"bytes"
	"context"
	"fmt"
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

// A fake daemon behind the real API server, sifctl run in-process
// against it, and the arguments every command checks before it asks.

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
	// maxFeatures, when set, is the server's limit on a query's
	// fingerprints.
	maxFeatures int
	// groupsHold, when set, holds a groups run, at a step half done,
	// until it is closed.
	groupsHold chan struct{}
	scanning   bool // status says the first scan runs
}

func (f *fakeDaemon) Params() fingerprint.Params { return fingerprint.DefaultParams() }

func (f *fakeDaemon) Similar(context.Context, index.Query, index.QueryOptions) (*index.Result, error) {
	return &index.Result{}, nil
}

func (f *fakeDaemon) EachGroup(_ context.Context, o index.GroupOptions, _ func(index.Group) error) error {
	if f.groupsHold != nil {
		o.Progress.Begin("linking similar files")
		o.Progress.SetDone(0.5)
		<-f.groupsHold
	}
	return nil
}

func (f *fakeDaemon) Dupes(context.Context, string) ([]index.DupeSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.dupes), nil
}

func (f *fakeDaemon) Stats() (index.Stats, error) { return index.Stats{}, nil }
func (f *fakeDaemon) Status() ipc.Status {
	if f.scanning {
		return ipc.Status{State: "scanning", Roots: []ipc.RootStatus{{FilesSeen: 40, FilesDone: 12}}}
	}
	return ipc.Status{State: "ready"}
}

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
func startFakeAt(t testing.TB, f *fakeDaemon, sock string) {
	t.Helper()
	ln, err := server.Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- server.New(server.Backend{Query: f, Control: f}, server.Options{Version: "test", MaxFeatures: f.maxFeatures}).Serve(ctx, ln)
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
		{[]string{"roots", "add"}, "wrong number of arguments (0 given): usage: sifctl roots add DIR"},
		{[]string{"roots", "add", "a", "b"}, "wrong number of arguments (2 given)"},
		{[]string{"roots", "remove"}, "wrong number of arguments (0 given): usage: sifctl roots remove"},
		{[]string{"roots", "add", ""}, "empty directory name"},
		{[]string{"roots", "frob"}, `sifctl roots has no command "frob" (see 'sifctl roots --help')`},
		{[]string{"rescan", "a", "b"}, "wrong number of arguments (2 given): usage: sifctl rescan [DIR]"},
		{[]string{"wait", "--timeout", "0s"}, "--timeout 0s: want a duration above 0, at most 1h0m0s"},
		{[]string{"wait", "--timeout", "-1s"}, "--timeout -1s"},
		{[]string{"wait", "--timeout", "2h"}, "at most 1h0m0s"},
		{[]string{"wait", "--timeout", "soon"}, `--timeout "soon": want a duration, such as 30s, 5m or 1h (see 'sifctl wait --help')`},
		{[]string{"groups", "--threshold", "abc"}, `--threshold "abc": not a number`},
		{[]string{"similar", "--limit", "x", "f"}, `--limit "x": want a whole number`},
		{[]string{"groups", "--threshold"}, "--threshold needs a value"},
		{[]string{"groups", "--frob"}, "sifctl groups has no flag --frob"},
		{[]string{"frob"}, `sifctl has no command "frob" (see 'sifctl --help')`},
		{[]string{"wait", "now"}, `sifctl wait takes no arguments, and was given "now"`},
		{[]string{"similar"}, "no FILE to ask about: usage: sifctl similar [flags] FILE...|DIR...|- | --signature SIGFILE (see 'sifctl similar --help')"},
		{[]string{"basis"}, "no FILE to ask about: usage: sifctl basis"},
		{[]string{"dupes", "-0", "--json"}, "--null and --json are two forms of output: give one of them (see 'sifctl dupes --help')"},
		{[]string{"--json", "groups", "--null"}, "--null and --json are two forms of output"},
		{[]string{"similar", "-0", "--explain", "f"}, "--explain shows the runs each match shares, which --null, a list of names, leaves out"},
		{[]string{"dupes", "-0", "--script", "x.sh"}, "--null prints the sets on standard output; --script writes a script instead"},
		{[]string{"status", "-0"}, "sifctl status has no flag -0"},
	} {
		r := sifctl(t, append([]string{"--socket", sock}, tc.args...)...)
		r.want(t, strings.Join(tc.args, " "), exitError, "", tc.msg)
		if strings.Contains(r.stderr, "no sifd is listening") {
			t.Errorf("%s: talked to the daemon", strings.Join(tc.args, " "))
		}
	}
	sifctl(t, "--socket", sock, "roots").want(t, "roots without a daemon", exitError, "", "no sifd is listening on "+sock)
}
