package index

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Dupes returns the sets of identical files (equal strong hash and size)
// in the directory tree prefix (InTree; "" for all), largest files first,
// then by first path. Files whose strong hash is unknown (all zero) are
// left out. Hard links to one inode are listed as files of their set (see
// DupeSet.Inodes). The caller owns the result.
func (ix *Index) Dupes(prefix string) ([]DupeSet, error) {
	ds, err := ix.dupes(prefix)
	if err != nil {
		return nil, fmt.Errorf("index.Dupes %q: %w", prefix, err)
	}
	return ds, nil
}

func (ix *Index) dupes(prefix string) ([]DupeSet, error) {
	if err := ix.acquire(); err != nil {
		return nil, err
	}
	defer ix.release()
	snap := ix.db.NewSnapshot()
	defer snap.Close()

	var (
		sets   []DupeSet
		strong [32]byte
		keys   []copyKey // the copy keys of strong
	)
	flush := func() error {
		if len(keys) < 2 || strong == ([32]byte{}) {
			return nil
		}
		bySize := make(map[int64][]FileMeta)
		var (
			cur  uint32
			size int64
		)
		for i, k := range keys {
			if i == 0 || k.cid != cur {
				var c FileRecord
				found, err := readContent(snap, k.cid, &c)
				if err != nil {
					return err
				}
				if !found {
					return fmt.Errorf("%w: copy key of file id %d names content %d, which has no record", ErrCorrupt, k.id, k.cid)
				}
				cur, size = k.cid, c.Summary.Size
			}
			meta, _, found, err := readMeta(snap, k.id)
			if err != nil {
				return err
			}
			if found && InTree(meta.Path, prefix) {
				bySize[size] = append(bySize[size], meta)
			}
		}
		for size, files := range bySize {
			if len(files) >= 2 {
				slices.SortFunc(files, func(a, b FileMeta) int { return strings.Compare(a.Path, b.Path) })
				sets = append(sets, DupeSet{Size: size, Strong: strong, Files: files})
			}
		}
		return nil
	}
	lo, hi := keyspace(prefixStrong)
	err := scan(snap, lo, hi, func(k, _ []byte) error {
		s, cid, id, err := parseStrongKey(k)
		if err != nil {
			return err
		}
		if s != strong {
			if err := flush(); err != nil {
				return err
			}
			strong, keys = s, keys[:0]
		}
		keys = append(keys, copyKey{cid, id})
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(sets, func(x, y DupeSet) int {
		return cmp.Or(-cmp.Compare(x.Size, y.Size), strings.Compare(x.Files[0].Path, y.Files[0].Path))
	})
	return sets, nil
}

// copyKey is a parsed copy key, without its strong hash.
type copyKey struct{ cid, id uint32 }

// Inodes returns the number of distinct files on disk in the set: files
// with the same device and inode are hard links to one file, which takes
// its size once. A file with no inode (0) counts as its own.
func (d *DupeSet) Inodes() int {
	type key struct{ dev, ino uint64 }
	seen := make(map[key]bool, len(d.Files))
	n := 0
	for _, f := range d.Files {
		k := key{f.Dev, f.Ino}
		if f.Ino == 0 || !seen[k] {
			n++
		}
		if f.Ino != 0 {
			seen[k] = true
		}
	}
	return n
}

// HardLinkOf returns, for each file of the set, the path of the first
// file (in path order) that is the same inode, or "" for the first file of
// each inode.
func (d *DupeSet) HardLinkOf() []string {
	type key struct{ dev, ino uint64 }
	first := make(map[key]string, len(d.Files))
	out := make([]string, len(d.Files))
	for i, f := range d.Files {
		if f.Ino == 0 {
			continue
		}
		k := key{f.Dev, f.Ino}
		if p, ok := first[k]; ok {
			out[i] = p
		} else {
			first[k] = f.Path
		}
	}
	return out
}

// Redundant returns the copies the set holds beyond one, counting hard
// links to one inode as one copy, and the bytes they take.
func (d *DupeSet) Redundant() (files int, bytes int64) {
	n := d.Inodes() - 1
	return n, int64(n) * d.Size
}
