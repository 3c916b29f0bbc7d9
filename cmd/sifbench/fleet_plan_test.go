package main

import (
	"context"
	"math"
	"testing"

	"github.com/sif-dev/sif/index/fingerprint"
)

// TestPlanFleetMix: the shares of copies, edited versions and unique files
// come out as specified; every copy holds the content of a file on
// another host planned before it, every edited version edits one; each
// host has its share of the files.
func TestPlanFleetMix(t *testing.T) {
	const hosts, files = 20, 50_000
	p := planFleet(hosts, files, 1994)
	m := p.mix()
	if m.Files != files || m.Unique+m.Copies+m.Edits != files {
		t.Fatalf("mix %+v does not add up to %d files", m, files)
	}
	near := func(what string, got int, want float64) {
		t.Helper()
		// The binomial's standard deviation at 50,000 files is about
		// 0.2 %; the first files, which have no other host's file to copy,
		// are unique.
		if share := float64(got) / files; math.Abs(share-want) > 0.01 {
			t.Errorf("%s: %.3f of the files, want %.2f", what, share, want)
		}
	}
	near("copies", m.Copies, fleetShareCopy)
	near("edited versions", m.Edits, fleetShareEdit)
	near("unique", m.Unique, 1-fleetShareCopy-fleetShareEdit)
	if m.Contents != m.Unique+m.Edits {
		t.Errorf("%d contents, want one per unique file and edit (%d)", m.Contents, m.Unique+m.Edits)
	}
	if m.Shared < m.Copies/3 {
		t.Errorf("only %d contents on two hosts or more for %d copies", m.Shared, m.Copies)
	}

	// hosts[c] is the set of hosts holding content c among the files so far.
	held := make([]map[int32]bool, len(p.Contents))
	perHost := make([]int, hosts)
	binary := 0
	for i, f := range p.Files {
		perHost[f.Host]++
		c := p.Contents[f.Content]
		switch f.Kind {
		case fCopy:
			if !otherHost(held[f.Content], f.Host) {
				t.Fatalf("file %d, a copy, holds content %d, found on no other host before it", i, f.Content)
			}
		case fEdit:
			if c.Origin < 0 || held[f.Content] != nil {
				t.Fatalf("file %d, an edit, has content %d (%+v), not a new edit", i, f.Content, c)
			}
			if !otherHost(held[c.Origin], f.Host) {
				t.Fatalf("file %d edits content %d, found on no other host before it", i, c.Origin)
			}
		case fUnique:
			if c.Origin >= 0 || held[f.Content] != nil {
				t.Fatalf("file %d, unique, has content %d (%+v) held before", i, f.Content, c)
			}
			if c.Binary {
				binary++
			}
			if c.Size < mSmallLo || c.Size > mLargeHi {
				t.Fatalf("file %d: size %d", i, c.Size)
			}
		}
		if held[f.Content] == nil {
			held[f.Content] = map[int32]bool{}
		}
		held[f.Content][f.Host] = true
	}
	for h, n := range perHost {
		if n != files/hosts {
			t.Errorf("host %d holds %d files, want %d", h, n, files/hosts)
		}
	}
	if share := float64(binary) / float64(m.Unique); math.Abs(share-fleetShareBinary) > 0.02 {
		t.Errorf("%.3f of the unique contents are binary, want %.2f", share, fleetShareBinary)
	}
	if again := planFleet(hosts, files, 1994); again.mix() != m || again.Files[files-1] != p.Files[files-1] {
		t.Error("the same seed planned another fleet")
	}
}

func otherHost(hosts map[int32]bool, h int32) bool {
	for o := range hosts {
		if o != h {
			return true
		}
	}
	return false
}

// TestPlanFleetSketches: sketched with the real fingerprint code, a copy
// is its original (its sketch is shared), and an edited version is a new
// content whose fingerprints overlap its original's.
func TestPlanFleetSketches(t *testing.T) {
	p := planFleet(4, 3000, 7)
	params, err := fingerprint.DefaultParams().Normalize()
	if err != nil {
		t.Fatal(err)
	}
	sk, _, err := p.sketchAll(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	var edits, overlapping int
	var sum float64
	for c, k := range p.Contents {
		if k.Origin < 0 {
			continue
		}
		edits++
		if sk[c].Strong == sk[k.Origin].Strong {
			t.Fatalf("content %d, an edit of %d, has its original's bytes", c, k.Origin)
		}
		cmp := fingerprint.Compare(sk[c], sk[k.Origin])
		if cmp.AInB > 0 {
			overlapping++
		}
		sum += cmp.AInB
	}
	if edits < 200 {
		t.Fatalf("only %d edits in 3000 files", edits)
	}
	// A substitution of up to 30 %, a truncation to 40-90 % or an
	// insertion of up to 20 % leaves most of a file's windows.
	if float64(overlapping) < 0.9*float64(edits) {
		t.Errorf("%d of %d edited versions share fingerprints with their original", overlapping, edits)
	}
	if mean := sum / float64(edits); mean < 0.3 || mean > 0.95 {
		t.Errorf("mean containment of an edit in its original %.2f, want between 0.3 and 0.95", mean)
	}
	for i, f := range p.Files {
		if f.Kind == fCopy && sk[f.Content].Size != int64(len(p.content(int(f.Content)))) {
			t.Fatalf("file %d: sketch of %d bytes for content %d", i, sk[f.Content].Size, f.Content)
		}
	}
}
