//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/ipc"
)

// sifctlIn runs sifctl against the env's socket with stdin as its
// standard input.
func (e *env) sifctlIn(stdin string, args ...string) result {
	e.t.Helper()
	r, _ := runIn(e.t, "", []byte(stdin), 2*time.Minute, sifctlBin, append([]string{"--socket", e.socket}, args...)...)
	return r
}

// jsonLines decodes each line of out as a JSON object.
func jsonLines(t *testing.T, what, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: line %q: %v", what, l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// signatureAnswers takes from the answers to signatures (--signature
// --json) what says they are: "estimated": true, and "signature" naming
// file and line 1, 2, ... in order; it fails the test when they are not
// there, and returns the answers without them.
func signatureAnswers(t *testing.T, what, file string, lines []map[string]any) []map[string]any {
	t.Helper()
	for i, l := range lines {
		sig, _ := l["signature"].(map[string]any)
		if l["estimated"] != true || sig == nil || sig["file"] != file || sig["line"] != float64(i+1) {
			t.Errorf("%s: answer %d says estimated %v, signature %v; want true, {file %s, line %d}", what, i, l["estimated"], l["signature"], file, i+1)
		}
		delete(l, "estimated")
		delete(l, "signature")
	}
	return lines
}

// postSketch posts a line sketch printed to route, as curl --unix-socket
// -d @q.json does, and returns the answer's JSON.
func (e *env) postSketch(route, line string) map[string]any {
	e.t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", e.socket)
	}}}
	resp, err := hc.Post("http://sifd"+route, "application/x-www-form-urlencoded", strings.NewReader(line))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("POST %s: %s: %s", route, resp.Status, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatalf("POST %s: %v: %s", route, err, b)
	}
	return m
}

// TestSignatureAsks: what `sifctl sketch` prints is the query `similar
// --fast` sends: `similar --signature` on the sketch of a file gives the
// answer `similar --fast FILE` gives (the same matches and percentages),
// for a file under the root, one outside it, one whose name is not UTF-8,
// several files in order and standard input, and says it is an estimate;
// `basis --signature` gives the fingerprint-only answer the daemon gives
// the file (the Go client without the bytes), each estimate a range that
// holds rdiff's delta; and a sketch line is a
// request body /v1/similar and /v1/basis take as they are, as curl sends
// it.
func TestSignatureAsks(t *testing.T) {
	e := newEnv(t)
	base := words(31, 30000)
	orig := e.write("src/orig.txt", base)
	e.write("copy/orig-copy.txt", base)
	edited := e.write("src/edited.txt", edit(32, base, 0.2))
	e.write("half.txt", append(append([]byte(nil), base[:15000]...), words(34, 15000)...))
	weird := e.write(string([]byte{'w', 0xff, 0xfe, '.', 't', 'x', 't'}), edit(35, base, 0.1))
	e.write("other/unrelated.txt", words(33, 30000))
	e.start()
	outside := e.outsideFile("query.txt", edit(36, base, 0.3))
	files := []string{orig, outside, weird, edited}

	// One FILE at a time, and all at once.
	sig := filepath.Join(e.dir, "q.sig")
	var all string
	for _, f := range files {
		r := e.sifctl("sketch", f)
		if r.code != 0 || strings.Count(r.stdout, "\n") != 1 {
			t.Fatalf("sketch %q: exit %d, %d lines, stderr %q", f, r.code, strings.Count(r.stdout, "\n"), r.stderr)
		}
		all += r.stdout
		must(t, os.WriteFile(sig, []byte(r.stdout), 0o644))
		fast := e.sifctl("similar", "--json", "--fast", f)
		got := e.sifctl("similar", "--json", "--signature", sig)
		if fast.code != 0 || got.code != 0 {
			t.Fatalf("%q: similar --fast exit %d, --signature exit %d (%s)", f, fast.code, got.code, got.stderr)
		}
		want := jsonLines(t, "similar --fast", fast.stdout)
		if answers := signatureAnswers(t, "similar --signature", sig, jsonLines(t, "similar --signature", got.stdout)); !reflect.DeepEqual(answers, want) {
			t.Errorf("%q: similar --signature\n%v\nwant (similar --fast)\n%v", f, answers, want)
		}
	}
	if r := e.sifctl(append([]string{"sketch"}, files...)...); r.code != 0 || r.stdout != all {
		t.Errorf("sketch of %d files: exit %d, not the lines of each in order (stderr %q)", len(files), r.code, r.stderr)
	}
	must(t, os.WriteFile(sig, []byte(all), 0o644))
	fast := e.sifctl(append([]string{"similar", "--json", "--fast"}, files...)...)
	got := e.sifctl("similar", "--json", "--signature", sig)
	want := jsonLines(t, "similar --fast", fast.stdout)
	if answers := signatureAnswers(t, "similar --signature", sig, jsonLines(t, "similar --signature", got.stdout)); got.code != 0 || !reflect.DeepEqual(answers, want) {
		t.Errorf("several signatures: exit %d\n%v\nwant\n%v", got.code, answers, want)
	}
	if q, raw := ipc.PathFields(weird); want[2]["query"] != q || want[2]["query_raw"] != raw || raw == "" {
		t.Errorf("the name that is not UTF-8: query %v, query_raw %v; want %q, %q", want[2]["query"], want[2]["query_raw"], q, raw)
	}

	// Text: the same matches, said to be estimates, under FILE:LINE.
	text := e.sifctl("similar", "--signature", sig)
	for _, w := range []string{sig + ":1: " + orig + " (30000 bytes", sig + ":2: " + outside, "estimated: the bytes were not sent"} {
		if !strings.Contains(text.stdout, w) {
			t.Errorf("similar --signature: text lacks %q:\n%s", w, text.stdout)
		}
	}
	if n := strings.Count(text.stdout, "estimated: the bytes were not sent"); n != len(files) {
		t.Errorf("similar --signature: %d answers say they are estimates, want %d", n, len(files))
	}

	// Standard input, both ways: sketch -, and --signature -.
	data, _ := os.ReadFile(outside)
	stdinSig := e.sifctlIn(string(data), "sketch", "-")
	noPath := e.sifctl("sketch", "--no-path", outside)
	if stdinSig.code != 0 || stdinSig.stdout != noPath.stdout || strings.Contains(stdinSig.stdout, `"path"`) {
		t.Errorf("sketch -: exit %d, %.200s; want sketch --no-path's %.200s", stdinSig.code, stdinSig.stdout, noPath.stdout)
	}
	fromStdin := e.sifctlIn(all, "similar", "--json", "--signature", "-")
	if answers := signatureAnswers(t, "similar --signature -", "-", jsonLines(t, "similar --signature -", fromStdin.stdout)); fromStdin.code != 0 || !reflect.DeepEqual(answers, want) {
		t.Errorf("--signature -: exit %d\n%v\nwant\n%v", fromStdin.code, answers, want)
	}

	// basis: the answer the daemon gives the file's fingerprints alone.
	info, err := ipc.NewClient(e.socket).Info(context.Background())
	must(t, err)
	for i, f := range files {
		sk, err := ipc.SketchFile(f, info.Params)
		must(t, err)
		ans, err := ipc.NewClient(e.socket).Basis(context.Background(), ipc.NewBasisRequest(f, sk, nil))
		must(t, err)
		b, _ := json.Marshal(ans)
		var direct map[string]any
		json.Unmarshal(b, &direct)
		line := strings.SplitAfter(all, "\n")[i]
		curl := e.postSketch("/v1/basis", line)
		must(t, os.WriteFile(sig, []byte(line), 0o644))
		r := e.sifctl("basis", "--json", "--signature", sig)
		if r.code == 2 {
			t.Fatalf("basis --signature %q: exit 2: %s", f, r.stderr)
		}
		got := signatureAnswers(t, "basis --signature", sig, jsonLines(t, "basis --signature", r.stdout))[0]
		for _, k := range []string{"size", "basis", "compressed_bytes", "candidates"} {
			if !reflect.DeepEqual(got[k], direct[k]) || !reflect.DeepEqual(curl[k], direct[k]) {
				t.Errorf("%q: basis %s: --signature %v, POSTed sketch %v; want (the client without bytes) %v", f, k, got[k], curl[k], direct[k])
			}
		}
		cs, _ := got["candidates"].([]any)
		if len(cs) == 0 {
			t.Errorf("%q: basis --signature lists no candidate", f)
		}
		checkBasisRanges(t, f, cs)
		// /v1/similar takes the line as it is too: the matches of --fast.
		sim := e.postSketch("/v1/similar", line)
		if !reflect.DeepEqual(sim["matches"], want[i]["matches"]) {
			t.Errorf("%q: POSTed sketch's matches %v, want %v", f, sim["matches"], want[i]["matches"])
		}
	}

	// The sync tool's pipe, through a shell, and its text answer.
	r := run(t, "/bin/sh", "-c", `"$0" --socket "$1" sketch --no-path "$2" | "$0" --socket "$1" basis --signature -`, sifctlBin, e.socket, orig)
	if r.code != 0 || !strings.Contains(r.stdout, "(standard input):1 (30000 bytes): identical to ") || !strings.Contains(r.stdout, " 0  "+orig+"  30000  identical") || !strings.Contains(r.stdout, "estimated: the bytes were not sent") {
		t.Errorf("sketch --no-path | basis --signature -: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "/bin/sh", "-c", `"$0" --socket "$1" sketch "$2" | "$0" --socket "$1" basis --signature -`, sifctlBin, e.socket, edited)
	if r.code != 0 || !strings.Contains(r.stdout, "(standard input):1: "+edited+" (30000 bytes): basis ") || !strings.Contains(r.stdout, " bytes to send, between ") {
		t.Errorf("sketch | basis --signature -: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// checkBasisRanges checks the candidates of a fingerprint-only answer
// for the query file f: an estimate from fingerprints has a range,
// estimated_bytes_low <= estimated_bytes <= estimated_bytes_high, and the
// delta rdiff would make from the candidate (exact.DeltaCost on both
// files' bytes) lies in it; an identical file has none.
func checkBasisRanges(t *testing.T, f string, cs []any) {
	t.Helper()
	query, err := os.ReadFile(f)
	must(t, err)
	ranged := 0
	for _, ci := range cs {
		c, _ := ci.(map[string]any)
		low, hasLow := c["estimated_bytes_low"].(float64)
		high, hasHigh := c["estimated_bytes_high"].(float64)
		est, _ := c["estimated_bytes"].(float64)
		if c["identical"] == true {
			if hasLow || hasHigh {
				t.Errorf("%q: identical candidate %v has a range", f, c["path"])
			}
			continue
		}
		if c["method"] != ipc.BasisFingerprints || !hasLow || !hasHigh || !(0 < low && low <= est && est <= high) {
			t.Errorf("%q: candidate %v: method %v, range %v..%v around %v; want fingerprints, low <= estimated_bytes <= high", f, c["path"], c["method"], c["estimated_bytes_low"], c["estimated_bytes_high"], est)
			continue
		}
		display, _ := c["path"].(string)
		raw, _ := c["path_raw"].(string)
		path, err := ipc.JoinPath(display, raw)
		must(t, err)
		basis, err := os.ReadFile(path)
		must(t, err)
		d, err := exact.DeltaCost(bytes.NewReader(basis), int64(len(basis)), query)
		must(t, err)
		if float64(d.Bytes) < low || float64(d.Bytes) > high {
			t.Errorf("%q from %s: rdiff's delta %d bytes, outside the estimated %v..%v (estimate %v, %v %% copied)", f, path, d.Bytes, low, high, est, c["copied"])
		}
		ranged++
	}
	if ranged == 0 && len(cs) > 1 {
		t.Errorf("%q: no candidate estimated from fingerprints among %d", f, len(cs))
	}
}

// TestSignatureErrors: a FILE sketch cannot read is named (a directory, a
// fifo, a missing file, a file another user may not read) while the
// others are printed; a bad line of a signature file is named with its
// line, in text and as a JSON error line, and the good ones are still
// answered; the exit status is 2.
func TestSignatureErrors(t *testing.T) {
	e := newEnv(t)
	base := words(41, 20000)
	a := e.write("a.txt", base)
	e.write("b.txt", edit(42, base, 0.1))
	e.start()
	fifo := filepath.Join(e.dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	r := e.sifctl("sketch", e.root, a, fifo, filepath.Join(e.dir, "gone.txt"))
	if r.code != 2 || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, `"path":"`+a+`"`) {
		t.Errorf("sketch with bad FILEs: exit %d, stdout %.200s", r.code, r.stdout)
	}
	for _, w := range []string{e.root + ": is a directory", fifo + ": is a fifo", "gone.txt: no such file or directory"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("sketch: stderr %q lacks %q", r.stderr, w)
		}
	}
	if os.Geteuid() == 0 {
		// sifd's user may ask its socket, but not read a file of root's.
		secret := e.outsideFile("secret.txt", base)
		must(t, os.Chmod(secret, 0o600))
		cmd := exec.Command(sifctlBin, "--socket", e.socket, "sketch", secret, a)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || errb.String() != "sifctl: "+secret+": permission denied\n" || !strings.Contains(out.String(), `"path":"`+a+`"`) {
			t.Errorf("sketch of an unreadable file as another user: %v, stdout %.100s, stderr %q", err, out.String(), errb.String())
		}
	}

	good := e.sifctl("sketch", a).stdout
	chunks := e.sifctl("sketch", "--params", `{"scheme": "chunks"}`, a).stdout
	sig := filepath.Join(e.dir, "q.sig")
	must(t, os.WriteFile(sig, []byte(good+"{\"params\": oops}\n"+chunks+"\n"+good+good[:100]), 0o644))
	r = e.sifctl("similar", "--signature", sig)
	if r.code != 2 || strings.Count(r.stdout, "estimated: the bytes were not sent") != 2 {
		t.Errorf("similar --signature with bad lines: exit %d, want 2, and lines 1 and 5 answered:\n%s", r.code, r.stdout)
	}
	wantErr := []string{sig + ":2: not a signature: not JSON", sig + ":3: made with the parameters", sig + ":6: not a signature: truncated"}
	if strings.Count(r.stderr, "\n") != len(wantErr) {
		t.Errorf("similar --signature: stderr %q, want %d lines", r.stderr, len(wantErr))
	}
	for _, w := range wantErr {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("similar --signature: stderr %q lacks %q", r.stderr, w)
		}
	}
	r = e.sifctl("basis", "--json", "--signature", sig)
	var got []string
	for _, l := range jsonLines(t, "basis --json --signature", r.stdout) {
		sig, _ := l["signature"].(map[string]any)
		if er, ok := l["error"].(map[string]any); ok {
			got = append(got, er["code"].(string))
		} else if l["estimated"] == true && l["query"] == a {
			got = append(got, "answered")
		}
		if sig == nil {
			t.Errorf("basis --json --signature: line without its signature: %v", l)
		}
	}
	if want := "answered bad_signature params_mismatch answered bad_signature"; r.code != 2 || strings.Join(got, " ") != want {
		t.Errorf("basis --json --signature: exit %d, lines %v, want %s", r.code, got, want)
	}
	r = e.sifctl("similar", "--signature", a) // a file, not signatures
	oneLine(t, "similar --signature on a text file", r, 2, a+":1: not a signature: not JSON")
	oneLine(t, "similar --signature on a directory", e.sifctl("similar", "--signature", e.root), 2, e.root+": is a directory")
}
