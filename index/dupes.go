package index

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Dupes returns the sets of identical files (equal strong hash and size)
// in the directory tree prefix (InTree; "" for all), largest files first,
// then by first path. Files whose strong hash is unknown (all zero) are
// left out. Hard links to one inode are listed as files of their set (see
// DupeSet.Inodes). It stops when ctx is done, with an error wrapping
// ctx's (see cancel.go). The caller owns the result.
func (ix *Index) Dupes(ctx context.Context, prefix string) ([]DupeSet, error) {
	ds, err := ix.dupes(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("index.Dupes %q: %w", prefix, err)
	}
	return ds, nil
}

func (ix *Index) dupes(ctx context.Context, prefix string) ([]DupeSet, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ix.acquire(); err != nil {
		return nil, err
	}
	defer ix.release()
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	poll := poller{ctx: ctx}

	// The files of every content held by two or more, from the copy keys.
	multi := make(map[uint32][]uint32)
	var (
		cur uint32
		ids []uint32
	)
	endContent := func() {
		if len(ids) >= 2 {
			multi[cur] = slices.Clone(ids)
		}
	}
	lo, hi := keyspace(prefixCopy)
	err := scan(snap, lo, hi, func(k, _ []byte) error {
		if err := poll.tick(); err != nil {
			return err
		}
		cid, id, err := parseCopyKey(k)
		if err != nil {
			return err
		}
		if len(ids) > 0 && cid != cur {
			endContent()
			ids = ids[:0]
		}
		cur, ids = cid, append(ids, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	endContent()

	// The hash keys, in runs of contents whose strong hashes begin alike:
	// a set is the files of one content held by two or more, or of several
	// contents of one strong hash and size.
	var (
		sets []DupeSet
		run  []uint32
		head [hashBytes]byte
	)
	type same struct {
		strong [32]byte
		size   int64
	}
	flush := func() error {
		if len(run) == 1 && multi[run[0]] == nil {
			return nil
		}
		type file struct {
			meta FileMeta
			id   uint32
		}
		files := make(map[same][]file)
		for _, cid := range run {
			if err := poll.tick(); err != nil {
				return err
			}
			var c FileRecord
			found, err := readContent(snap, cid, &c)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("%w: a hash key names content %d, which has no record", ErrCorrupt, cid)
			}
			ids, ok := multi[cid]
			if !ok {
				if ids, err = filesOfContent(snap, cid); err != nil {
					return err
				}
			}
			k := same{c.Strong, c.Summary.Size}
			for _, id := range ids {
				if err := poll.tick(); err != nil {
					return err
				}
				meta, _, found, err := readMeta(snap, id)
				if err != nil {
					return err
				}
				if found && InTree(meta.Path, prefix) {
					files[k] = append(files[k], file{meta, id})
				}
			}
		}
		for k, fs := range files {
			if len(fs) >= 2 {
				slices.SortFunc(fs, func(a, b file) int { return strings.Compare(a.meta.Path, b.meta.Path) })
				d := DupeSet{Size: k.size, Strong: k.strong, Files: make([]FileMeta, len(fs)), IDs: make([]uint32, len(fs))}
				for i, f := range fs {
					d.Files[i], d.IDs[i] = f.meta, f.id
				}
				sets = append(sets, d)
			}
		}
		return nil
	}
	lo, hi = keyspace(prefixHash)
	err = scan(snap, lo, hi, func(k, _ []byte) error {
		if err := poll.tick(); err != nil {
			return err
		}
		h, cid, err := parseHashKey(k)
		if err != nil {
			return err
		}
		if len(run) > 0 && h != head {
			if err := flush(); err != nil {
				return err
			}
			run = run[:0]
		}
		head, run = h, append(run, cid)
		return nil
	})
	if err == nil && len(run) > 0 {
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

// filesOfContent returns the ids of the files holding content cid, in id
// order, from its copy keys in r.
func filesOfContent(r pebble.Reader, cid uint32) ([]uint32, error) {
	var ids []uint32
	lo := copyPrefix(nil, cid)
	err := scan(r, lo, prefixEnd(lo), func(k, _ []byte) error {
		_, id, err := parseCopyKey(k)
		if err == nil {
			ids = append(ids, id)
		}
		return err
	})
	return ids, err
}

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

// HardLinkOf returns, for each file of the set, the path of the file of
// the same inode that the index has known longest (the lowest id; without
// IDs, the first in path order), or "" for that file itself: a name made
// with ln after the file was indexed is the hard link, and the name the
// file had is not called a link of it.
func (d *DupeSet) HardLinkOf() []string {
	type key struct{ dev, ino uint64 }
	oldest := make(map[key]int, len(d.Files))
	for i, f := range d.Files {
		if f.Ino == 0 {
			continue
		}
		k := key{f.Dev, f.Ino}
		if j, ok := oldest[k]; !ok || len(d.IDs) == len(d.Files) && d.IDs[i] < d.IDs[j] {
			oldest[k] = i
		}
	}
	out := make([]string, len(d.Files))
	for i, f := range d.Files {
		if j, ok := oldest[key{f.Dev, f.Ino}]; ok && f.Ino != 0 && j != i {
			out[i] = d.Files[j].Path
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
