package main

// The truth of the accuracy benchmark, by brute force: every file is the
// set W of its distinct 32-byte windows, each hashed to 64 bits, and for a
// query Q and an indexed file F
//
//	containment(Q in F) = |W(Q) ∩ W(F)| / |W(Q)|
//	resemblance(Q, F)   = |W(Q) ∩ W(F)| / |W(Q) ∪ W(F)|
//
// computed for every query against every indexed file. All query windows
// go into one sorted table, hash → queries holding it; each indexed file
// is then read once and its windows looked up there.

import (
	"hash/maphash"
	"os"
	"runtime"
	"slices"
	"sync"
)

// truthWindow is the window length of the truth, in bytes.
const truthWindow = 32

// windowSet returns the distinct hashes of the truthWindow-byte windows of
// b, sorted, reusing buf. A file shorter than a window has none.
func windowSet(seed maphash.Seed, b []byte, buf []uint64) []uint64 {
	buf = buf[:0]
	for i := 0; i+truthWindow <= len(b); i++ {
		buf = append(buf, maphash.Bytes(seed, b[i:i+truthWindow]))
	}
	slices.Sort(buf)
	return slices.Compact(buf)
}

// truth holds the window counts of every query and indexed file and, per
// query, the size of its intersection with every file it shares a window
// with.
type truth struct {
	QWindows []int32
	FWindows []int32
	Inter    []map[int32]int32 // per query: indexed file → |W(Q) ∩ W(F)|
	MaxInter []int32           // per query: the largest intersection
}

// Containment returns the containment of query q in file f.
func (t *truth) Containment(q int, f int32) float64 {
	if t.QWindows[q] == 0 {
		return 0
	}
	return float64(t.Inter[q][f]) / float64(t.QWindows[q])
}

// Resemblance returns the resemblance of query q and file f.
func (t *truth) Resemblance(q int, f int32) float64 {
	i := t.Inter[q][f]
	u := t.QWindows[q] + t.FWindows[f] - i
	if u == 0 {
		return 0
	}
	return float64(i) / float64(u)
}

// MaxContainment returns the largest containment of query q in any file.
func (t *truth) MaxContainment(q int) float64 {
	if t.QWindows[q] == 0 {
		return 0
	}
	return float64(t.MaxInter[q]) / float64(t.QWindows[q])
}

// bruteTruth computes the truth of every query against every file.
func bruteTruth(queries, files []string) (*truth, error) {
	seed := maphash.MakeSeed()
	t := &truth{QWindows: make([]int32, len(queries)), FWindows: make([]int32, len(files)),
		Inter: make([]map[int32]int32, len(queries)), MaxInter: make([]int32, len(queries))}
	type entry struct {
		h uint64
		q uint32
	}
	var entries []entry
	var buf []uint64
	for qi, p := range queries {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		buf = windowSet(seed, b, buf)
		t.QWindows[qi] = int32(len(buf))
		for _, h := range buf {
			entries = append(entries, entry{h, uint32(qi)})
		}
		t.Inter[qi] = map[int32]int32{}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return int(a.q) - int(b.q)
	})
	// keys[i] is held by the queries qids[start[i]:start[i+1]]; filter is a
	// bit per hash prefix that turns most misses away without a search.
	var keys []uint64
	var start []uint32
	qids := make([]uint32, len(entries))
	const filterBits = 28
	filter := make([]uint64, 1<<filterBits/64)
	for i, e := range entries {
		if i == 0 || e.h != entries[i-1].h {
			keys = append(keys, e.h)
			start = append(start, uint32(i))
			filter[e.h>>(64-filterBits)/64] |= 1 << (e.h >> (64 - filterBits) % 64)
		}
		qids[i] = e.q
	}
	start = append(start, uint32(len(entries)))
	entries = nil

	var mu sync.Mutex
	type workerState struct {
		buf   []uint64
		local map[uint32]int32
	}
	pool := sync.Pool{New: func() any { return &workerState{local: map[uint32]int32{}} }}
	err := parallel(len(files), func(fi int) error {
		b, err := os.ReadFile(files[fi])
		if err != nil {
			return err
		}
		ws := pool.Get().(*workerState)
		defer pool.Put(ws)
		ws.buf = windowSet(seed, b, ws.buf)
		clear(ws.local)
		for _, h := range ws.buf {
			if filter[h>>(64-filterBits)/64]&(1<<(h>>(64-filterBits)%64)) == 0 {
				continue
			}
			k, ok := slices.BinarySearch(keys, h)
			if !ok {
				continue
			}
			for _, q := range qids[start[k]:start[k+1]] {
				ws.local[q]++
			}
		}
		mu.Lock()
		t.FWindows[fi] = int32(len(ws.buf))
		for q, n := range ws.local {
			t.Inter[q][int32(fi)] = n
			t.MaxInter[q] = max(t.MaxInter[q], n)
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// parallel calls fn(i) for i in [0, n) on one goroutine per core and
// returns the first error.
func parallel(n int, fn func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := 0
	for range runtime.NumCPU() {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}
