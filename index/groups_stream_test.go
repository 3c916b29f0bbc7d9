package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestGroupsStreamingAgainstReference compares the streaming Groups with
// the implementation that held every record and pair in memory, on random
// indexes with identical copies, contents of one strong hash that differ in
// their summaries, files of unknown strong hash, removed and replaced
// files, boilerplate held by many files, and pair budgets small enough to
// read the postings in many passes.
func TestGroupsStreamingAgainstReference(t *testing.T) {
	for _, p := range []fingerprint.Params{manber, chunks} {
		for seed := range uint64(2) {
			t.Run(fmt.Sprintf("%s/%d", p.Scheme, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 77))
				ix := openMem(t, nil, p)
				var sketches []*fingerprint.Sketch
				var paths []string
				for i := range 200 {
					sk := randSketch(rng, p, 5+rng.IntN(30), 600)
					switch k := rng.IntN(10); {
					case len(sketches) == 0:
					case k <= 1: // an identical copy
						sk = sketches[rng.IntN(len(sketches))]
					case k == 2: // one strong hash and size, another summary
						c := *sketches[rng.IntN(len(sketches))]
						c.Key++
						if rng.IntN(2) == 0 {
							c.Type = fingerprint.TypeBinary
						}
						sk = &c
					case k == 3: // strong hash unknown
						c := *sketches[rng.IntN(len(sketches))]
						c.Strong = [32]byte{}
						sk = &c
					case k <= 6: // an edited version
						var fs []fingerprint.Feature
						for _, f := range sketches[rng.IntN(len(sketches))].Features {
							if rng.IntN(10) < 7 {
								fs = append(fs, f)
							}
						}
						fs = append(fs, sk.Features[:rng.IntN(len(sk.Features))]...)
						sk = sketchOf(p, fmt.Sprint(rng.Uint64()), sk.Size, canonicalTest(fs)...)
					}
					sketches = append(sketches, sk)
					path := fmt.Sprintf("/%c/%c/%03d", 'a'+rng.IntN(3), 'x'+rng.IntN(3), i)
					if _, err := ix.Put(metaFor(path, sk, rng), sk); err != nil {
						t.Fatal(err)
					}
					paths = append(paths, path)
					if rng.IntN(8) == 0 { // churn: a file removed or replaced
						j := rng.IntN(len(paths))
						if rng.IntN(2) == 0 {
							if err := ix.Remove(paths[j]); err == nil {
								continue
							}
						}
						sk := sketches[rng.IntN(len(sketches))]
						if _, err := ix.Put(metaFor(paths[j], sk, rng), sk); err != nil {
							t.Fatal(err)
						}
					}
				}
				mustClean(t, ix)
				hidden := func(m *index.FileMeta) bool {
					return !strings.HasSuffix(m.Path, "1") && !strings.HasSuffix(m.Path, "4")
				}
				optss := []index.GroupOptions{
					{},
					{Threshold: 0.3, MaxDF: -1},
					{Threshold: 0.5, MaxDF: 20, SameType: true},
					{Threshold: 0.2, MaxDF: 6, PathPrefix: "/b/"},
					{Threshold: 0.2, PathPrefix: "/c/y"},
					{Threshold: 0.25, MinShared: 1, Visible: hidden},
					{Threshold: 0.25, MaxDF: 10, PathPrefix: "/a", Visible: hidden, SameType: true},
					{Threshold: 0.9, MinShared: 8},
				}
				for _, opts := range optss {
					want, err := ix.GroupsReference(opts)
					if err != nil {
						t.Fatal(err)
					}
					for _, budget := range []int{1 << 20, 40} {
						restore := index.SetGroupPairBudget(budget)
						got, err := ix.Groups(context.Background(), opts)
						restore()
						if err != nil {
							t.Fatal(err)
						}
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("%+v, budget %d: groups differ from the reference:\n%s\nwant\n%s",
								opts, budget, renderGroups(got), renderGroups(want))
						}
						if budget == 40 && len(want) > 0 && index.GroupPasses() < 2 {
							t.Errorf("%+v, budget 40: %d passes over the postings, want several", opts, index.GroupPasses())
						}
					}
					// EachGroup yields the same groups one at a time, and
					// stops at fn's first error, returning it.
					var each []index.Group
					if err := ix.EachGroup(context.Background(), opts, func(g index.Group) error { each = append(each, g); return nil }); err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(each, want) {
						t.Fatalf("%+v: EachGroup differs from the reference:\n%s\nwant\n%s", opts, renderGroups(each), renderGroups(want))
					}
					if len(want) >= 2 {
						errStop := errors.New("stop")
						calls := 0
						err := ix.EachGroup(context.Background(), opts, func(index.Group) error { calls++; return errStop })
						if err != errStop || calls != 1 {
							t.Fatalf("%+v: EachGroup with fn failing at once: %d calls, error %v; want 1 call and fn's error", opts, calls, err)
						}
					}
					t.Logf("%+v: %d groups", opts, len(want))
				}
			})
		}
	}
}

func renderGroups(gs []index.Group) string {
	var b strings.Builder
	for _, g := range gs {
		fmt.Fprintf(&b, "ref %s %v copies %v\n", g.Reference.Path, g.Reference.Percent, g.Reference.Copies)
		for _, m := range g.Members {
			fmt.Fprintf(&b, "  %s %v via %q copies %v\n", m.Path, m.Percent, m.Via, m.Copies)
		}
	}
	return b.String()
}
