package index_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestCrashConsistency runs random Puts (half of them deferred, their
// postings written by a later write or Flush), Removes and Renames on a crashable
// in-memory filesystem and takes crash clones at random points: between
// operations and, from another goroutine, in the middle of them, keeping a
// random share of the unsynced data. Every clone must reopen with a clean
// Check and hold exactly the state after some prefix of the operations, no
// shorter than what the last Sync made durable: each file is as it was
// before or after each change, never between. With SimiHash keys, Check
// finds each content's key with it.
func TestCrashConsistency(t *testing.T) {
	for _, p := range []fingerprint.Params{manber, chunks} {
		t.Run(p.String(), func(t *testing.T) { testCrash(t, p, false, 400) })
	}
	t.Run("simihash", func(t *testing.T) { testCrash(t, manber, true, 400) })
}

type crashClone struct {
	fs     *vfs.MemFS
	lo, hi int // the clone holds the state after k operations, lo ≤ k ≤ hi
	pct    int
}

func testCrash(t *testing.T, p fingerprint.Params, simi bool, ops int) {
	fs := vfs.NewCrashableMem()
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: p, SimiHash: &simi})
	if err != nil {
		t.Fatal(err)
	}
	history := []model{{}} // history[k] is the state after k operations
	var (
		started, synced atomic.Int64
		mu              sync.Mutex
		clones          []crashClone
		stop            = make(chan struct{})
		wg              sync.WaitGroup
	)
	takeClone := func(rng *rand.Rand) {
		lo := int(synced.Load())
		pct := []int{0, 0, 30, 70, 100, rng.IntN(101)}[rng.IntN(6)]
		c := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng})
		hi := int(started.Load())
		mu.Lock()
		clones = append(clones, crashClone{c, lo, hi, pct})
		mu.Unlock()
	}

	// Clones from another goroutine land in the middle of operations.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(99, uint64(len(p.Scheme))))
		for {
			target := started.Load() + 1 + rng.Int64N(25)
			for started.Load() < target {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
			takeClone(rng)
		}
	}()

	rng := rand.New(rand.NewPCG(7, uint64(len(p.Scheme))))
	paths := make([]string, 12)
	for i := range paths {
		paths[i] = fmt.Sprintf("/r/%c/f%d", 'a'+i%3, i)
	}
	m := model{}
	for op := 0; op < ops; op++ {
		path := paths[rng.IntN(len(paths))]
		started.Add(1)
		switch k := rng.IntN(10); {
		case k < 6:
			sk := randSketch(rng, p, rng.IntN(80), 300)
			if len(m) > 0 && rng.IntN(3) == 0 {
				sk = m[slices.Sorted(maps.Keys(m))[rng.IntN(len(m))]].sk // an identical copy
			}
			meta := metaFor(path, sk, rng)
			put := ix.Put
			if rng.IntN(2) == 0 {
				put = ix.PutDeferred // its postings written by a later write, or recovered on Open
			}
			if _, err := put(meta, sk); err != nil {
				t.Fatal(err)
			}
			m[path] = modelFile{meta, sk}
		case k < 8:
			if err := ix.Remove(path); err != nil && !errors.Is(err, index.ErrNotFound) {
				t.Fatal(err)
			}
			delete(m, path)
		default:
			to := paths[rng.IntN(len(paths))]
			meta := index.FileMeta{Path: to, Size: rng.Int64N(1 << 20), MtimeNs: rng.Int64()}
			err := ix.Rename(path, meta)
			if f, ok := m[path]; ok {
				if err != nil {
					t.Fatal(err)
				}
				delete(m, path)
				m[to] = modelFile{meta, f.sk}
			} else if !errors.Is(err, index.ErrNotFound) {
				t.Fatal(err)
			}
		}
		history = append(history, m.clone())
		if rng.IntN(40) == 0 {
			n := int64(len(history) - 1)
			if err := ix.Sync(); err != nil {
				t.Fatal(err)
			}
			synced.Store(n)
		}
		if rng.IntN(20) == 0 {
			if err := ix.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(60) == 0 {
			// Flush and compact now and then, so clones also catch tables
			// and elided tombstones.
			if err := ix.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(15) == 0 {
			takeClone(rng)
		}
	}
	close(stop)
	wg.Wait()
	takeClone(rng) // after everything, before Close
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	// After Close everything is durable, whatever the clone keeps.
	clones = append(clones, crashClone{fs.CrashClone(vfs.CrashCloneCfg{}), len(history) - 1, len(history) - 1, 0})

	digests := make([]string, len(history))
	for k, h := range history {
		digests[k] = digestModel(h, p)
	}
	if len(clones) < 20 {
		t.Fatalf("only %d clones taken", len(clones))
	}
	var mid, lost, kept int
	for i, c := range clones {
		if c.lo < c.hi {
			mid++
		}
		ix, err := index.Open("/db", &index.Options{FS: c.fs})
		if err != nil {
			t.Fatalf("clone %d (ops %d..%d, %d%% unsynced kept): open: %v", i, c.lo, c.hi, c.pct, err)
		}
		if ix.SimiHash() != simi {
			t.Fatalf("clone %d: SimiHash %v, want %v", i, ix.SimiHash(), simi)
		}
		rep, err := ix.Check()
		if err != nil || !rep.OK() {
			t.Fatalf("clone %d (ops %d..%d, %d%% unsynced kept): check: %v %q", i, c.lo, c.hi, c.pct, err, rep.Problems)
		}
		d := digestIndex(t, ix)
		k := slices.Index(digests[c.lo:min(c.hi, len(digests)-1)+1], d)
		if k < 0 {
			t.Fatalf("clone %d (%d%% unsynced kept): state matches no state after %d..%d operations:\n%s",
				i, c.pct, c.lo, c.hi, d)
		}
		verifyInodes(t, ix, history[c.lo+k])
		if c.lo+k < c.hi {
			lost++
		}
		if k > 0 {
			kept++
		}
		// The recovered index takes writes.
		sk := randSketch(rng, p, 10, 200)
		if _, err := ix.Put(metaFor("/new", sk, rng), sk); err != nil {
			t.Fatal(err)
		}
		mustClean(t, ix)
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d clones verified: %d taken while operations were unsynced or in flight, %d lost some, %d kept some",
		len(clones), mid, lost, kept)
}

// digestModel and digestIndex render a state as text, one line per file.
func digestModel(m model, p fingerprint.Params) string {
	var b strings.Builder
	for _, path := range slices.Sorted(maps.Keys(m)) {
		f := m[path]
		fmt.Fprintf(&b, "%q %+v %x %v\n", path, f.meta, f.sk.Strong[:4], entriesOf(p, f.sk))
	}
	return b.String()
}

func digestIndex(t *testing.T, ix *index.Index) string {
	var b strings.Builder
	err := ix.Files("", func(r index.FileRecord) error {
		es, err := ix.ForwardList(r.Path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%q %+v %x %v\n", r.Path, r.FileMeta, r.Strong[:4], es)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
