package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// simiGroupBackend is a simiBackend that finds groups by SimiHash.
type simiGroupBackend struct {
	simiBackend
	lastGO index.SimiGroupOptions
	groups []index.SimiGroup
}

func (f *simiGroupBackend) SimiGroups(_ context.Context, o index.SimiGroupOptions, fn func(index.SimiGroup) error) (*index.SimiGroupStats, error) {
	f.lastGO = o
	for _, g := range f.groups {
		if err := fn(g); err != nil {
			return nil, err
		}
	}
	return &index.SimiGroupStats{Tolerances: fingerprint.DefaultTolerances(), Contents: 10, Pairs: 45, Comparisons: 12, Similar: 3, Window: 4}, nil
}

// TestGroupsBySimiHash: a groups request by SimiHash reaches SimiGroups
// with its prefix and tolerances, its answer carries each file's
// distances to the reference and the sweep's counts, parameters of groups
// by fingerprints are refused, and an index without SimiHash keys gets
// no_simihash.
func TestGroupsBySimiHash(t *testing.T) {
	p := fingerprint.DefaultParams()
	member := func(path string, sum uint64, same bool) index.SimiMember {
		return index.SimiMember{FileRecord: index.FileRecord{FileMeta: index.FileMeta{Path: path, Size: 1000}}, SumDistance: sum, KeyDistance: sum / 2, Identical: same}
	}
	fb := &simiGroupBackend{simiBackend: simiBackend{fakeBackend: fakeBackend{params: p}, simihash: true},
		groups: []index.SimiGroup{{Members: []index.SimiMember{member("/r/a", 0, true), member("/r/b", 0, true), member("/r/c", 9, false)}}}}
	c := serve(t, fb)
	ctx := context.Background()
	good := ipc.GroupsOptions{By: ipc.BySimiHash, Prefix: "/r", Tolerances: fingerprint.Tolerances{Sum: 0.01}}
	resp, err := c.Groups(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	if o := fb.lastGO; o.PathPrefix != "/r" || o.Tolerances.Sum != 0.01 || o.Tolerances.Key != 0 {
		t.Errorf("SimiGroups got %+v", o)
	}
	if resp.By != ipc.BySimiHash || resp.SimiHash == nil || resp.SimiHash.Comparisons != 12 || resp.SimiHash.Pairs != 45 || len(resp.Groups) != 1 {
		t.Fatalf("answer %+v", resp)
	}
	g := resp.Groups[0]
	if g.Reference.Path != "/r/a" || len(g.Members) != 2 || g.Members[1].SimiHash == nil ||
		*g.Members[1].SimiHash != (ipc.SimiGroupFile{KeyDistance: 4, SumDistance: 9}) || !g.Members[0].SimiHash.Identical {
		t.Errorf("group %+v", g)
	}

	for _, tc := range []struct {
		name string
		mod  func(*ipc.GroupsOptions)
		msg  string
	}{
		{"threshold", func(o *ipc.GroupsOptions) { o.Threshold = 50 }, "threshold"},
		{"links", func(o *ipc.GroupsOptions) { o.Links = true }, "links"},
		{"tolerance", func(o *ipc.GroupsOptions) { o.Tolerances.SizeRatio = 2 }, "size ratio"},
		{"by", func(o *ipc.GroupsOptions) { o.By = "ssdeep" }, `by "ssdeep"`},
	} {
		o := good
		tc.mod(&o)
		_, err := c.Groups(ctx, o)
		var e *ipc.Error
		if !errors.As(err, &e) || e.Code != ipc.CodeBadRequest || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %v, want bad_request mentioning %q", tc.name, err, tc.msg)
		}
	}
	fb.simihash = false
	_, err = c.Groups(ctx, good)
	var e *ipc.Error
	if !errors.As(err, &e) || e.Code != ipc.CodeNoSimiHash || !strings.Contains(e.Message, "simihash = true") {
		t.Errorf("index without SimiHash keys: %v", err)
	}
	if _, err := serve(t, &fakeBackend{params: p}).Groups(ctx, good); !errors.As(err, &e) || e.Code != ipc.CodeNoSimiHash {
		t.Errorf("backend without SimiGroups: %v", err)
	}
}
