package index

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The selection of a Groups run (groups.go): the files and contents it
// considers (under the prefix, Visible), the number of files of every
// content, from the copy keys, and the folding of contents of one strong
// hash and size into one node, from the hash keys.

// selectContents finds the files and contents considered, counts the files
// of every content, and folds contents of one strong hash and size.
func (g *grouping) selectContents() error {
	prefix := strings.TrimRight(g.opts.PathPrefix, "/")
	visible := g.opts.Visible
	g.filtered = prefix != "" || visible != nil
	if g.filtered {
		keep := func(id, cid uint32, meta *FileMeta) {
			if InTree(meta.Path, g.opts.PathPrefix) && (visible == nil || visible(meta)) {
				g.files.add(id)
				g.contents.add(cid)
			}
		}
		var err error
		if prefix == "" {
			// Every file: the records in id order, without a read per file.
			lo, hi := keyspace(prefixRecord)
			err = g.scan(lo, hi, func(k, v []byte) error {
				id, meta, cid, err := parseRecord(k, v)
				if err != nil {
					return err
				}
				keep(id, cid, &meta)
				return nil
			})
		} else {
			lo := pathKey(prefix)
			err = g.scan(lo, prefixEnd(lo), func(k, v []byte) error {
				id, err := decodeID(v)
				if err != nil {
					return fmt.Errorf("path %q: %w", k[1:], err)
				}
				meta, cid, found, err := readMeta(g.r, id)
				if err != nil {
					return err
				}
				if found {
					keep(id, cid, &meta)
				}
				return nil
			})
		}
		if err != nil {
			return err
		}
	}

	// The copy keys, in content id order: the number of files of every
	// content (the document frequency of a key counts them).
	type count struct{ cid, n uint32 }
	var (
		counts []count
		cur, n uint32
	)
	lo, hi := keyspace(prefixCopy)
	err := g.scan(lo, hi, func(k, _ []byte) error {
		cid, _, err := parseCopyKey(k)
		if err != nil {
			return err
		}
		if n > 0 && cid != cur {
			if n >= 2 {
				counts = append(counts, count{cur, n})
			}
			n = 0
		}
		if n == 0 {
			cur = cid
			if !g.filtered {
				g.contents.add(cid)
			}
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	if n >= 2 {
		counts = append(counts, count{cur, n})
	}
	g.nfiles = make([]uint32, len(counts))
	for i, c := range counts {
		g.multi.add(c.cid)
		g.nfiles[i] = c.n
	}
	g.multi.freeze()

	// The hash keys, in runs of contents whose strong hashes begin alike:
	// the strong hashes held by several contents considered.
	type foldMember struct {
		cid  uint32
		size int64
	}
	type foldRun struct {
		strong  [32]byte
		members []foldMember
	}
	var (
		runs []foldRun
		run  []uint32 // the contents considered of one run
		head [hashBytes]byte
	)
	endRun := func() error {
		if len(run) < 2 {
			return nil
		}
		byStrong := make(map[[32]byte][]foldMember)
		for _, cid := range run {
			var c FileRecord
			found, err := g.readContent(cid, &c)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("%w: a hash key names content %d, which has no record", ErrCorrupt, cid)
			}
			byStrong[c.Strong] = append(byStrong[c.Strong], foldMember{cid, c.Summary.Size})
		}
		for strong, ms := range byStrong {
			if len(ms) >= 2 {
				runs = append(runs, foldRun{strong, ms})
			}
		}
		return nil
	}
	started := false
	lo, hi = keyspace(prefixHash)
	err = g.scan(lo, hi, func(k, _ []byte) error {
		h, cid, err := parseHashKey(k)
		if err != nil {
			return err
		}
		if !started || h != head {
			if err := endRun(); err != nil {
				return err
			}
			head, run, started = h, run[:0], true
		}
		if g.contents.has(cid) {
			run = append(run, cid)
		}
		return nil
	})
	if err == nil {
		err = endRun()
	}
	if err != nil {
		return err
	}
	g.contents.freeze()
	g.cids = make([]uint32, 0, g.contents.len())
	g.contents.each(func(cid uint32) { g.cids = append(g.cids, cid) })

	// Fold the contents of one strong hash and size into the node of the
	// one whose first file (in path order) comes first, as identical files
	// are folded.
	for _, fr := range runs {
		type cand struct {
			cid   uint32
			size  int64
			first string
		}
		var cs []cand
		for _, m := range fr.members {
			fs, err := g.filesOfContent(m.cid)
			if err != nil {
				return err
			}
			if len(fs) > 0 {
				cs = append(cs, cand{m.cid, m.size, fs[0].meta.Path})
			}
		}
		slices.SortFunc(cs, func(x, y cand) int { return cmp.Or(cmp.Compare(x.size, y.size), strings.Compare(x.first, y.first)) })
		for i := 0; i < len(cs); {
			j := i + 1
			for j < len(cs) && cs[j].size == cs[i].size {
				j++
			}
			for _, c := range cs[i+1 : j] {
				if g.alias == nil {
					g.alias, g.folded = make(map[uint32]uint32), make(map[uint32][]uint32)
				}
				rep, _ := g.contents.rank(cs[i].cid)
				d, _ := g.contents.rank(c.cid)
				g.alias[d] = rep
				g.folded[rep] = append(g.folded[rep], c.cid)
			}
			i = j
		}
	}
	return nil
}

// consideredFile is a file considered, with its id.
type consideredFile struct {
	id   uint32
	meta FileMeta
}

// filesOfContent returns the files considered that hold content cid, in
// path order.
func (g *grouping) filesOfContent(cid uint32) ([]consideredFile, error) {
	var fs []consideredFile
	lo := copyPrefix(nil, cid)
	err := g.scan(lo, prefixEnd(lo), func(k, _ []byte) error {
		_, id, err := parseCopyKey(k)
		if err != nil {
			return err
		}
		if !g.fileOK(id) {
			return nil
		}
		meta, _, found, err := readMeta(g.r, id)
		if err != nil {
			return err
		}
		if found {
			fs = append(fs, consideredFile{id, meta})
		}
		return nil
	})
	slices.SortFunc(fs, func(a, b consideredFile) int { return strings.Compare(a.meta.Path, b.meta.Path) })
	return fs, err
}
