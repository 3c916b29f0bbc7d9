//go:build unix

package e2e

// Defects found when sif was tried as a new user would: each test drives
// the real binaries the way that user did.

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// runIn runs bin with args in directory dir, with stdin, killing it after
// timeout; it reports how long it ran.
func runIn(t *testing.T, dir string, stdin []byte, timeout time.Duration, bin string, args ...string) (result, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("%s %v still running after %s (killed)", filepath.Base(bin), args, timeout)
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running %s %v: %v", bin, args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}, took
}

// TestSimilarSpecialFilesAndStdin: a fifo, a socket or a device named as
// the query is refused at once (exit 2, naming it), instead of blocking
// forever; "-" reads the query from standard input.
func TestSimilarSpecialFilesAndStdin(t *testing.T) {
	e := newEnv(t)
	content := words(80, 20000)
	p := e.write("a.txt", content)
	e.start()

	fifo := filepath.Join(e.dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	r, took := runIn(t, e.dir, nil, 20*time.Second, sifctlBin, "--socket", e.socket, "similar", fifo)
	oneLine(t, "similar FIFO", r, 2, fifo+": is a fifo (named pipe), not a regular file")
	if took > 5*time.Second {
		t.Errorf("similar FIFO took %s, want an immediate refusal", took)
	}
	r, _ = runIn(t, e.dir, nil, 20*time.Second, sifctlBin, "--socket", e.socket, "similar", "/dev/null")
	oneLine(t, "similar /dev/null", r, 2, "/dev/null: is a character device, not a regular file")
	r, _ = runIn(t, e.dir, nil, 20*time.Second, sifctlBin, "--socket", e.socket, "similar", e.socket)
	oneLine(t, "similar SOCKET", r, 2, e.socket+": is a socket, not a regular file")

	// Standard input: no path, so the indexed file itself is listed, as
	// identical.
	r, _ = runIn(t, e.dir, content, 20*time.Second, sifctlBin, "--socket", e.socket, "similar", "--json", "-")
	var line similarJSON
	if err := json.Unmarshal([]byte(r.stdout), &line); err != nil || r.code != 0 {
		t.Fatalf("similar - (stdin): exit %d, %v: %s%s", r.code, err, r.stdout, r.stderr)
	}
	if line.Query != "-" || line.Size != int64(len(content)) || len(line.Matches) != 1 ||
		line.Matches[0].Path != p || !line.Matches[0].Identical {
		t.Errorf("similar - (stdin): %+v, want %s as identical", line, p)
	}
	r, _ = runIn(t, e.dir, content, 20*time.Second, sifctlBin, "--socket", e.socket, "similar", "-")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "(standard input) (20000 bytes") || !strings.Contains(r.stdout, p+"  20000  identical") {
		t.Errorf("similar - (stdin), text: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Standard input that never ends: SIGINT ends sifctl at once.
	cmd := exec.Command(sifctlBin, "--socket", e.socket, "similar", "-")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd.Stdin = pr
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	// Four times a pipe's buffer: once written, sifctl is reading (its
	// signal handlers are in place), and it waits for more.
	written := make(chan struct{})
	go func() { pw.Write(words(92, 256<<10)); close(written) }()
	select {
	case <-written:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("similar - read nothing from stdin in 30s")
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		// 130: ended by SIGINT, as the shell reports it (128 + 2).
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "interrupted") {
			t.Errorf("similar - interrupted: %v, stderr %q", err, errb.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Errorf("similar - still reading stdin 10s after SIGINT")
	}
	r, _ = runIn(t, e.dir, content, 20*time.Second, sifctlBin, "--socket", e.socket, "similar", "-", "-")
	oneLine(t, "similar - -", r, 2, "standard input named 2 times")
}

// TestPrefixIsADirectoryTree: --prefix matches whole path components
// (.../b is not .../bin), and a relative prefix is relative to the current
// directory, for similar, groups and dupes.
func TestPrefixIsADirectoryTree(t *testing.T) {
	e := newEnv(t)
	a := words(81, 20000)
	e.write("b/a.txt", a)
	e.write("b/a-copy.txt", a)
	e.write("b/a-edited.txt", edit(82, a, 0.2))
	e.write("bin/a.txt", a)
	e.write("bin/a-copy.txt", a)
	e.write("bin/a-edited.txt", edit(83, a, 0.2))
	q := e.query("q.txt", a)
	e.start()

	inB := func(what string, paths []string) {
		t.Helper()
		if len(paths) == 0 {
			t.Errorf("%s: nothing listed", what)
		}
		for _, p := range paths {
			if !strings.HasPrefix(p, filepath.Join(e.root, "b")+"/") {
				t.Errorf("%s: lists %s, outside %s/b", what, p, e.root)
			}
		}
	}
	for _, prefix := range []string{filepath.Join(e.root, "b"), "b", "b/", "./b"} {
		// similar
		r, _ := runIn(t, e.root, nil, 30*time.Second, sifctlBin, "--socket", e.socket, "similar", "--json", "--prefix", prefix, q)
		var s similarJSON
		json.Unmarshal([]byte(r.stdout), &s)
		var paths []string
		for _, m := range s.Matches {
			paths = append(paths, m.Path)
		}
		inB("similar --prefix "+prefix, paths)
		if len(paths) != 3 {
			t.Errorf("similar --prefix %s: %v, want the 3 files of b", prefix, paths)
		}
		// groups
		r, _ = runIn(t, e.root, nil, 30*time.Second, sifctlBin, "--socket", e.socket, "groups", "--json", "--prefix", prefix)
		var g ipc.GroupsResponse
		json.Unmarshal([]byte(r.stdout), &g)
		paths = nil
		for _, grp := range g.Groups {
			paths = append(paths, grp.Reference.Path)
			for _, c := range grp.Reference.Copies {
				paths = append(paths, c.Path)
			}
			for _, m := range grp.Members {
				paths = append(paths, m.Path)
				for _, c := range m.Copies {
					paths = append(paths, c.Path)
				}
			}
		}
		inB("groups --prefix "+prefix, paths)
		// dupes
		r, _ = runIn(t, e.root, nil, 30*time.Second, sifctlBin, "--socket", e.socket, "dupes", "--json", "--prefix", prefix)
		var d ipc.DupesResponse
		json.Unmarshal([]byte(r.stdout), &d)
		paths = nil
		for _, set := range d.Sets {
			for _, f := range set.Files {
				paths = append(paths, f.Path)
			}
		}
		inB("dupes --prefix "+prefix, paths)
		if len(paths) != 2 {
			t.Errorf("dupes --prefix %s: %v, want b's two copies", prefix, paths)
		}
	}
}

// TestDupesHardLinks: hard links to one inode are listed, marked, but are
// one copy on disk: only real copies count as redundant; the JSON carries
// totals.
func TestDupesHardLinks(t *testing.T) {
	e := newEnv(t)
	big := words(84, 300000)
	a := e.write("a.bin", big)
	link := filepath.Join(e.root, "a-link.bin")
	if err := os.Link(a, link); err != nil {
		t.Fatal(err)
	}
	c := e.write("c.bin", big)
	small := words(85, 1000)
	x := e.write("x.txt", small)
	xl := filepath.Join(e.root, "y-link.txt")
	if err := os.Link(x, xl); err != nil {
		t.Fatal(err)
	}
	e.start()

	r := e.sifctl("dupes", "--json")
	var d ipc.DupesResponse
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != 0 {
		t.Fatalf("dupes --json: exit %d, %v: %s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(d.Sets) != 2 {
		t.Fatalf("dupes: %d sets, want 2: %s", len(d.Sets), r.stdout)
	}
	s := d.Sets[0]
	if len(s.Files) != 3 || s.Files[0].Path != link || s.Files[1].Path != a || s.Files[2].Path != c {
		t.Fatalf("first set: %s", r.stdout)
	}
	// Found together by the first scan, either name may be the link of
	// the other, but exactly one is.
	if (s.Files[0].HardLinkOf == nil) == (s.Files[1].HardLinkOf == nil) || s.Files[2].HardLinkOf != nil {
		t.Errorf("hard links not marked: %s", r.stdout)
	}
	primary, second := link, a
	if s.Files[0].HardLinkOf != nil {
		primary, second = a, link
	}
	if s.Inodes != 2 || s.RedundantFiles != 1 || s.RedundantBytes != 300000 {
		t.Errorf("first set: %d inodes, %d redundant files, %d bytes; want 2, 1, 300000", s.Inodes, s.RedundantFiles, s.RedundantBytes)
	}
	if s := d.Sets[1]; s.Inodes != 1 || s.RedundantFiles != 0 || s.RedundantBytes != 0 {
		t.Errorf("set of two hard links: %+v, want nothing redundant", s)
	}
	want := ipc.DupesTotals{Sets: 2, Files: 5, RedundantFiles: 1, RedundantBytes: 300000}
	if d.Totals != want {
		t.Errorf("totals %+v, want %+v", d.Totals, want)
	}
	r = e.sifctl("dupes")
	for _, want := range []string{
		"3 identical files of 300000 bytes, 2 copies on disk:\n",
		"  " + second + "  (hard link of " + primary + ")\n",
		"2 sets, 5 files: 1 redundant copy, 300000 bytes\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dupes lacks %q:\n%s", want, r.stdout)
		}
	}

	// A name made with ln once c is indexed is the link, though it
	// comes first in path order: c is not called a hard link of it.
	newer := filepath.Join(e.root, "b-newer-link.bin")
	if err := os.Link(c, newer); err != nil {
		t.Fatal(err)
	}
	e.waitApplied()
	r = e.sifctl("dupes")
	if want := "  " + newer + "  (hard link of " + c + ")\n"; !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "  "+c+"  (hard link of") {
		t.Errorf("dupes after ln %s %s: want %q:\n%s", c, newer, want, r.stdout)
	}
}

// snapshot lists every file under dir with its size, mode and mtime, and
// dir's own.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		out = append(out, p+" "+fi.Mode().String()+" "+fi.ModTime().String()+" "+strconv.FormatInt(fi.Size(), 10))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOfflineCommandsTouchNoOtherDirectory: sifd dump and sifd check on a
// directory that is not an index refuse it, say so plainly, and leave it
// exactly as it was (no LOCK file).
func TestOfflineCommandsTouchNoOtherDirectory(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(86, 2000))
	e.write("sub/b.txt", words(87, 2000))
	before := snapshot(t, e.root)
	for _, verb := range []string{"dump", "check"} {
		r := run(t, sifdBin, verb, "--db", e.root)
		oneLine(t, "sifd "+verb+" on a plain directory", r, 2, "--db "+e.root+": not a sif index")
		if strings.Contains(strings.ToLower(r.stderr), "pebble") || strings.Contains(r.stderr, "MANIFEST") {
			t.Errorf("sifd %s: stderr shows the database's internals: %q", verb, r.stderr)
		}
	}
	if after := snapshot(t, e.root); !slices.Equal(before, after) {
		t.Errorf("the directory changed:\nbefore %q\nafter  %q", before, after)
	}
	// An index still dumps.
	e.start()
	e.stop()
	if r := run(t, sifdBin, "dump", "--db", e.db); r.code != 0 || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("dump of an index: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// TestServiceStatusExitCode: sifd status exits 3 when the service is not
// installed, whatever the service manager (System V falls back to
// "service sifd status", which fails); --user where there are no user
// services says what to do instead.
func TestServiceStatusExitCode(t *testing.T) {
	for _, f := range []string{"/etc/systemd/system/sifd.service", "/etc/init.d/sifd", "/etc/init/sifd.conf"} {
		if _, err := os.Stat(f); err == nil {
			t.Skipf("a sifd service is installed on this machine (%s): the test needs none", f)
		}
	}
	r := run(t, sifdBin, "status")
	if r.code != 3 || !strings.HasPrefix(r.stdout, "not installed") {
		t.Errorf("sifd status: exit %d, stdout %q, stderr %q; want 3, not installed", r.code, r.stdout, r.stderr)
	}
	home := t.TempDir()
	cmd := exec.Command(sifdBin, "status", "--user")
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.HasPrefix(string(out), "not installed") {
		t.Errorf("sifd status --user: %v, stdout %q", err, out)
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		return // systemd: --user is supported, and installing is no test's business
	}
	r = run(t, sifdBin, "install", "--user", "--root", home)
	if r.code != 2 || !strings.Contains(r.stderr, "sifd run") || !strings.Contains(r.stderr, "supervisor") {
		t.Errorf("sifd install --user without systemd: exit %d, stderr %q; want advice to run sifd run under a supervisor", r.code, r.stderr)
	}
}

// TestRootsRemovedOutliveFlags: a root removed with sifctl roots remove
// stays out even when --root names it on the next start; the log and the
// status say which roots are in effect and where each comes from.
func TestRootsRemovedOutliveFlags(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(88, 2000))
	other := filepath.Join(e.dir, "other")
	os.Mkdir(other, 0o777)
	os.Chmod(other, 0o777)
	added := filepath.Join(e.dir, "added")
	os.Mkdir(added, 0o777)
	os.Chmod(added, 0o777)
	e.start("--root", other)
	if r := e.sifctl("roots", "remove", other); r.code != 0 {
		t.Fatalf("roots remove: exit %d: %s", r.code, r.stderr)
	}
	if r := e.sifctl("roots", "add", added); r.code != 0 {
		t.Fatalf("roots add: exit %d: %s", r.code, r.stderr)
	}
	e.stop()

	e.start("--root", other)
	st := e.status()
	var roots []string
	for _, r := range st.Roots {
		roots = append(roots, r.Path+" "+r.Source)
	}
	if want := []string{added + " added", e.root + " config"}; !slices.Equal(roots, want) {
		t.Errorf("status roots %q, want %q", roots, want)
	}
	if len(st.RemovedRoots) != 1 || st.RemovedRoots[0].Path != other {
		t.Errorf("status removed_roots %v, want %s", st.RemovedRoots, other)
	}
	logs := e.logs.String()
	for _, want := range []string{
		"msg=root root=" + e.root + " source=config",
		"msg=root root=" + added + " source=added",
		"root=" + other + " source=removed-by-sifctl",
		"roots=\"[" + added + " " + e.root + "]\"",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("start log lacks %q:\n%s", want, logs)
		}
	}
	r := e.sifctl("status")
	if !strings.Contains(r.stdout, "root "+other+": not in effect") || !strings.Contains(r.stdout, "from sifctl roots add") {
		t.Errorf("sifctl status does not show where roots come from:\n%s", r.stdout)
	}
}

// TestReloadLogLevel: SIGHUP applies a changed log_level at once and logs
// the change.
func TestReloadLogLevel(t *testing.T) {
	e := newEnv(t)
	e.write("sub/a.txt", words(89, 2000))
	sub := filepath.Join(e.root, "sub")
	cfg := filepath.Join(e.dir, "sifd.toml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("log_level = \"warn\"\n")
	e.startArgs("run", "--config", cfg, "--root", e.root, "--db", e.db, "--socket", e.socket)
	e.waitReady()
	if r := e.sifctl("rescan", sub); r.code != 0 {
		t.Fatalf("rescan: exit %d: %s", r.code, r.stderr)
	}
	e.waitApplied()
	if strings.Contains(e.logs.String(), "level=DEBUG") || strings.Contains(e.logs.String(), "level=INFO") {
		t.Fatalf("at log_level warn, the log shows info or debug lines:\n%s", e.logs.String())
	}

	write("log_level = \"debug\"\n")
	e.daemon.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(e.logs.String(), `msg="log level changed" from=warn to=debug`) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line for the level change after SIGHUP:\n%s", e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := e.sifctl("rescan", sub); r.code != 0 {
		t.Fatalf("rescan: exit %d: %s", r.code, r.stderr)
	}
	e.waitApplied()
	if !strings.Contains(e.logs.String(), `level=DEBUG msg="scan started" dir=`+sub) {
		t.Errorf("after the reload to debug, no debug line:\n%s", e.logs.String())
	}
}

// TestCompareFlagsThatDoNotApply: a scheme parameter of the other scheme is
// an error naming the flag and the scheme, not silently dropped.
func TestCompareFlagsThatDoNotApply(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, words(90, 20000), 0o644)
	os.WriteFile(b, words(90, 20000), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--avg-chunk", "64"}, "--avg-chunk applies to --scheme chunks, not to manber, the default"},
		{[]string{"--scheme", "chunks", "--window", "32"}, "--window applies to --scheme manber, not to --scheme chunks"},
		{[]string{"--scheme", "manber", "--max-chunk", "4096"}, "--max-chunk applies to --scheme chunks, not to --scheme manber"},
	} {
		r := run(t, sifctlBin, append(append([]string{"compare"}, tc.args...), a, b)...)
		oneLine(t, "compare "+strings.Join(tc.args, " "), r, 2, tc.want)
	}
	r := run(t, sifctlBin, "compare", "--json", "--scheme", "chunks", "--avg-chunk", "64", a, b)
	if r.code != 0 || !strings.Contains(r.stdout, "avg_chunk=64") {
		t.Errorf("compare --scheme chunks --avg-chunk 64: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// TestWrongMethod: over the socket, a route asked with the wrong method
// answers 405 with Allow and code method_not_allowed.
func TestWrongMethod(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(91, 2000))
	e.start()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", e.socket)
	}}}
	resp, err := hc.Get("http://sifd/v1/similar")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Error ipc.Error }
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" || body.Error.Code != ipc.CodeMethod {
		t.Errorf("GET /v1/similar: %s, Allow %q, %+v", resp.Status, resp.Header.Get("Allow"), body.Error)
	}
}

// TestDupesFilters: dupes leaves out empty files unless --empty is given,
// --min-size keeps the large sets, and --in lists a set with one file
// under the directory and one elsewhere, which --prefix does not.
func TestDupesFilters(t *testing.T) {
	e := newEnv(t)
	e.write("empty1", nil)
	e.write("sub/empty2", nil)
	big := words(90, 300000)
	here := e.write("here/big.bin", big)
	elsewhere := e.write("else/big.bin", big)
	small := words(91, 1000)
	e.write("else/s1.txt", small)
	e.write("else/s2.txt", small)
	e.start()

	sizes := func(args ...string) ([]int64, ipc.DupesResponse) {
		t.Helper()
		r := e.sifctl(append([]string{"dupes", "--json"}, args...)...)
		var d ipc.DupesResponse
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("dupes --json %s: exit %d, %v: %s%s", strings.Join(args, " "), r.code, err, r.stdout, r.stderr)
		}
		var out []int64
		for _, s := range d.Sets {
			out = append(out, s.Size)
		}
		return out, d
	}
	for _, tc := range []struct {
		args []string
		want []int64
	}{
		{nil, []int64{300000, 1000}},
		{[]string{"--empty"}, []int64{300000, 1000, 0}},
		{[]string{"--min-size", "0"}, []int64{300000, 1000, 0}},
		{[]string{"--min-size", "100K"}, []int64{300000}},
		{[]string{"--in", filepath.Join(e.root, "here")}, []int64{300000}},
		{[]string{"--in", filepath.Join(e.root, "here"), "--prefix", e.root}, []int64{300000}},
		{[]string{"--prefix", filepath.Join(e.root, "here")}, nil},
	} {
		if got, _ := sizes(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("dupes %s: sets of sizes %v, want %v", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	_, d := sizes("--in", filepath.Join(e.root, "here"))
	if len(d.Sets) != 1 || len(d.Sets[0].Files) != 2 || d.Sets[0].Files[0].Path != elsewhere || d.Sets[0].Files[1].Path != here {
		t.Errorf("dupes --in: %+v, want %s and %s", d.Sets, elsewhere, here)
	}
	if want := (ipc.DupesTotals{Sets: 1, Files: 2, RedundantFiles: 1, RedundantBytes: 300000}); d.Totals != want {
		t.Errorf("dupes --in: totals %+v, want %+v", d.Totals, want)
	}

	// Not a terminal: sizes in bytes, as programs read them.
	r := e.sifctl("dupes", "--min-size", "100K")
	if want := "2 identical files of 300000 bytes:\n  " + elsewhere + "\n  " + here + "\n1 set, 2 files: 1 redundant copy, 300000 bytes\n"; r.code != 0 || r.stdout != want {
		t.Errorf("dupes --min-size 100K: exit %d, %q, want %q", r.code, r.stdout, want)
	}
	r = e.sifctl("dupes", "--prefix", filepath.Join(e.root, "here"))
	if r.code != 1 || r.stdout != "No identical files.\n" {
		t.Errorf("dupes --prefix here: exit %d, %q, want 1 and no identical files", r.code, r.stdout)
	}
	for _, args := range [][]string{{"--min-size", "lots"}, {"--empty", "--min-size", "1"}, {"--in", e.root, "--fleet"}} {
		if r := e.sifctl(append([]string{"dupes"}, args...)...); r.code != 2 || r.stderr == "" {
			t.Errorf("dupes %s: exit %d, %q, want 2 and why", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}
