package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// randomFile writes n random bytes from seed into dir/name.
func randomFile(t testing.TB, dir, name string, seed byte, n int) string {
	t.Helper()
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sifctlIn runs sifctl in-process with stdin.
func sifctlIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	g := strings.NewReader(stdin)
	code := runWithStdin(context.Background(), args, g, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// TestSketchIsTheQuery: each line sketch prints is the query part of the
// request similar --fast sends for the file (ipc.NewSimilarRequest of
// ipc.SketchFile's sketch, with the daemon's parameters), with the
// SimiHash sum table and key that similar --by simihash sends, one per
// FILE in order, with no path for standard input or with --no-path; --params
// sketches without a daemon.
func TestSketchIsTheQuery(t *testing.T) {
	sock := startFake(t, &fakeDaemon{})
	dir := t.TempDir()
	a := randomFile(t, dir, "a.bin", 1, 100<<10)
	b := randomFile(t, dir, "b.bin", 2, 3<<20) // past MaxContent: makes no difference to a sketch
	want := func(path string, p fingerprint.Params, name string) string {
		sk, err := ipc.SketchFile(path, p)
		if err != nil {
			t.Fatal(err)
		}
		full, err := ipc.SketchFileSimiHash(context.Background(), path, p)
		if err != nil {
			t.Fatal(err)
		}
		q := ipc.NewSimilarRequest(name, sk).QuerySketch
		q.SimiHash = ipc.SimiHashOf(full)
		if full.Key == 0 {
			t.Fatalf("%s: no SimiHash key", path)
		}
		line, err := ipc.MarshalJSONLine(q)
		if err != nil {
			t.Fatal(err)
		}
		return string(line)
	}
	def := fingerprint.DefaultParams()
	r := sifctl(t, "--socket", sock, "sketch", a, b)
	if r.code != 0 || r.stdout != want(a, def, a)+want(b, def, b) || r.stderr != "" {
		t.Errorf("sketch a b: exit %d, stderr %q, stdout\n%.300s\nwant\n%.300s", r.code, r.stderr, r.stdout, want(a, def, a)+want(b, def, b))
	}
	r = sifctl(t, "--socket", sock, "sketch", "--no-path", a)
	if r.code != 0 || r.stdout != want(a, def, "") {
		t.Errorf("sketch --no-path: exit %d, stderr %q, stdout %.300s", r.code, r.stderr, r.stdout)
	}
	data, _ := os.ReadFile(a)
	r = sifctlIn(t, string(data), "--socket", sock, "sketch", "-")
	if r.code != 0 || r.stdout != want(a, def, "") {
		t.Errorf("sketch -: exit %d, stderr %q, stdout %.300s", r.code, r.stderr, r.stdout)
	}
	none := filepath.Join(t.TempDir(), "none.sock")
	chunks := fingerprint.Params{Scheme: fingerprint.Chunks}
	chunks, _ = chunks.Normalize()
	r = sifctl(t, "--socket", none, "sketch", "--params", `{"scheme": "chunks"}`, a)
	if r.code != 0 || r.stdout != want(a, chunks, a) {
		t.Errorf("sketch --params without a daemon: exit %d, stderr %q, stdout %.300s", r.code, r.stderr, r.stdout)
	}
}

// TestSketchErrors: a FILE that cannot be sketched is named on stderr,
// the others are printed, and the exit status is 2.
func TestSketchErrors(t *testing.T) {
	sock := startFake(t, &fakeDaemon{})
	dir := t.TempDir()
	a := randomFile(t, dir, "a.bin", 1, 10<<10)
	r := sifctl(t, "--socket", sock, "sketch", dir, a, filepath.Join(dir, "gone"), "/dev/null")
	if r.code != exitError || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, `"path":"`+a+`"`) {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
	for _, w := range []string{dir + ": is a directory", "gone: no such file or directory", "/dev/null: is a character device"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q lacks %q", r.stderr, w)
		}
	}
	none := filepath.Join(t.TempDir(), "none.sock")
	sifctl(t, "--socket", none, "sketch", a).want(t, "no daemon, no --params", exitError, "", "no sifd is listening")
	sifctl(t, "--socket", none, "sketch", "--params", "manber", a).want(t, "--params not JSON", exitError, "", "--params manber: invalid character")
	sifctl(t, "--socket", none, "sketch", "--params", `{"scheme": "simhash"}`, a).want(t, "--params unknown scheme", exitError, "", `scheme "simhash"`)
	sifctl(t, "--socket", none, "sketch", "--params", `{"window": 0, "color": 1}`, a).want(t, "--params unknown field", exitError, "", `unknown field "color"`)
	sifctl(t, "--socket", sock, "sketch", "-", "-").want(t, "stdin twice", exitError, "", "standard input named 2 times")
}

// TestSignatureLines: the lines of a signature file are numbered from 1,
// blank ones skipped; one too long is reported and the next still read;
// a last line without its newline is read.
func TestSignatureLines(t *testing.T) {
	defer func(n int) { maxSignatureLine = n }(maxSignatureLine)
	maxSignatureLine = 10
	in := "one\n\n  \nthree-is-too-long-for-ten\r\n0123456789\nlast"
	g := &globals{stdin: strings.NewReader(in)}
	var got []string
	err := eachSignatureLine(context.Background(), g, "-", func(s *signature, line []byte, tooLong bool) error {
		got = append(got, fmt.Sprintf("%s %q %v", s.where(), line, tooLong))
		return nil
	})
	want := []string{`(standard input):1 "one" false`, `(standard input):4 "" true`,
		`(standard input):5 "0123456789" false`, `(standard input):6 "last" false`}
	if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines %q, err %v; want %q", got, err, want)
	}
}

// TestSimilarSignatureErrors: each bad line of a signature file is named
// by its file and line, in text and as a JSON error line; the good lines
// are still asked, and the exit status is 2.
func TestSimilarSignatureErrors(t *testing.T) {
	sock := startFake(t, &fakeDaemon{maxFeatures: 40})
	dir := t.TempDir()
	a := randomFile(t, dir, "a.bin", 1, 10<<10)
	good := sifctl(t, "--socket", sock, "sketch", a).stdout
	chunks := sifctl(t, "--socket", sock, "sketch", "--params", `{"scheme": "chunks"}`, a).stdout
	unsorted := strings.Replace(good, `"features":[{`, `"features":[{"hash":"ffffffffffffffff","count":1,"len":40},{`, 1)
	large := sifctl(t, "--socket", sock, "sketch", randomFile(t, dir, "large.bin", 3, 100<<10)).stdout // more fingerprints than the daemon takes
	sig := filepath.Join(dir, "q.sig")
	os.WriteFile(sig, []byte(good+"not json\n"+chunks+"\n"+unsorted+large+good[:len(good)/2]), 0o644)
	for _, cmd := range []string{"similar", "basis"} {
		r := sifctl(t, "--socket", sock, cmd, "--signature", sig)
		if r.code != exitError {
			t.Errorf("%s: exit %d, want 2", cmd, r.code)
		}
		for _, w := range []string{sig + ":2: not a signature: not JSON", sig + ":3: made with the parameters {\"scheme\":\"chunks\"",
			sig + ":5: not a signature: features[1]: hashes must be sorted", sig + ":6: sifd refused it: ", sig + ":7: not a signature: truncated"} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr %q lacks %q", cmd, r.stderr, w)
			}
		}
		if n := strings.Count(r.stdout, "estimated: the bytes were not sent"); n != 1 {
			t.Errorf("%s: %d answers, want 1 (line 1):\n%s", cmd, n, r.stdout)
		}
		r = sifctl(t, "--socket", sock, cmd, "--json", "--signature", sig)
		var codes []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var v struct {
				Query     string        `json:"query"`
				Signature *signatureRef `json:"signature"`
				Estimated bool          `json:"estimated"`
				Error     *queryError   `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &v); err != nil || v.Signature == nil || v.Signature.File != sig {
				t.Fatalf("%s --json line %q: %v", cmd, l, err)
			}
			switch {
			case v.Error != nil:
				codes = append(codes, fmt.Sprintf("%d:%s", v.Signature.Line, v.Error.Code))
			case v.Estimated && v.Query == a && v.Signature.Line == 1:
				codes = append(codes, fmt.Sprintf("%d:answered", v.Signature.Line))
			default:
				t.Errorf("%s --json: line %q", cmd, l)
			}
		}
		if got, want := strings.Join(codes, " "), "1:answered 2:bad_signature 3:params_mismatch 5:bad_signature 6:too_large 7:bad_signature"; got != want || r.code != exitError {
			t.Errorf("%s --json: exit %d, lines %s, want %s", cmd, r.code, got, want)
		}
	}
	// A file, not a signature; none at all; a directory.
	sifctl(t, "--socket", sock, "similar", "--signature", a).want(t, "binary file", exitError, "", a+":1: not a signature")
	empty := filepath.Join(dir, "empty.sig")
	os.WriteFile(empty, []byte("\n\n"), 0o644)
	sifctl(t, "--socket", sock, "basis", "--signature", empty).want(t, "empty", exitError, "", empty+": holds no signature")
	sifctl(t, "--socket", sock, "similar", "--signature", dir).want(t, "directory", exitError, "", dir+": is a directory")
	sifctl(t, "--socket", sock, "similar", "--signature", filepath.Join(dir, "gone")).want(t, "missing", exitError, "", "gone: no such file or directory")
	// Several good lines are several queries, in order; the fake finds nothing.
	r := sifctlIn(t, good+good, "--socket", sock, "similar", "--signature", "-")
	if r.code != exitNothing || strings.Count(r.stdout, "(standard input):") != 2 || !strings.Contains(r.stdout, "(standard input):2: "+a) {
		t.Errorf("two signatures on stdin: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestSignatureArguments: --signature takes no FILE, and similar and
// basis take a FILE or --signature; --explain needs the bytes.
func TestSignatureArguments(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	for _, cmd := range []string{"similar", "basis"} {
		sifctl(t, "--socket", sock, cmd).want(t, cmd+" alone", exitError, "", "no FILE to ask about: usage: sifctl "+cmd+" [flags] FILE...|")
		sifctl(t, "--socket", sock, cmd, "--signature", "q.sig", "f").want(t, cmd+" both", exitError, "", "no FILE with it (f)")
	}
	sifctl(t, "--socket", sock, "similar", "--explain", "--signature", "q.sig").want(t, "explain", exitError, "", "a signature (--signature) carries none")
	sifctl(t, "--socket", sock, "sketch").want(t, "sketch alone", exitError, "", "wrong number of arguments (0 given): usage: sifctl sketch")
}

// BenchmarkSketch weighs `sifctl sketch` on a 64 MiB file (in-process,
// against a fake daemon, its output discarded: the reading, the
// fingerprinting and the JSON) against the daemon's sketcher on the same
// file (daemon/read.go's path for a large file: read in 256 KiB pieces
// into a fingerprint.Sketcher without SimiHash, and a Collector). Each
// iteration runs both, in turn, so that the machine's drift moves both:
// it reports each one's MB/s and the median of the iterations' ratios of
// sketch's time to the sketcher's ("sketch/daemon", 1 when as fast).
func BenchmarkSketch(b *testing.B) {
	const size = 64 << 20
	path := randomFile(b, b.TempDir(), "big.bin", 7, size)
	sock := filepath.Join(b.TempDir(), "s.sock")
	startFakeAt(b, &fakeDaemon{}, sock)
	var col fingerprint.Collector
	sk, err := fingerprint.NewSketcher(fingerprint.DefaultParams(), col.Add)
	if err != nil {
		b.Fatal(err)
	}
	sk.SkipSimiHash()
	buf := make([]byte, 256<<10)
	daemon := func() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		col.Reset()
		sk.Reset()
		for {
			n, err := f.Read(buf)
			sk.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		sk.Finish()
		col.Features()
	}
	var inSketch, inDaemon time.Duration
	var ratios []float64
	for b.Loop() {
		t0 := time.Now()
		if code := run(context.Background(), []string{"--socket", sock, "sketch", path}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("sketch: exit %d", code)
		}
		t1 := time.Now()
		daemon()
		t2 := time.Now()
		inSketch += t1.Sub(t0)
		inDaemon += t2.Sub(t1)
		ratios = append(ratios, float64(t1.Sub(t0))/float64(t2.Sub(t1)))
	}
	slices.Sort(ratios)
	n := float64(len(ratios))
	b.ReportMetric(n*size/1e6/inSketch.Seconds(), "sketch_MB/s")
	b.ReportMetric(n*size/1e6/inDaemon.Seconds(), "daemon_MB/s")
	b.ReportMetric(ratios[len(ratios)/2], "sketch/daemon")
}
