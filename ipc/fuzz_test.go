package ipc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
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

// FuzzDecodeGroupsAnswer feeds the groups decoder what a daemon, or something
// posing as one, may answer: it never panics, every group it hands on has
// links that name two of its files, with percentages in range, and what
// it took, encoded again, decodes to the same.
func FuzzDecodeGroupsAnswer(f *testing.F) {
	f.Add([]byte(`{"threshold":10,"groups":[{"reference":{"path":"/a/x.c","size":10,"percent":100},` +
		`"members":[{"path":"/b/x.c","size":12,"percent":80,"copies":[{"path":"/c/x.c"}]},{"path":"/d/y.c","size":9,"percent":0,"via":{"path":"/b/x.c"}}],` +
		`"links":[{"a":0,"b":1,"a_in_b":80,"b_in_a":66.67},{"a":1,"b":2,"a_in_b":12.5,"b_in_a":40}]}],"elapsed_ns":5}`))
	f.Add([]byte(`{"groups":[{"reference":{"path":"/a"},"members":[],"links":[{"a":0,"b":1,"a_in_b":1,"b_in_a":1}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var out GroupsResponse
		groups := []Group{}
		err := decodeGroups(bytes.NewReader(body), &out, func(g Group) error {
			for _, l := range g.Links {
				if l.A < 0 || l.A >= l.B || l.B > len(g.Members) || l.AInB < 0 || l.AInB > 100 || l.BInA < 0 || l.BInA > 100 {
					t.Fatalf("group of %q handed on with link %+v, %d members", g.Reference.Path, l, len(g.Members))
				}
			}
			groups = append(groups, g)
			return nil
		})
		if err != nil {
			return
		}
		again, err := json.Marshal(GroupsResponse{Threshold: out.Threshold, Groups: groups, ElapsedNs: out.ElapsedNs})
		if err != nil {
			t.Fatal(err)
		}
		back := GroupsResponse{Groups: []Group{}}
		if err := decodeGroups(bytes.NewReader(again), &back, func(g Group) error { back.Groups = append(back.Groups, g); return nil }); err != nil {
			t.Fatalf("%s, encoded again: %v", body, err)
		}
		if !reflect.DeepEqual(back.Groups, groups) || back.Threshold != out.Threshold || back.ElapsedNs != out.ElapsedNs {
			t.Fatalf("%s decodes to %+v; encoded again, to %+v", body, groups, back.Groups)
		}
	})
}

// FuzzDecodeDupesAnswer feeds the dupes decoder what a daemon, or
// something posing as one, may answer: it never panics, and what it took,
// encoded again as one answer, decodes to the same, and to what decoding
// that answer whole gives.
func FuzzDecodeDupesAnswer(f *testing.F) {
	f.Add([]byte(`{"sets":[{"size":300000,"strong":"ab","files":[{"path":"/srv/a/big.iso"},{"path":"/srv/b/big.iso","hard_link_of":{"path":"/srv/a/big.iso"}},{"path":"/srv/c/big.iso"}],` +
		`"inodes":2,"redundant_files":1,"redundant_bytes":300000}],"totals":{"sets":1,"files":3,"redundant_files":1,"redundant_bytes":300000}}`))
	f.Add([]byte(`{"totals":{"sets":0},"sets":[],"other":[1,{"x":2}]}`))
	f.Add([]byte(`{"sets":[{"size":1,"files":[{"path":"/a","path_raw":"2f61"}]},`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var totals DupesTotals
		sets := []DupeSet{}
		err := decodeDupes(bytes.NewReader(body), &totals, func(s DupeSet) error {
			sets = append(sets, s)
			return nil
		})
		if err != nil {
			return
		}
		again, err := json.Marshal(DupesResponse{Sets: sets, Totals: totals})
		if err != nil {
			t.Fatal(err)
		}
		var whole DupesResponse
		if err := json.Unmarshal(again, &whole); err != nil {
			t.Fatal(err)
		}
		var backTotals DupesTotals
		back := []DupeSet{}
		if err := decodeDupes(bytes.NewReader(again), &backTotals, func(s DupeSet) error { back = append(back, s); return nil }); err != nil {
			t.Fatalf("%s, encoded again: %v", body, err)
		}
		if !reflect.DeepEqual(back, sets) || backTotals != totals || !reflect.DeepEqual(whole.Sets, sets) || whole.Totals != totals {
			t.Fatalf("%s decodes to %+v; encoded again, to %+v", body, sets, back)
		}
	})
}
