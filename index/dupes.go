package index

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Dupes returns the sets of identical files (equal strong hash and size)
// under prefix, largest files first, then by first path. Files whose strong
// hash is unknown (all zero) are left out. The caller owns the result.
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
		ids    []uint32
	)
	flush := func() error {
		if len(ids) < 2 || strong == ([32]byte{}) {
			return nil
		}
		bySize := make(map[int64][]string)
		for _, id := range ids {
			rec, found, err := readRecord(snap, id)
			if err != nil {
				return err
			}
			if found && strings.HasPrefix(rec.Path, prefix) {
				bySize[rec.Summary.Size] = append(bySize[rec.Summary.Size], rec.Path)
			}
		}
		for size, paths := range bySize {
			if len(paths) >= 2 {
				slices.Sort(paths)
				sets = append(sets, DupeSet{Size: size, Strong: strong, Paths: paths})
			}
		}
		return nil
	}
	lo, hi := keyspace(prefixStrong)
	err := scan(snap, lo, hi, func(k, _ []byte) error {
		s, id, err := parseStrongKey(k)
		if err != nil {
			return err
		}
		if s != strong {
			if err := flush(); err != nil {
				return err
			}
			strong, ids = s, ids[:0]
		}
		ids = append(ids, id)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(sets, func(x, y DupeSet) int {
		return cmp.Or(-cmp.Compare(x.Size, y.Size), strings.Compare(x.Paths[0], y.Paths[0]))
	})
	return sets, nil
}
