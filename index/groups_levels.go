package index

import (
	"fmt"
	"math"
)

// The levels of a Groups run (groups.go), read only when the scheme has
// several and MaxDF is set: the level of every content, and the weight of
// each node's boilerplate whose level is known only to be below the top,
// which comparing two files at a level above one's own leaves out.

// readLevels reads the level of every content from its record, in
// content id order.
func (g *grouping) readLevels() error {
	g.levels = make([]uint8, 0, g.contents.len()) // all of them, unless filtered
	var c FileRecord
	lo, hi := keyspace(prefixContent)
	err := g.scan(lo, hi, func(k, v []byte) error {
		cid, err := parseIDKey(k, prefixContent)
		if err != nil {
			return err
		}
		if _, err := decodeContent(v, &c); err != nil {
			return fmt.Errorf("content %d: %w", cid, err)
		}
		g.all.add(cid)
		g.levels = append(g.levels, c.Level)
		return nil
	})
	g.all.freeze()
	return err
}

// levelOf returns the level of content cid: 0 when levels are not read or
// it has no record (which only a corrupt index lacks).
func (g *grouping) levelOf(cid uint32) uint8 {
	if g.levels == nil {
		return 0
	}
	if i, ok := g.all.rank(cid); ok {
		return g.levels[i]
	}
	return 0
}

// addBelow adds w to the boilerplate of node d whose level is known only
// to be m or more, m below the top.
func (g *grouping) addBelow(d uint32, m uint8, w uint64) {
	l := g.levelOf(g.cids[d])
	if m < l {
		return // a key the node holds is of its level or more
	}
	if g.belowAt == nil {
		g.belowAt = make([]uint32, len(g.cids))
	}
	if g.belowAt[d] == 0 {
		g.belowAt[d] = uint32(len(g.below)) + 1
		g.below = append(g.below, make([]uint32, g.top-int(l))...)
	}
	i := g.belowAt[d] - 1 + uint32(m-l)
	// Saturating: a file below the top level is small, and its weight with
	// the manber scheme is the number of its windows kept.
	g.below[i] = uint32(min(uint64(g.below[i])+w, math.MaxUint32))
}

// belowWeight returns the weight of node d's boilerplate whose level is
// known only to be below lvl: that of its keys held by more than MaxDF
// files of which the highest level is below lvl. l is the node's level.
func (g *grouping) belowWeight(d uint32, l uint8, lvl int) uint64 {
	if g.belowAt == nil || g.belowAt[d] == 0 {
		return 0
	}
	var w uint64
	at := g.belowAt[d] - 1
	for m := int(l); m < lvl && m < g.top; m++ {
		w += uint64(g.below[at+uint32(m-int(l))])
	}
	return w
}
