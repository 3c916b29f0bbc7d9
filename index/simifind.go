package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sif-dev/sif/index/fingerprint"
)

// ErrNoSimiHash is returned by SimiFind on an index that keeps no SimiHash
// keys (Options.SimiHash).
var ErrNoSimiHash = errors.New("index: the index keeps no SimiHash keys (it was created without simihash)")

// SimiQuery is a SimiFind query: a file's SimiHash summary.
type SimiQuery struct {
	// Path is the query's file, never listed itself; "" for a query of a
	// file the index does not hold.
	Path string
	// Summary is the query's size, strong hash, sum table and skew key.
	Summary fingerprint.Summary
	// Tolerances are SimiFind's; zero fields mean the defaults.
	Tolerances fingerprint.Tolerances
	// Limit bounds the matches listed, the nearest first; 0 lists all.
	Limit int
	// PathPrefix keeps only files in this directory tree (InTree); ""
	// keeps all.
	PathPrefix string
	// SameExt keeps only files with Path's extension (case-insensitive):
	// the effect of the paper's extension-aware key (fingerprint.ExtKey),
	// which keeps files of different types far apart, on keys kept per
	// content rather than per file name.
	SameExt bool
	// Visible, when set, keeps only files whose record it accepts, as if
	// the others were not indexed: they are neither listed nor counted in
	// Total (as QueryOptions.Visible).
	Visible func(m *FileMeta) bool
}

// SimiResult is SimiFind's answer.
type SimiResult struct {
	Tolerances   fingerprint.Tolerances // normalized
	KeyTolerance uint64                 // for the query's size
	SumTolerance uint64
	// KeyHits counts the contents whose key is within the key tolerance
	// (the query's own among them), and SumHits those of them found
	// similar; Total counts the files of the similar contents, before
	// Limit.
	KeyHits, SumHits, Total int
	Matches                 []SimiMatch
}

// SimiMatch is a file SimiFind found similar, with its verdict.
type SimiMatch struct {
	FileRecord
	fingerprint.SimiVerdict
}

// SimiFind answers with the files SimiFind calls similar to q (see
// fingerprint.Tolerances.Judge): those whose contents' skew keys are
// within the key tolerance, read as one ordered range of SimiHash keys,
// then whose sizes are within the size ratio, then whose sum tables are
// within the sum tolerance; ordered by sum distance, then path. The file at
// q.Path is never listed; its copies are, flagged identical. It fails with
// ErrNoSimiHash on an index without SimiHash keys. It sees one consistent
// state of the index, and stops when ctx is done with an error wrapping
// ctx's.
func (ix *Index) SimiFind(ctx context.Context, q SimiQuery) (*SimiResult, error) {
	res, err := ix.simiFind(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("index.SimiFind %q: %w", q.Path, err)
	}
	return res, nil
}

func (ix *Index) simiFind(ctx context.Context, q SimiQuery) (*SimiResult, error) {
	tol, err := q.Tolerances.Normalize()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQuery, err)
	}
	if !ix.simihash {
		return nil, ErrNoSimiHash
	}
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

	res := &SimiResult{Tolerances: tol, KeyTolerance: tol.KeyTolerance(q.Summary.Size), SumTolerance: tol.SumTolerance(q.Summary.Size)}
	type hit struct {
		cid uint32
		v   fingerprint.SimiVerdict
	}
	var hits []hit
	lo, hi := tol.KeyRange(q.Summary.Key, q.Summary.Size)
	err = scan(snap, simiKey(lo, 0), append(simiKey(hi, math.MaxUint32), 0), func(k, _ []byte) error {
		if err := poll.tick(); err != nil {
			return err
		}
		_, cid, err := parseSimiKey(k)
		if err != nil {
			return err
		}
		res.KeyHits++
		var rec FileRecord
		found, err := readContent(snap, cid, &rec)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: simihash key %x names content %d, which has no record", ErrCorrupt, k, cid)
		}
		if v := tol.Judge(&q.Summary, &rec.Summary); v.Similar {
			hits = append(hits, hit{cid, v})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.SumHits = len(hits)
	for _, h := range hits {
		ids, err := filesOfContent(snap, h.cid)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if err := poll.tick(); err != nil {
				return nil, err
			}
			rec, _, found, err := readRecord(snap, id)
			if err != nil {
				return nil, err
			}
			if found && q.keeps(&rec) {
				res.Matches = append(res.Matches, SimiMatch{rec, h.v})
			}
		}
	}
	slices.SortFunc(res.Matches, func(a, b SimiMatch) int {
		return cmp.Or(cmp.Compare(a.SumDistance, b.SumDistance), cmp.Compare(a.Path, b.Path))
	})
	res.Total = len(res.Matches)
	if q.Limit > 0 && len(res.Matches) > q.Limit {
		res.Matches = res.Matches[:q.Limit]
	}
	return res, nil
}

// keeps reports whether q lists the file of rec, which is similar to it.
func (q *SimiQuery) keeps(rec *FileRecord) bool {
	return rec.Path != q.Path && InTree(rec.Path, q.PathPrefix) &&
		(!q.SameExt || strings.EqualFold(filepath.Ext(rec.Path), filepath.Ext(q.Path))) &&
		(q.Visible == nil || q.Visible(&rec.FileMeta))
}
