package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

func openSimi(t *testing.T, fs vfs.FS, simi *bool) (*index.Index, error) {
	t.Helper()
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: manber, SimiHash: simi})
	if err == nil {
		t.Cleanup(func() { _ = ix.Close() })
	}
	return ix, err
}

// simiSketch makes a sketch whose SimiHash summary is drawn near a few
// centres, so that some files are SimiFind-similar and many are key hits
// that the sizes or sum tables rule out.
func simiSketch(rng *rand.Rand, label string) *fingerprint.Sketch {
	sk := sketchOf(manber, label, 0, fingerprint.Feature{Hash: poolHash(rng.IntN(50)), Count: 1})
	c := rng.IntN(3)
	sk.Size = int64(1000 + 100*c + rng.IntN(80))
	sk.Key = uint32(500 + 30*c + rng.IntN(40))
	for i := range sk.Sum {
		sk.Sum[i] = uint32(10*c + rng.IntN(4))
	}
	if rng.IntN(3) == 0 {
		sk.Sum[rng.IntN(fingerprint.NumTags)] += uint32(rng.IntN(40))
	}
	return sk
}

// TestSimiFindBruteForce checks SimiFind against Judge applied to every
// file of the index, after random puts, copies, changes, renames and
// removals, and the index's own check of its SimiHash keys.
func TestSimiFindBruteForce(t *testing.T) {
	on := true
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 23))
			ix, err := openSimi(t, vfs.NewMem(), &on)
			if err != nil {
				t.Fatal(err)
			}
			sketches := map[string]*fingerprint.Sketch{}
			var paths []string
			for op := range 400 {
				path := fmt.Sprintf("/r/f%d", rng.IntN(120))
				switch r := rng.IntN(10); {
				case r < 5 || len(paths) == 0:
					sk := simiSketch(rng, fmt.Sprint(op))
					if r == 0 && len(paths) > 0 { // a copy of another file
						sk = sketches[paths[rng.IntN(len(paths))]]
					}
					if _, err := ix.Put(index.FileMeta{Path: path, Size: sk.Size}, sk); err != nil {
						t.Fatal(err)
					}
					if _, had := sketches[path]; !had {
						paths = append(paths, path)
					}
					sketches[path] = sk
				case r < 8:
					old := paths[rng.IntN(len(paths))]
					if err := ix.Rename(old, index.FileMeta{Path: path, Size: sketches[old].Size}); err != nil {
						t.Fatal(err)
					}
					if old != path {
						if _, had := sketches[path]; !had {
							paths = append(paths, path)
						}
						sketches[path] = sketches[old]
						delete(sketches, old)
						paths = slices.DeleteFunc(paths, func(p string) bool { return p == old })
					}
				default:
					i := rng.IntN(len(paths))
					if err := ix.Remove(paths[i]); err != nil {
						t.Fatal(err)
					}
					delete(sketches, paths[i])
					paths = slices.Delete(paths, i, i+1)
				}
			}
			mustClean(t, ix)
			tol := fingerprint.DefaultTolerances()
			queries := 0
			for _, qp := range paths {
				q := index.SimiQuery{Path: qp, Summary: sketches[qp].Summary}
				res, err := ix.SimiFind(context.Background(), q)
				if err != nil {
					t.Fatal(err)
				}
				var got, want []string
				for _, m := range res.Matches {
					got = append(got, fmt.Sprintf("%s %d %v", m.Path, m.SumDistance, m.Identical))
				}
				keyHits := map[[32]byte]bool{}
				for _, p := range paths {
					v := tol.Judge(&q.Summary, &sketches[p].Summary)
					if v.KeyDistance <= v.KeyTolerance {
						keyHits[sketches[p].Strong] = true
					}
					if v.Similar && p != qp {
						want = append(want, fmt.Sprintf("%s %d %v", p, v.SumDistance, v.Identical))
					}
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("query %s: got %q, want %q", qp, got, want)
				}
				if res.KeyHits != len(keyHits) {
					t.Errorf("query %s: %d key hits, want %d", qp, res.KeyHits, len(keyHits))
				}
				if !slices.IsSortedFunc(res.Matches, func(a, b index.SimiMatch) int { return int(a.SumDistance) - int(b.SumDistance) }) {
					t.Errorf("query %s: matches not ordered by sum distance", qp)
				}
				queries += len(want)
				q.Visible = func(m *index.FileMeta) bool { return m.Path < "/r/f5" }
				q.PathPrefix = "/r"
				res, err = ix.SimiFind(context.Background(), q)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, w := range want {
					if w < "/r/f5" {
						n++
					}
				}
				if res.Total != n || len(res.Matches) != n {
					t.Errorf("query %s, some files hidden: %d matches (total %d), want %d", qp, len(res.Matches), res.Total, n)
				}
				if q.PathPrefix = "/s"; len(must(ix.SimiFind(context.Background(), q)).Matches) != 0 {
					t.Errorf("query %s under /s: matches under /r", qp)
				}
				q.PathPrefix, q.Visible, q.SameExt = "", nil, true
				if q.Path = qp + ".TXT"; len(must(ix.SimiFind(context.Background(), q)).Matches) != 0 {
					t.Errorf("query %s with extension .TXT, same extension: matches without", qp)
				}
				if q.Path = "/x/y"; len(must(ix.SimiFind(context.Background(), q)).Matches) != len(want)+1 {
					t.Errorf("query %s as /x/y, same (no) extension: want %d matches and itself", qp, len(want))
				}
			}
			if queries == 0 {
				t.Fatal("no query found anything: the test sets are too far apart")
			}
		})
	}
}

func TestSimiHashSetting(t *testing.T) {
	fs := vfs.NewMem()
	off, on := false, true
	ix, err := openSimi(t, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ix.SimiHash() != index.DefaultSimiHash {
		t.Errorf("new index: SimiHash %v, want the default", ix.SimiHash())
	}
	_ = ix.Close()
	if _, err := openSimi(t, vfs.NewMem(), &on); err != nil {
		t.Fatal(err)
	}
	stored := index.DefaultSimiHash
	other := &on
	if stored {
		other = &off
	}
	if _, err := openSimi(t, fs, other); !errors.Is(err, index.ErrParamsMismatch) {
		t.Fatalf("reopened asking for the other setting: %v, want ErrParamsMismatch", err)
	}
	ix, err = openSimi(t, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ix.SimiHash() != stored {
		t.Errorf("reopened: SimiHash %v, want %v as stored", ix.SimiHash(), stored)
	}
	if !stored {
		_, err := ix.SimiFind(context.Background(), index.SimiQuery{})
		if !errors.Is(err, index.ErrNoSimiHash) {
			t.Errorf("SimiFind without SimiHash keys: %v, want ErrNoSimiHash", err)
		}
	}
	mustClean(t, ix)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
