package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkPostingMerge times the ordering step of the posting merge
// operator, the one a compaction runs for every bucket it rewrites, on k
// operands of one bucket (about 600 postings each, as a bucket holds in a
// large index): "merge" is Finish's pairwise merge of the operands'
// sorted runs, "sort" the sort of their concatenation it replaced, kept
// here as the baseline of the same run.
func BenchmarkPostingMerge(b *testing.B) {
	const bucket = 5
	bk := appendBucketKey(nil, bucket)
	for _, k := range []int{2, 4, 8} {
		r := rand.New(rand.NewPCG(uint64(k), 1))
		ops := make([][]byte, k)
		for i := range ops {
			var es []postingEntry
			for range 600 {
				es = append(es, postingEntry{bucket<<lowBits | uint32(r.IntN(1<<lowBits)), uint32(1 + r.IntN(1<<20)), uint64(1 + r.IntN(3))})
			}
			slices.SortFunc(es, comparePostings)
			es = slices.CompactFunc(es, func(a, b postingEntry) bool { return comparePostings(a, b) == 0 })
			ops[i], _ = encodePostingList(nil, es, nil)
		}
		load := func(b *testing.B) *listMerger {
			vm, err := mergeOperands(bk, ops, true)
			if err != nil {
				b.Fatal(err)
			}
			return vm.(*listMerger)
		}
		for _, how := range []string{"merge", "sort"} {
			b.Run(fmt.Sprintf("%s/operands=%d", how, k), func(b *testing.B) {
				m := load(b)
				es := slices.Clone(m.es)
				runs := slices.Clone(m.runs)
				b.SetBytes(int64(len(es)) * 16)
				b.ResetTimer()
				for b.Loop() {
					b.StopTimer()
					m.es = append(m.es[:0], es...)
					m.runs = append(m.runs[:0], runs...)
					b.StartTimer()
					if how == "merge" {
						m.order()
					} else {
						slices.SortFunc(m.es, compareRanked)
					}
				}
			})
		}
	}
}
