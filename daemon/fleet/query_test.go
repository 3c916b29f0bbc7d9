package fleet

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// edited returns the sketch of an edited version of base: its first keep
// features, and the rest from other.
func edited(base, other string, keep int) *fingerprint.Sketch {
	b, o := content(base), content(other)
	sk := &fingerprint.Sketch{Params: testParams}
	seen := map[uint64]bool{}
	for _, f := range b.Features[:keep] {
		seen[f.Hash] = true
		sk.Features = append(sk.Features, f)
	}
	for _, f := range o.Features {
		if len(sk.Features) == len(b.Features) {
			break
		}
		if !seen[f.Hash] {
			seen[f.Hash] = true
			sk.Features = append(sk.Features, f)
		}
	}
	slices.SortFunc(sk.Features, func(x, y fingerprint.Feature) int { return cmp.Compare(x.Hash, y.Hash) })
	sk.Size = b.Size
	sk.Strong = sha256.Sum256(fmt.Appendf(nil, "%s+%s/%d", base, other, keep))
	sk.Type = fingerprint.TypeText
	return sk
}

// The fleet answers a query with the files the local index would list, on
// every host, with the same estimates when no fingerprint is common; in
// both forms of the query.
func TestSimilarMatchesLocal(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		t.Run(fmt.Sprintf("grouped=%v", grouped), func(t *testing.T) { testSimilarMatchesLocal(t, grouped) })
	}
}

func testSimilarMatchesLocal(t *testing.T, grouped bool) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	a := newTestHost(t, pool, "alpha", "/a")
	b := newTestHost(t, pool, "beta", "/b")
	sketches := map[string]*fingerprint.Sketch{}
	put := func(h *testHost, path string, sk *fingerprint.Sketch) {
		t.Helper()
		sketches[path] = sk
		if _, err := h.ix.Put(index.FileMeta{Path: path, Size: sk.Size, MtimeNs: 1}, sk); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		base := fmt.Sprintf("base%d", i)
		put(a, "/a/"+base, content(base))
		put(a, "/a/"+base+".v2", edited(base, "x"+base, 30)) // 75 % kept
		put(a, "/a/"+base+".v3", edited(base, "y"+base, 12)) // 30 %
		put(a, "/a/"+base+".v4", edited(base, "z"+base, 6))  // 15 %: below the threshold
		put(b, "/b/"+base+".copy", content(base))
		put(b, "/b/"+base+".v5", edited(base, "w"+base, 20))
	}
	a.drain(t)
	b.drain(t)

	for path, sk := range sketches {
		host := a
		if path[1] == 'b' {
			host = b
		}
		local, err := host.ix.Similar(context.Background(), index.Query{Path: path, Sketch: sk}, index.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Similar(context.Background(), pool, Query{Sketch: sk, Params: testParams, Path: path, Silence: time.Minute, Grouped: grouped})
		if err != nil {
			t.Fatal(err)
		}
		fleetOf := map[string]Match{}
		for _, m := range res.Matches {
			fleetOf[m.Host+":"+m.Path] = m
		}
		for _, m := range local.Matches {
			f, ok := fleetOf[host.name+":"+m.Path]
			if !ok {
				t.Errorf("%s: the fleet misses %s, which the local index lists at %.2f", path, m.Path, m.Containment)
				continue
			}
			if math.Abs(f.Containment-m.Containment) > 1e-9 || math.Abs(f.Resemblance-m.Resemblance) > 1e-9 || f.Identical != m.Identical {
				t.Errorf("%s → %s: fleet %.4f/%.4f identical %v, local %.4f/%.4f identical %v", path, m.Path,
					f.Containment, f.Resemblance, f.Identical, m.Containment, m.Resemblance, m.Identical)
			}
			delete(fleetOf, host.name+":"+m.Path)
		}
		for k, f := range fleetOf {
			if k == host.name+":"+path {
				if !f.Identical {
					t.Errorf("%s: its own row is not identical", path)
				}
				continue
			}
			if f.Host == host.name {
				t.Errorf("%s: the fleet lists %s (%.2f) on its own host, which the local index does not", path, f.Path, f.Containment)
			}
		}
	}

	// Across hosts: beta's copy is identical, its .v5 (20 of 40) at 50 %;
	// the 15 % version is left out; ExcludeHost leaves the asking host
	// out.
	res, err := Similar(context.Background(), pool, Query{Sketch: content("base1"), Params: testParams, ExcludeHost: "alpha", Grouped: grouped})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Matches {
		got = append(got, fmt.Sprintf("%s:%s:%.2f:%v", m.Host, m.Path, m.Containment, m.Identical))
	}
	want := []string{"beta:/b/base1.copy:1.00:true", "beta:/b/base1.v5:0.50:false"}
	if !slices.Equal(got, want) {
		t.Fatalf("fleet answer excluding alpha: %v, want %v", got, want)
	}
}

// A host that has been silent longer than the query's silence is left out
// of answers.
func TestSimilarLeavesSilentHostsOut(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	a := newTestHost(t, pool, "alpha", "/a")
	b := newTestHost(t, pool, "beta", "/b")
	a.put(t, "/a/x", "shared")
	b.put(t, "/b/x", "shared")
	a.drain(t)
	b.drain(t)
	srv.Exec("postgres", `UPDATE sif_hosts SET last_seen = now() - interval '1 hour' WHERE name = 'beta'`)
	res, err := Similar(context.Background(), pool, Query{Sketch: content("shared"), Params: testParams, Silence: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 || res.Matches[0].Host != "alpha" {
		t.Fatalf("matches %+v, want alpha's only", res.Matches)
	}
}

// The two forms of the query give the same answer, common keys and all.
func TestSimilarFormsAgree(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	a := newTestHost(t, pool, "alpha", "/a")
	b := newTestHost(t, pool, "beta", "/b")
	// Contents drawn from a small pool of hashes, so keys are shared by
	// many of them.
	for i := range 40 {
		base := fmt.Sprintf("base%d", i%8)
		a.put(t, fmt.Sprintf("/a/f%02d", i), fmt.Sprintf("a%d", i))
		if _, err := b.ix.Put(index.FileMeta{Path: fmt.Sprintf("/b/e%02d", i), Size: 4000, MtimeNs: 1}, edited(base, fmt.Sprintf("o%d", i), 10+i%25)); err != nil {
			t.Fatal(err)
		}
	}
	a.drain(t)
	b.drain(t)
	for _, maxDF := range []int{2, 5, 200} {
		for i := range 8 {
			sk := content(fmt.Sprintf("base%d", i))
			var answers [2]string
			for j, grouped := range []bool{false, true} {
				res, err := Similar(context.Background(), pool, Query{Sketch: sk, Params: testParams, MaxDF: maxDF, Grouped: grouped, Threshold: 0.01})
				if err != nil {
					t.Fatal(err)
				}
				answers[j] = fmt.Sprintf("skipped %d, candidates %d, too few %v, template %v (family %d):", res.Skipped, res.Candidates, res.TooFew, res.Template, res.Family)
				for _, m := range res.Matches {
					answers[j] += fmt.Sprintf(" %s:%s:%.4f:%v", m.Host, m.Path, m.Containment, m.Template)
				}
			}
			if answers[0] != answers[1] {
				t.Errorf("max_df %d, base%d: key by key %q, grouped %q", maxDF, i, answers[0], answers[1])
			}
			if maxDF == 2 && strings.HasPrefix(answers[0], "skipped 0,") && !strings.Contains(answers[0], "template true") {
				t.Errorf("max_df 2, base%d: no key skipped (%s): the test shares no key widely", i, answers[0])
			}
		}
	}
}

// member returns the sketch of the i-th member of a family made from one
// template: the template's first shared features, and the rest its own.
func member(template string, shared, i int) *fingerprint.Sketch {
	return edited(template, fmt.Sprintf("%s-own-%d", template, i), shared)
}

// A file that is mostly what a family of files shares (one of many made
// from a template) is answered with its family, flagged, as the local
// index answers it; a file that only shares a header with the family is
// not; in both forms of the query.
func TestSimilarTemplateFamily(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	a := newTestHost(t, pool, "alpha", "/a")
	sketches := map[string]*fingerprint.Sketch{}
	put := func(path string, sk *fingerprint.Sketch) {
		t.Helper()
		sketches[path] = sk
		if _, err := a.ix.Put(index.FileMeta{Path: path, Size: sk.Size, MtimeNs: 1}, sk); err != nil {
			t.Fatal(err)
		}
	}
	// 30 members sharing 34 of their 40 features; 5 files whose own
	// content shares only a 10-feature header with them; one edited copy
	// of a header file.
	for i := range 30 {
		put(fmt.Sprintf("/a/gen/m%02d.d.ts", i), member("tmpl", 34, i))
	}
	for i := range 5 {
		put(fmt.Sprintf("/a/src/h%d.ts", i), member("tmpl", 10, 100+i))
	}
	put("/a/src/h0.v2.ts", edited("tmpl-own-100", "v2", 36))
	a.drain(t)

	const maxDF = 10
	for _, grouped := range []bool{false, true} {
		for _, path := range []string{"/a/gen/m07.d.ts", "/a/src/h0.ts"} {
			sk := sketches[path]
			local, err := a.ix.Similar(context.Background(), index.Query{Path: path, Sketch: sk}, index.QueryOptions{MaxDF: maxDF})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Similar(context.Background(), pool, Query{Sketch: sk, Params: testParams, Path: path, MaxDF: maxDF, Grouped: grouped})
			if err != nil {
				t.Fatal(err)
			}
			wantTemplate := strings.Contains(path, "/gen/")
			if local.Template != wantTemplate || res.Template != wantTemplate {
				t.Fatalf("grouped %v, %s: template: local %v, fleet %v, want %v", grouped, path, local.Template, res.Template, wantTemplate)
			}
			if wantTemplate && (res.Family != 30 || res.Skipped != 0) {
				t.Errorf("grouped %v, %s: family of %d contents, %d keys skipped; want 30 and 0", grouped, path, res.Family, res.Skipped)
			}
			var want, got []string
			for _, m := range local.Matches {
				want = append(want, fmt.Sprintf("%s %.6f %.6f %v", m.Path, m.Containment, m.Resemblance, m.Template))
			}
			for _, m := range res.Matches {
				if m.Path == path {
					continue // its own row: the local index leaves it out
				}
				got = append(got, fmt.Sprintf("%s %.6f %.6f %v", m.Path, m.Containment, m.Resemblance, m.Template))
			}
			if !slices.Equal(got, want) {
				t.Errorf("grouped %v, %s:\nfleet %q\nlocal %q", grouped, path, got, want)
			}
			if wantTemplate && len(got) != 29 {
				t.Errorf("grouped %v, %s: %d matches, want the 29 other members", grouped, path, len(got))
			}
		}

		// With room for the postings of 10 common keys only (30 each),
		// those are counted and the others stay skipped: still the family,
		// its members estimated on the keys counted.
		defer func(n int) { templatePostings = n }(templatePostings)
		templatePostings = 10*30 + 29
		res, err := Similar(context.Background(), pool, Query{Sketch: sketches["/a/gen/m07.d.ts"], Params: testParams, MaxDF: maxDF, Grouped: grouped})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Template || res.Family != 30 || res.Skipped != 34-10 || len(res.Matches) != 30 {
			t.Errorf("grouped %v, 10 keys' postings: template %v, family %d, %d skipped, %d matches; want the family of 30, 24 skipped",
				grouped, res.Template, res.Family, res.Skipped, len(res.Matches))
		}
		for _, m := range res.Matches[1:] {
			if !m.Template || m.Containment < 0.7 {
				t.Errorf("grouped %v, 10 keys' postings: %s at %.2f, template %v; want a member, 70 %% or more", grouped, m.Path, m.Containment, m.Template)
			}
		}
		templatePostings = 100_000
	}
}
