package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index/fingerprint"
)

// TestQuerySketchRoundTrip: a sketch made by NewQuerySketch, as one line
// of JSON, decodes to itself, for a path in UTF-8, one that is not, and
// none; and it is the query part of NewSimilarRequest's request.
func TestQuerySketchRoundTrip(t *testing.T) {
	data := make([]byte, 30000)
	rand.NewChaCha8([32]byte{1}).Read(data)
	sk, err := fingerprint.SketchQuery(bytes.NewReader(data), fingerprint.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/srv/a.txt", "/srv/\xff\xfe.txt", "", "/srv/\"<&>\\\n\u2028é.txt"} {
		q := NewQuerySketch(path, sk)
		if !reflect.DeepEqual(q, NewSimilarRequest(path, sk).QuerySketch) {
			t.Errorf("%q: NewQuerySketch differs from NewSimilarRequest's query", path)
		}
		b, err := MarshalJSONLine(q)
		if err != nil {
			t.Fatal(err)
		}
		if fast, err := q.AppendJSONLine(nil); err != nil || string(fast) != string(b) {
			t.Errorf("%q: AppendJSONLine\n%.200s\nwant json.Marshal's\n%.200s", path, fast, b)
		}
		got, err := DecodeQuerySketch(b)
		if err != nil {
			t.Fatalf("%q: %v", path, err)
		}
		if !reflect.DeepEqual(*got, q) {
			t.Errorf("%q: decoded %+v, want %+v", path, *got, q)
		}
		if p, _ := JoinPath(got.Path, got.PathRaw); p != path {
			t.Errorf("path %q came back as %q", path, p)
		}
		if len(q.Features) == 0 || q.Size != int64(len(data)) || len(q.Strong) != 64 {
			t.Errorf("sketch of %d bytes: %d features, size %d, strong %q", len(data), len(q.Features), q.Size, q.Strong)
		}
	}
}

// TestDecodeQuerySketchRefuses: each kind of bad line is refused with an
// error wrapping ErrBadSketch that says what is wrong.
func TestDecodeQuerySketchRefuses(t *testing.T) {
	sk, err := fingerprint.SketchQuery(strings.NewReader(strings.Repeat("abcdefghij klmnopqrs tuvwxyz ", 300)), fingerprint.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	good, err := json.Marshal(NewQuerySketch("/a", sk))
	if err != nil {
		t.Fatal(err)
	}
	with := func(field string, v any) []byte {
		var m map[string]any
		json.Unmarshal(good, &m)
		if v == nil {
			delete(m, field)
		} else {
			m[field] = v
		}
		b, _ := json.Marshal(m)
		return b
	}
	for _, tc := range []struct {
		name string
		line []byte
		want string
	}{
		{"empty", []byte("  "), "empty"},
		{"not JSON", []byte("hello"), "not JSON"},
		{"truncated", good[:len(good)/2], "truncated"},
		{"two objects", append(append([]byte{}, good...), good...), "one sketch per line"},
		{"an array", []byte("[1, 2]"), "want a JSON object"},
		{"unknown field", with("content", "aGVsbG8="), `unknown field "content"`},
		{"no params", with("params", nil), "params: missing"},
		{"bad params", with("params", map[string]any{"scheme": "nope"}), "params:"},
		{"negative size", with("size", -1), "size -1"},
		{"size a string", with("size", "12"), "size: want a JSON number"},
		{"short strong", with("strong", "abcd"), "strong"},
		{"bad feature", with("features", []map[string]any{{"hash": "xyz", "count": 1}}), "features[0].hash"},
		{"unsorted", with("features", []map[string]any{{"hash": "0000000000000002", "count": 1}, {"hash": "0000000000000001", "count": 1}}), "sorted"},
		{"bad path_raw", with("path_raw", "!!"), "path_raw"},
	} {
		_, err := DecodeQuerySketch(tc.line)
		if !errors.Is(err, ErrBadSketch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadSketch saying %q", tc.name, err, tc.want)
		}
	}
}

// FuzzDecodeQuerySketch: any line is decoded or refused, never a panic,
// and what is decoded encodes to a line that decodes the same.
func FuzzDecodeQuerySketch(f *testing.F) {
	sk, _ := fingerprint.SketchQuery(strings.NewReader(strings.Repeat("fuzz the sketch line ", 100)), fingerprint.DefaultParams())
	b, _ := json.Marshal(NewQuerySketch("/x", sk))
	f.Add(b)
	f.Add([]byte(`{"params":{"scheme":"manber"},"size":0,"strong":"` + strings.Repeat("0", 64) + `","features":[]}`))
	f.Add([]byte("{"))
	f.Add([]byte(`{"params":{"scheme":"chunks"},"path":"/a\u003c\u2028\"","size":1,"strong":"` + strings.Repeat("a", 64) + `","type":"binary","features":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		q, err := DecodeQuerySketch(line)
		if err != nil {
			return
		}
		b, err := MarshalJSONLine(q)
		if err != nil {
			t.Fatal(err)
		}
		if fast, err := q.AppendJSONLine(nil); err != nil || string(fast) != string(b) {
			t.Fatalf("AppendJSONLine %s, want json.Marshal's %s (%v)", fast, b, err)
		}
		q2, err := DecodeQuerySketch(b)
		if err != nil || !reflect.DeepEqual(q, q2) {
			t.Fatalf("%s decoded, re-encoded as %s: %v", line, b, err)
		}
	})
}
