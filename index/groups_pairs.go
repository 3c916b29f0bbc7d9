package index

import (
	"cmp"
	"maps"
	"slices"
)

// The pairs of a Groups run (groups.go): a pass over the postings sums,
// for every pair of nodes of one partition that share a fingerprint key,
// their shared weight and key count in a pairTable, and the boilerplate of
// every node; a pass that would hold more than the budget narrows its
// partition and leaves the rest to a later pass.

// partition names the pairs of nodes whose key a<<32|b (a < b) mixes to
// residue in its low bits bits.
type partition struct {
	bits    uint
	residue uint64
}

// pairShare is what two nodes share: weight, and the number of keys.
type pairShare struct {
	weight uint64
	n      uint32
}

// pairTable holds the pairShares of pairs of nodes, keyed by a<<32|b.
// Most fit in one word, 40 bits of weight and 24 of count: a pair that
// outgrows it moves to big.
type pairTable struct {
	packed map[uint64]uint64
	big    map[uint64]pairShare
}

const (
	pairCountBits = 24
	pairCountMax  = 1<<pairCountBits - 1
	pairWeightMax = 1<<(64-pairCountBits) - 1
)

func newPairTable() *pairTable {
	return &pairTable{packed: make(map[uint64]uint64), big: make(map[uint64]pairShare)}
}

func (t *pairTable) len() int { return len(t.packed) + len(t.big) }

func (t *pairTable) clear() {
	clear(t.packed)
	clear(t.big)
}

// add adds weight w and one key to pair k. No overflow of the weight:
// shared weight is at most either file's weight.
func (t *pairTable) add(k, w uint64) {
	if ps, ok := t.big[k]; ok {
		ps.weight += w
		ps.n++
		t.big[k] = ps
		return
	}
	v := t.packed[k]
	weight, n := v>>pairCountBits+w, v&pairCountMax+1
	if weight > pairWeightMax || n > pairCountMax {
		delete(t.packed, k)
		t.big[k] = pairShare{weight, uint32(n)}
		return
	}
	t.packed[k] = weight<<pairCountBits | n
}

// each calls fn for every pair.
func (t *pairTable) each(fn func(k uint64, ps pairShare)) {
	for k, v := range t.packed {
		fn(k, pairShare{v >> pairCountBits, uint32(v & pairCountMax)})
	}
	for k, ps := range t.big {
		fn(k, ps)
	}
}

// deleteFunc deletes the pairs for whose keys del returns true.
func (t *pairTable) deleteFunc(del func(k uint64) bool) {
	maps.DeleteFunc(t.packed, func(k, _ uint64) bool { return del(k) })
	maps.DeleteFunc(t.big, func(k uint64, _ pairShare) bool { return del(k) })
}

// mixPair spreads a pair key over 64 bits (murmur3's fmix64).
func mixPair(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// pairShares scans the postings once and puts in shared, for every pair of
// nodes of partition p that share a fingerprint key held by 2 to MaxDF
// files, their shared weight and key count, keyed by a<<32|b with a < b. When the
// pairs outgrow the budget, it narrows p, and returns the partitions it
// left out. With first, it also sums, for every node holding keys held by
// more than MaxDF files, the weight of those keys (its boilerplate, left
// out of its weight when containments are computed) into g.common, and
// that of those whose level is known only to be below the top into
// g.below, by the highest level of the files holding each.
//
// With template (and not first), it reads only the keys held by more than
// MaxDF files, and puts in shared, for every such key, the pairs of its
// first template holder (in node order), the key's hub, with each of its
// other template holders: a star per key, so a family of n files that
// share their common keys adds about n pairs however many keys they share,
// and a hub's pairs sum all the common weight it shares with each.
func (g *grouping) pairShares(shared *pairTable, p partition, first, template bool) ([]partition, error) {
	type holder struct {
		node   uint32
		weight uint64
	}
	maxDF := g.opts.MaxDF
	var (
		more    []partition
		mask    = uint64(1)<<p.bits - 1
		cur     uint32 // the current fingerprint key
		started bool   // whether cur is set
		n       int    // the files holding it, all of them: a posting counts its content's
		lmax    uint8  // the highest level of the contents holding it (with first)
		holders []holder
	)
	flush := func() error {
		if n < 2 || len(holders) == 0 {
			return nil
		}
		slices.SortStableFunc(holders, func(x, y holder) int { return cmp.Compare(x.node, y.node) })
		holders = slices.CompactFunc(holders, func(x, y holder) bool { return x.node == y.node })
		common := maxDF >= 0 && n > maxDF
		switch {
		case template && !common:
			return nil
		case template:
			hub, started := holder{}, false
			for _, h := range holders {
				if !g.isTemplate(h.node) {
					continue
				}
				if !started {
					hub, started = h, true
					continue
				}
				k := uint64(hub.node)<<32 | uint64(h.node)
				if mixPair(k)&mask == p.residue {
					shared.add(k, min(hub.weight, h.weight))
				}
			}
		case common:
			if first {
				for _, h := range holders {
					g.common[h.node] += h.weight
					if g.leveled && int(lmax) < g.top {
						g.addBelow(h.node, lmax, h.weight)
					}
				}
			}
			return nil
		default:
			for i, a := range holders {
				if err := g.poll.tickN(len(holders) - i); err != nil {
					return err
				}
				for _, b := range holders[i+1:] {
					k := uint64(a.node)<<32 | uint64(b.node)
					if mixPair(k)&mask != p.residue {
						continue
					}
					shared.add(k, min(a.weight, b.weight))
				}
			}
		}
		for shared.len() > g.budget && p.bits < 63 {
			// Keep the half of the partition whose next bit is 0; the
			// other half is read again later.
			more = append(more, partition{p.bits + 1, p.residue | 1<<p.bits})
			p.bits++
			mask = uint64(1)<<p.bits - 1
			shared.deleteFunc(func(k uint64) bool { return mixPair(k)&mask != p.residue })
		}
		return nil
	}
	err := scanPostings(g.r, func(p postingEntry) error {
		if err := g.poll.tick(); err != nil {
			return err
		}
		if !started || p.key != cur {
			if err := flush(); err != nil {
				return err
			}
			g.opts.Progress.keyDone(p.key, cur)
			cur, started = p.key, true
			n, lmax, holders = 0, 0, holders[:0]
		}
		n += g.filesOf(p.cid)
		if first && g.leveled {
			lmax = max(lmax, g.levelOf(p.cid))
		}
		if node, ok := g.node(p.cid); ok {
			holders = append(holders, holder{node, p.weight})
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, err
	}
	return more, nil
}
