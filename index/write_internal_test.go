package index

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// pendingPostings returns n postings as a bulk load leaves them pending:
// contents in the order of their ids, each with its entries' keys sorted
// and distinct. Keys are drawn from keys distinct values, so that many
// contents share one.
func pendingPostings(r *rand.Rand, n, keys int) []postingEntry {
	ps := make([]postingEntry, 0, n)
	for cid := uint32(1); len(ps) < n; cid++ {
		m := min(1+r.IntN(200), n-len(ps))
		ks := make([]uint32, 0, m)
		for range m {
			ks = append(ks, uint32(r.IntN(keys))*2654435761)
		}
		slices.Sort(ks)
		for _, k := range slices.Compact(ks) {
			ps = append(ps, postingEntry{key: k, cid: cid, weight: r.Uint64()})
		}
	}
	return ps
}

// sortPostings orders postings as a comparison sort by key and content id
// does, whether their contents come in the order of their ids (the radix
// sort) or not (the comparison sort).
func TestSortPostings(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var scratch []postingEntry
	for i := range 60 {
		n := []int{0, 1, 1000, 1023, 1024, 5000, 70000}[i%7]
		ps := pendingPostings(r, n, []int{1 << 30, 5000, 3}[i%3])
		if i%4 == 3 && n > 1 {
			r.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
		}
		want := slices.Clone(ps)
		slices.SortFunc(want, comparePostings)
		scratch = sortPostings(ps, scratch)
		if !slices.Equal(ps, want) {
			for j := range ps {
				if ps[j] != want[j] {
					t.Fatalf("case %d (%d postings): at %d got %+v, want %+v", i, n, j, ps[j], want[j])
				}
			}
		}
	}
}

// BenchmarkSortPostings sorts as many postings as a bulk load keeps
// pending, with the radix sort and with the comparison sort it replaced.
func BenchmarkSortPostings(b *testing.B) {
	in := pendingPostings(rand.New(rand.NewPCG(3, 4)), maxPending, 1<<30)
	ps := make([]postingEntry, len(in))
	for _, bc := range []struct {
		name string
		sort func([]postingEntry)
	}{
		{"radix", func(ps []postingEntry) { sortPostings(ps, nil) }},
		{"comparison", func(ps []postingEntry) { slices.SortFunc(ps, comparePostings) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)) * 16)
			for b.Loop() {
				copy(ps, in)
				bc.sort(ps)
			}
		})
	}
}

// A writer that finds the write lock taken gets it once it is released,
// whether it was still yielding then or had blocked, and never before.
func TestLockWrites(t *testing.T) {
	defer func(d time.Duration) { writeSpin = d }(writeSpin)
	for _, hold := range []time.Duration{0, 20 * time.Microsecond, 20 * time.Millisecond} {
		writeSpin = time.Millisecond
		var ix Index
		ix.wmu.Lock()
		var held atomic.Bool
		held.Store(true)
		got := make(chan bool)
		go func() {
			ix.lockWrites()
			got <- held.Load()
			ix.wmu.Unlock()
		}()
		time.Sleep(hold)
		held.Store(false)
		ix.wmu.Unlock()
		if <-got {
			t.Errorf("held %v: a writer got the write lock while it was held", hold)
		}
	}
}
