package ipc

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzDecodeFeatures(f *testing.F) {
	f.Add([]byte(`[{"hash":"0123456789abcdef","count":1,"len":40}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ws []Feature
		if json.Unmarshal(data, &ws) != nil {
			return
		}
		fs, err := DecodeFeatures(ws)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "features[") {
				t.Fatalf("error %q does not name the feature", err)
			}
			return
		}
		if len(fs) != len(ws) {
			t.Fatalf("%d features from %d", len(fs), len(ws))
		}
		back := EncodeFeatures(fs)
		for i := range ws {
			if back[i].Hash != strings.ToLower(ws[i].Hash) || back[i].Count != ws[i].Count || back[i].Len != ws[i].Len || fs[i].Count == 0 {
				t.Fatalf("features[%d]: %+v decodes to %+v, encoded back as %+v", i, ws[i], fs[i], back[i])
			}
		}
	})
}

func FuzzJoinPath(f *testing.F) {
	f.Add("/srv/a", "", "/srv/a")
	f.Add("/srv/b\ufffd", base64.StdEncoding.EncodeToString([]byte("/srv/b\xff")), "/srv/b\xff")
	f.Fuzz(func(t *testing.T, display, raw, p string) {
		got, err := JoinPath(display, raw)
		switch {
		case err != nil:
			if raw == "" || !strings.HasPrefix(err.Error(), "path_raw") {
				t.Fatalf("JoinPath(%q, %q): %v", display, raw, err)
			}
		case raw == "" && got != display:
			t.Fatalf("JoinPath(%q, \"\") = %q", display, got)
		case raw != "":
			if want, _ := base64.StdEncoding.DecodeString(raw); got != string(want) {
				t.Fatalf("JoinPath(%q, %q) = %q, want %q", display, raw, got, want)
			}
		}
		d, r := PathFields(p)
		if !utf8.ValidString(d) || (r == "") != utf8.ValidString(p) {
			t.Fatalf("PathFields(%q) = %q, %q", p, d, r)
		}
		if back, err := JoinPath(d, r); err != nil || back != p {
			t.Fatalf("PathFields(%q) does not come back: %q, %v", p, back, err)
		}
		if fp := (FilePath{Path: display, PathRaw: raw}).Exact(); err == nil && fp != got {
			t.Fatalf("Exact %q, JoinPath %q", fp, got)
		}
	})
}
