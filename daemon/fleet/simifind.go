package fleet

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
)

// SimiQuery asks the fleet, by SimiHash, which files on other hosts are
// near-identical to a file (doc.go, "Asking by SimiHash").
type SimiQuery struct {
	// Summary is the file's size, strong hash, sum table and skew key.
	Summary fingerprint.Summary
	// Tolerances are SimiFind's; zero fields mean the defaults.
	Tolerances fingerprint.Tolerances
	// Path is the file's path on the asking host, or "": with SameExt,
	// only files with its extension (case-insensitive) are listed.
	Path    string
	SameExt bool
	// Limit caps the matches, the nearest first; 0 means no cap but
	// MaxContents contents of MaxFilesPerContent files.
	Limit int
	// ExcludeHost names a host whose files are left out (the asking
	// host, which answers for itself from its own index).
	ExcludeHost string
	// Silence: hosts not heard from for longer are left out; 0 means none
	// is.
	Silence time.Duration
}

// SimiMatch is a file on a host of the fleet that SimiFind calls similar
// to the query, with its verdict.
type SimiMatch struct {
	Host    string
	Path    string
	Size    int64
	MtimeNs int64
	Type    fingerprint.Type
	// Content is the fleet's id of the file's content.
	Content int64
	fingerprint.SimiVerdict
}

// SimiResult answers a SimiQuery.
type SimiResult struct {
	Tolerances   fingerprint.Tolerances // normalized
	KeyTolerance uint64                 // for the query's size
	SumTolerance uint64
	// KeyHits counts the fleet's contents whose key is within the key
	// tolerance (those without SimiHash keys have none), and SumHits those
	// of them found similar (at most MaxContents are read); Total counts
	// their files on the hosts asked, before Limit.
	KeyHits, SumHits, Total int
	Matches                 []SimiMatch
}

// simiFindSQL is SimiFind's one round trip. keyed reads the contents whose
// skew key is within [$1, $2], one range scan of sif_contents_simi; near
// keeps those whose size is within [$3, $4] and whose sum table ($5) is
// within $6 (L1), the nearest MaxContents ($7); then up to
// MaxFilesPerContent ($9) of their files on hosts other than $8 heard
// from within $10. One more row, whose content id is NULL, counts the key
// hits and the contents kept.
const simiFindSQL = `
WITH keyed AS (
	SELECT content_id, size, strong, type, simi_key, simi_sum FROM sif_contents
	WHERE simi_key BETWEEN $1 AND $2
), near AS (
	SELECT * FROM (
		SELECT keyed.*, (SELECT sum(abs(a - b)) FROM unnest(simi_sum, $5::bigint[]) AS u(a, b)) AS dist
		FROM keyed WHERE size BETWEEN $3 AND $4
	) d WHERE dist <= $6
	ORDER BY dist, content_id LIMIT $7
)
SELECT n.content_id, n.size, n.strong, n.type, n.simi_key, n.simi_sum, h.name, f.path, f.size, f.mtime, 0::bigint, 0::bigint
FROM near n
CROSS JOIN LATERAL (
	SELECT host_id, path, size, mtime FROM sif_files f
	WHERE f.content_id = n.content_id AND f.host_id <> $8
	LIMIT $9
) f
JOIN sif_hosts h ON h.host_id = f.host_id
WHERE h.last_seen > now() - $10::interval
UNION ALL
SELECT NULL, 0, '', 0, 0, '{}', '', '', 0, 0, (SELECT count(*) FROM keyed), (SELECT count(*) FROM near)
`

// SimiFind answers q from the fleet database in one round trip, as the
// local index's SimiFind does (fingerprint.Tolerances.Judge): the contents
// whose skew keys are within the key tolerance, read as one range of the
// index on simi_key, then whose sizes are within the size ratio, then
// whose sum tables are within the sum tolerance; their files on other
// hosts heard from within q.Silence, ordered by sum distance, then host
// and path. Contents published only by hosts without SimiHash keys have
// none and are not found.
func SimiFind(ctx context.Context, db Querier, q SimiQuery) (*SimiResult, error) {
	tol, err := q.Tolerances.Normalize()
	if err != nil {
		return nil, err
	}
	size := q.Summary.Size
	res := &SimiResult{Tolerances: tol, KeyTolerance: tol.KeyTolerance(size), SumTolerance: tol.SumTolerance(size)}
	lo, hi := tol.KeyRange(q.Summary.Key, size)
	// The database's size bounds are a little wide; Judge decides.
	minSize := int64(math.Floor(tol.SizeRatio*float64(size))) - 1
	maxSize := int64(math.Min(math.Ceil(float64(size)/tol.SizeRatio)+1, math.MaxInt64/2))
	sums := make([]int64, len(q.Summary.Sum))
	for i, n := range q.Summary.Sum {
		sums[i] = int64(n)
	}
	rows, err := db.Query(ctx, simiFindSQL, int64(lo), int64(hi), minSize, maxSize, sums,
		int64(min(res.SumTolerance, math.MaxInt64)), MaxContents, HostID(q.ExcludeHost), MaxFilesPerContent, intervalOf(q.Silence))
	if err != nil {
		return nil, fmt.Errorf("fleet: simifind: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id *int64
		var size, key, keyHits, sumHits int64
		var strong, path []byte
		var typ int16
		var sum []int64
		var m SimiMatch
		if err := rows.Scan(&id, &size, &strong, &typ, &key, &sum, &m.Host, &path, &m.Size, &m.MtimeNs, &keyHits, &sumHits); err != nil {
			return nil, fmt.Errorf("fleet: simifind: %w", err)
		}
		if id == nil {
			res.KeyHits, res.SumHits = int(keyHits), int(sumHits)
			continue
		}
		c := fingerprint.Summary{Size: size, Key: uint32(key)}
		if len(strong) != len(c.Strong) || len(sum) != len(c.Sum) {
			return nil, fmt.Errorf("fleet: simifind: content %d: strong hash of %d bytes, sum table of %d sums", *id, len(strong), len(sum))
		}
		copy(c.Strong[:], strong)
		for i, n := range sum {
			c.Sum[i] = uint32(n)
		}
		m.SimiVerdict = tol.Judge(&q.Summary, &c)
		m.Content, m.Path, m.Type = *id, string(path), fingerprint.Type(typ)
		if !m.Similar || q.SameExt && !strings.EqualFold(filepath.Ext(m.Path), filepath.Ext(q.Path)) {
			continue
		}
		res.Matches = append(res.Matches, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fleet: simifind: %w", err)
	}
	slices.SortFunc(res.Matches, func(a, b SimiMatch) int {
		return cmp.Or(cmp.Compare(a.SumDistance, b.SumDistance), cmp.Compare(a.Host, b.Host), cmp.Compare(a.Path, b.Path))
	})
	res.Total = len(res.Matches)
	if q.Limit > 0 && len(res.Matches) > q.Limit {
		res.Matches = res.Matches[:q.Limit]
	}
	return res, nil
}
