package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// fileBackend is a fakeBackend whose candidates' bytes are in files, with
// modification times in mtimes (0 when not there).
type fileBackend struct {
	*fakeBackend
	files  map[string][]byte
	mtimes map[string]int64
	opened []string
	read   map[string]bool // the files whose bytes were read
}

func (f *fileBackend) OpenIndexed(path string) (io.ReadCloser, index.FileMeta, error) {
	f.opened = append(f.opened, path)
	b, ok := f.files[path]
	if !ok {
		return nil, index.FileMeta{}, ErrGone
	}
	r := readNoted{Reader: bytes.NewReader(b), note: func() {
		if f.read == nil {
			f.read = map[string]bool{}
		}
		f.read[path] = true
	}}
	return io.NopCloser(r), index.FileMeta{Path: path, Size: int64(len(b)), MtimeNs: f.mtimes[path]}, nil
}

// readNoted calls note at each read.
type readNoted struct {
	io.Reader
	note func()
}

func (r readNoted) Read(p []byte) (int, error) {
	r.note()
	return r.Reader.Read(p)
}

func match(path string, size int64, containment float64) index.Match {
	return index.Match{FileRecord: index.FileRecord{FileMeta: index.FileMeta{Path: path, Size: size}},
		Containment: containment, SharedBytes: -1}
}

func text(seed byte, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed) * 2654435761
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = 'a' + byte(x>>24)%26
	}
	return b
}

// TestCheckOrdersByExactMeasures: the check reorders the index's matches
// by exact containment, then resemblance, then nearness of path; drops
// vanished files and those below the threshold after the check; keeps the
// order of the matches past CheckTop; and answers the limit after it.
func TestCheckOrdersByExactMeasures(t *testing.T) {
	q := text(1, 4000)
	files := map[string][]byte{
		"/r/far/low.txt":   append(bytes.Clone(q[:2000]), text(2, 2000)...), // 50 %
		"/r/far/full.txt":  append(bytes.Clone(q), text(3, 3000)...),        // 100 %, resemblance 4/7
		"/r/q/full.txt":    append(bytes.Clone(q), text(3, 3000)...),        // the same, nearer the query
		"/r/far/tight.txt": append(bytes.Clone(q), text(4, 100)...),         // 100 %, resemblance higher
		"/r/far/none.txt":  text(5, 4000),                                   // 0 %: below the threshold
	}
	ms := []index.Match{
		match("/r/far/low.txt", 4000, 0.9), match("/r/far/none.txt", 4000, 0.8),
		match("/r/gone.txt", 4000, 0.7), match("/r/far/full.txt", 7000, 0.5),
		match("/r/q/full.txt", 7000, 0.5), match("/r/far/tight.txt", 4100, 0.3),
	}
	for i := range 6 { // past CheckTop: not checked, in the index's order
		ms = append(ms, match("/r/rest/"+string(rune('a'+i)), 100, 0.29-float64(i)/100))
	}
	p := fingerprint.DefaultParams()
	fb := &fileBackend{fakeBackend: &fakeBackend{params: p, result: &index.Result{Matches: ms}}, files: files}
	c := serve(t, fb)
	sk := &fingerprint.Sketch{Params: p, Summary: fingerprint.Summary{Size: int64(len(q))}}
	req := ipc.NewSimilarRequest("/r/q/query.txt", sk)
	req.Content = q
	resp, err := c.Similar(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range resp.Matches {
		got = append(got, m.Path+":"+m.Measure)
	}
	want := []string{"/r/far/tight.txt:exact", "/r/q/full.txt:exact", "/r/far/full.txt:exact", "/r/far/low.txt:exact",
		"/r/rest/c:estimated", "/r/rest/d:estimated", "/r/rest/e:estimated", "/r/rest/f:estimated"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("order\n%v\nwant\n%v", got, want)
	}
	// gone.txt and the first two of the rest (in the top 8) have no file.
	if resp.Checked != 5 || resp.Dropped != 3 {
		t.Errorf("checked %d, dropped %d; want 5, 3", resp.Checked, resp.Dropped)
	}
	// 1969 of the query's 3969 windows lie in its first 2000 bytes.
	if m := resp.Matches[3]; m.Containment != pct(1969.0/3969) || m.SharedBytes == nil || *m.SharedBytes != 2000 {
		t.Errorf("low.txt: %+v", m)
	}
	if len(fb.opened) != 8 {
		t.Errorf("opened %d files, want CheckTop (8): %v", len(fb.opened), fb.opened)
	}

	// The limit applies after the check; --fast keeps the estimates.
	req.Limit = 1
	resp, err = c.Similar(context.Background(), req)
	if err != nil || len(resp.Matches) != 1 || resp.Matches[0].Path != "/r/far/tight.txt" {
		t.Fatalf("limit 1: %v %+v", err, resp)
	}
	req.Fast, fb.opened = true, nil
	resp, err = c.Similar(context.Background(), req)
	if err != nil || resp.Matches[0].Path != "/r/far/low.txt" || resp.Matches[0].Measure != ipc.MeasureEstimated || len(fb.opened) != 0 {
		t.Fatalf("fast: %v %+v, opened %v", err, resp, fb.opened)
	}
}

func TestToCheckTakesTies(t *testing.T) {
	var ms []index.Match
	for i := range 12 {
		c := 0.5
		if i < 5 {
			c = 0.9
		}
		ms = append(ms, match("/x", 1, c))
	}
	if n := toCheck(ms, false); n != 12 {
		t.Errorf("toCheck with ties past the 8th: %d, want 12", n)
	}
	if n := toCheck(ms[:3], false); n != 3 {
		t.Errorf("toCheck of 3: %d", n)
	}
}

// TestToCheckFamily: a template query's family is checked further, up to
// CheckFamily candidates and CheckFamilyBytes.
func TestToCheckFamily(t *testing.T) {
	var ms []index.Match
	for i := range 3 * ipc.CheckFamily {
		ms = append(ms, match("/x", 1000, 0.9-float64(i)/1e4))
	}
	if n := toCheck(ms, false); n != ipc.CheckTop {
		t.Errorf("toCheck of a plain query: %d, want %d", n, ipc.CheckTop)
	}
	if n := toCheck(ms, true); n != ipc.CheckFamily {
		t.Errorf("toCheck of a family of small files: %d, want %d", n, ipc.CheckFamily)
	}
	big := int64(ipc.CheckFamilyBytes / 20)
	for i := range ms {
		ms[i].FileMeta.Size = big
	}
	if n := toCheck(ms, true); n != 20 {
		t.Errorf("toCheck of a family of %d-byte files: %d, want 20", big, n)
	}
}

func TestNearness(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		n    int
	}{{"/a/b/c", "/a/b/d", 3}, {"/a/b", "/x/b", 1}, {"", "/a", 0}, {"/a/bc", "/a/b", 2}} {
		if got := nearness(tc.a, tc.b); got != tc.n {
			t.Errorf("nearness(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.n)
		}
	}
}

func TestCheckWireErrors(t *testing.T) {
	p := fingerprint.DefaultParams()
	fb := &fileBackend{fakeBackend: &fakeBackend{params: p, result: &index.Result{}}}
	c := serve(t, fb)
	good := func() *ipc.SimilarRequest {
		r := ipc.NewSimilarRequest("", &fingerprint.Sketch{Params: p, Summary: fingerprint.Summary{Size: 3}})
		r.Content = []byte("abc")
		return r
	}
	cases := []struct {
		name string
		mod  func(*ipc.SimilarRequest)
		code ipc.Code
		msg  string
	}{
		{"content size", func(r *ipc.SimilarRequest) { r.Size = 4 }, ipc.CodeBadRequest, "content: 3 bytes, but size is 4"},
		{"both", func(r *ipc.SimilarRequest) { r.Windows = ipc.NewWindows(4, nil) }, ipc.CodeBadRequest, "not both"},
		{"ragged", func(r *ipc.SimilarRequest) { r.Content = nil; r.Windows = &ipc.Windows{Level: 4, Hashes: []byte{1, 2}} }, ipc.CodeBadRequest, "windows.hashes"},
		{"unsorted", func(r *ipc.SimilarRequest) { r.Content = nil; r.Windows = ipc.NewWindows(4, []uint64{0x20, 0x10}) }, ipc.CodeBadRequest, "sorted"},
		{"not kept", func(r *ipc.SimilarRequest) { r.Content = nil; r.Windows = ipc.NewWindows(4, []uint64{0x11}) }, ipc.CodeBadRequest, "level 4"},
		{"level", func(r *ipc.SimilarRequest) { r.Content = nil; r.Windows = ipc.NewWindows(40, nil) }, ipc.CodeBadRequest, "level 40"},
		{"big content", func(r *ipc.SimilarRequest) { r.Content = make([]byte, ipc.MaxContent+1); r.Size = ipc.MaxContent + 1 }, ipc.CodeTooLarge, "send windows"},
	}
	for _, tc := range cases {
		r := good()
		tc.mod(r)
		_, err := c.Similar(context.Background(), r)
		var e *ipc.Error
		if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %v, want code %s mentioning %q", tc.name, err, tc.code, tc.msg)
		}
		br := &ipc.BasisRequest{QuerySketch: ipc.QuerySketch{Params: r.Params, Size: r.Size, Strong: r.Strong, Features: r.Features}, Content: r.Content, Windows: r.Windows}
		_, err = c.Basis(context.Background(), br)
		if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("basis, %s: %v, want code %s mentioning %q", tc.name, err, tc.code, tc.msg)
		}
	}
}

// TestCheckWeakCandidates: with the query's bytes, the index is asked for
// weak candidates too; the best CheckWeak of them are checked beside the
// others and listed by their exact measures, and the weak ones left
// unchecked are not listed. With --fast, none is asked for.
func TestCheckWeakCandidates(t *testing.T) {
	q := text(1, 600)
	files := map[string][]byte{
		"/r/strong.txt":   append(bytes.Clone(q[:300]), text(2, 300)...),         // 50 %
		"/r/big/host.txt": append(append(text(3, 2000), q...), text(4, 2000)...), // holds the query
		"/r/big/none.txt": text(5, 3000),                                         // shares nothing
	}
	weak := func(path string, size int64, c float64, shared uint64) index.Match {
		m := match(path, size, c)
		m.Weak, m.SharedWeight = true, shared
		return m
	}
	ms := []index.Match{weak("/r/big/none.txt", 3000, 1, 1), match("/r/strong.txt", 600, 0.6)}
	for i := range ipc.CheckWeak { // more weak ones, equal to host.txt but farther from the query
		ms = append(ms, weak("/s/"+string(rune('a'+i)), 3000, 0.5, 1))
	}
	ms = append(ms, weak("/r/big/host.txt", 4600, 0.5, 1))
	p := fingerprint.DefaultParams()
	fb := &fileBackend{fakeBackend: &fakeBackend{params: p, result: &index.Result{Matches: ms, TooFew: true, QueryFeatures: 3}}, files: files}
	c := serve(t, fb)
	sk := &fingerprint.Sketch{Params: p, Summary: fingerprint.Summary{Size: int64(len(q))}}
	req := ipc.NewSimilarRequest("/r/q/query.txt", sk)
	req.Content = q
	resp, err := c.Similar(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if fb.lastO.WeakShared != CheckWeakShared {
		t.Errorf("checked query: WeakShared %d, want %d", fb.lastO.WeakShared, CheckWeakShared)
	}
	var got []string
	for _, m := range resp.Matches {
		got = append(got, m.Path+":"+m.Measure)
	}
	want := []string{"/r/big/host.txt:exact", "/r/strong.txt:exact"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("order\n%v\nwant\n%v", got, want)
	}
	if resp.Matches[0].Containment != 100 {
		t.Errorf("host.txt: containment %v, want 100", resp.Matches[0].Containment)
	}
	// strong.txt, none.txt, host.txt (nearer than /s/...) and 6 of /s/.
	if len(fb.opened) != 1+ipc.CheckWeak {
		t.Errorf("opened %d files, want %d: %v", len(fb.opened), 1+ipc.CheckWeak, fb.opened)
	}
	if resp.TooFew {
		t.Error("too_few set, though the check judged the query's candidates")
	}

	req.Fast, fb.opened = true, nil
	fb.result = &index.Result{Matches: []index.Match{match("/r/strong.txt", 600, 0.6)}}
	resp, err = c.Similar(context.Background(), req)
	if err != nil || len(resp.Matches) != 1 || fb.lastO.WeakShared != 0 || len(fb.opened) != 0 {
		t.Fatalf("fast: %v %+v, WeakShared %d, opened %v", err, resp, fb.lastO.WeakShared, fb.opened)
	}
}

// askChecked asks a server over fb, whose index answers ms, for the
// matches of q with its bytes, so that they are checked, and fails the
// test on an error.
func askChecked(t *testing.T, fb *fileBackend, q []byte, ms []index.Match) *ipc.SimilarResponse {
	t.Helper()
	p := fingerprint.DefaultParams()
	fb.fakeBackend = &fakeBackend{params: p, result: &index.Result{Matches: ms}}
	sk := &fingerprint.Sketch{Params: p, Summary: fingerprint.Summary{Size: int64(len(q))}}
	req := ipc.NewSimilarRequest("/r/q/query.txt", sk)
	req.Content = q
	resp, err := serve(t, fb).Similar(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// holding returns n bytes that begin with q and go on with text of seed.
func holding(q []byte, seed byte, n int) []byte {
	return append(bytes.Clone(q), text(seed, n-len(q))...)
}

// weakMatch is a weak match of path, of size bytes, at 90 %.
func weakMatch(path string, size int64) index.Match {
	m := match(path, size, 0.9)
	m.Weak = true
	return m
}

// TestCheckIdenticalUnread: a match identical to the query by SHA-256 when
// indexed, and unchanged since by size and modification time, is
// measured exact at 100 % without reading it; one whose time changed is
// read, and measured on what it holds now.
func TestCheckIdenticalUnread(t *testing.T) {
	q := text(1, 4000)
	edited := append(bytes.Clone(q[:2000]), text(2, 2000)...)
	files := map[string][]byte{"/r/same.txt": q, "/r/touched.txt": edited, "/r/half.txt": edited}
	identical := func(path string, mtime int64) index.Match {
		m := match(path, 4000, 1)
		m.Identical, m.MtimeNs = true, mtime
		return m
	}
	ms := []index.Match{identical("/r/same.txt", 7), identical("/r/touched.txt", 7), match("/r/half.txt", 4000, 0.5)}
	fb := &fileBackend{files: files, mtimes: map[string]int64{"/r/same.txt": 7, "/r/touched.txt": 8}}
	resp := askChecked(t, fb, q, ms)
	got := map[string]ipc.Match{}
	for _, m := range resp.Matches {
		got[m.Path] = m
	}
	if m := got["/r/same.txt"]; m.Measure != ipc.MeasureExact || m.Containment != 100 || m.Resemblance != 100 ||
		!m.Identical || m.Changed || m.SharedBytes == nil || *m.SharedBytes != 4000 {
		t.Errorf("unchanged identical match: %+v", m)
	}
	if fb.read["/r/same.txt"] {
		t.Error("the unchanged identical match was read")
	}
	if m := got["/r/touched.txt"]; !fb.read["/r/touched.txt"] || m.Measure != ipc.MeasureExact || m.Identical || !m.Changed || m.Containment >= 60 {
		t.Errorf("identical match touched since: read %v, %+v", fb.read["/r/touched.txt"], m)
	}
	if resp.Checked != 3 {
		t.Errorf("checked %d, want 3", resp.Checked)
	}
}

// TestCheckBytesBound: once a check has read CheckBytes of candidates,
// the candidates left keep their estimates and are not opened, a weak
// one is left out, and one that still fits is read.
func TestCheckBytesBound(t *testing.T) {
	q := text(1, 4000)
	big := func(seed byte, n int) []byte { return holding(q, seed, n) }
	const mib = 1 << 20
	files := map[string][]byte{
		"/r/a": big(2, 5*mib), // read: the first is read whatever its size
		"/r/b": big(3, 5*mib), // past the bound: keeps its estimate
		"/r/c": big(4, 2*mib), // still within it: read
		"/r/w": big(5, 2*mib), // weak, past the bound: left out
	}
	weak := match("/r/w", 2*mib, 0.9)
	weak.Weak = true
	ms := []index.Match{match("/r/a", 5*mib, 0.9), match("/r/b", 5*mib, 0.8), match("/r/c", 2*mib, 0.7), weak}
	fb := &fileBackend{files: files}
	resp := askChecked(t, fb, q, ms)
	var got []string
	for _, m := range resp.Matches {
		got = append(got, m.Path+":"+m.Measure)
	}
	want := "/r/c:sampled /r/a:sampled /r/b:estimated" // c resembles q more
	if strings.Join(got, " ") != want {
		t.Errorf("matches %v, want %s", got, want)
	}
	if strings.Join(fb.opened, " ") != "/r/a /r/c" {
		t.Errorf("opened %v, want /r/a and /r/c", fb.opened)
	}
	if resp.Checked != 2 {
		t.Errorf("checked %d, want 2", resp.Checked)
	}
}

// TestCheckWeakBytesBound: weak candidates are read while they add up to
// CheckWeakBytes at most; one that would pass it is not read, and so not
// listed, and a smaller one after it still is.
func TestCheckWeakBytesBound(t *testing.T) {
	q := text(1, 4000)
	big := func(seed byte, n int) []byte { return holding(q, seed, n) }
	const part = ipc.CheckWeakBytes / 10
	files := map[string][]byte{"/r/w1": big(2, 6*part), "/r/w2": big(3, 6*part), "/r/w3": big(4, 3*part)}
	var ms []index.Match
	for _, p := range []string{"/r/w1", "/r/w2", "/r/w3"} {
		ms = append(ms, weakMatch(p, int64(len(files[p]))))
	}
	fb := &fileBackend{files: files}
	resp := askChecked(t, fb, q, ms)
	var got []string
	for _, m := range resp.Matches {
		got = append(got, m.Path)
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "/r/w1 /r/w3" || strings.Join(fb.opened, " ") != "/r/w1 /r/w3" {
		t.Errorf("listed %v and opened %v, want w1 and w3", got, fb.opened)
	}
}

// TestCheckWeakLargest: a weak candidate larger than CheckWeakLargest and
// than 256 times the query is not read, and so not listed; a smaller one
// after it is.
func TestCheckWeakLargest(t *testing.T) {
	q := text(1, 200)
	big := func(seed byte, n int) []byte { return holding(q, seed, n) }
	files := map[string][]byte{"/r/large": big(2, ipc.CheckWeakLargest+1), "/r/small": big(3, ipc.CheckWeakLargest/2)}
	var ms []index.Match
	for _, p := range []string{"/r/large", "/r/small"} {
		ms = append(ms, weakMatch(p, int64(len(files[p]))))
	}
	fb := &fileBackend{files: files}
	resp := askChecked(t, fb, q, ms)
	if len(resp.Matches) != 1 || resp.Matches[0].Path != "/r/small" || strings.Join(fb.opened, " ") != "/r/small" {
		t.Errorf("matches %+v, opened %v; want only /r/small", resp.Matches, fb.opened)
	}
}
