package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// Query asks the fleet which files, on which hosts, hold a good part of a
// file. See doc.go, "Asking".
type Query struct {
	// Sketch is the file's sketch, made with Params, the fleet's (and the
	// asking host's) parameters.
	Sketch *fingerprint.Sketch
	Params fingerprint.Params
	// Path is the file's path on the asking host, or "": with SameExt,
	// its extension is compared.
	Path string
	// Threshold is the least containment of the query in a match, a
	// fraction; 0 means index.DefaultThreshold.
	Threshold float64
	// Limit caps the matches; 0 means no cap but MaxRows.
	Limit int
	// MaxDF: a fingerprint key held by more contents than this carries no
	// evidence and is skipped; 0 means index.DefaultMaxDF.
	MaxDF int
	// MinFeatures: with fewer keys left, only identical files are
	// listed; 0 means index.DefaultMinFeatures.
	MinFeatures int
	// SizeRatio, SameExt: as index.QueryOptions.
	SizeRatio float64
	SameExt   bool
	SameType  bool
	// ExcludeHost names a host whose files are left out (the asking host,
	// which answers for itself from its own index).
	ExcludeHost string
	// Silence: hosts not heard from for longer are left out; 0 means none
	// is.
	Silence time.Duration
	// Grouped reads the postings grouped by key, for postings partitioned
	// over servers (Partitioned); else key by key.
	Grouped bool
}

// MaxContents bounds the contents a query reads the files of (the best by
// shared weight), and MaxFilesPerContent the files it lists per content.
const (
	MaxContents        = 500
	MaxFilesPerContent = 100
)

// Match is a file on a host of the fleet that holds a good part of a
// query. Its measures are estimates from fingerprints: the bytes are on
// the other host.
type Match struct {
	Host               string
	Path               string
	Size               int64
	MtimeNs            int64
	Containment        float64 // of the query in the file, a fraction
	ReverseContainment float64
	Resemblance        float64
	SharedWeight       uint64
	Identical          bool
	Type               fingerprint.Type
	// Content is the fleet's id of the file's content.
	Content int64
}

// Result answers a Query.
type Result struct {
	Matches []Match
	// Fingerprints is the number of the query's fingerprint keys, Skipped
	// how many were held by more than MaxDF contents.
	Fingerprints int
	Skipped      int
	TooFew       bool
	// Candidates is the number of contents sharing a counted key with the
	// query (at most MaxContents are read), and Total the number of files
	// that passed the threshold and filters before Limit.
	Candidates int
	Total      int
}

// The one round trip of a query, in two forms that differ in how they
// read the postings of the query's keys ($1, weights $2) with the
// document-frequency cut ($3 = MaxDF+1: a key with that many postings or
// more is common and skipped).
//
// similarLateral reads, for each key, its first $3 postings: an index
// range scan of the primary key that stops there, however common the key.
// It is the faster on one server. On postings partitioned over servers
// (postgres_fdw) each key is a round trip to a shard.
//
// similarGrouped asks for the postings of every key at once, grouped by
// key, the cut inside the aggregate: with partitionwise aggregation each
// shard answers in one round trip, all shards at once, and sends no
// posting of a common key. It counts every posting of a common key.
const (
	similarLateral = `
WITH q AS (
	SELECT * FROM unnest($1::int[], $2::bigint[]) AS q(key, w)
), hits AS (
	SELECT q.key, q.w, p.content_id, p.weight
	FROM q CROSS JOIN LATERAL (
		SELECT content_id, weight FROM sif_postings p WHERE p.key = q.key LIMIT $3
	) p
), common AS (
	SELECT key FROM hits GROUP BY key HAVING count(*) >= $3
), shared AS (
	SELECT content_id, sum(least(weight, w)) AS shared FROM hits
	WHERE key NOT IN (SELECT key FROM common)
	GROUP BY content_id
)`
	similarGrouped = `
WITH q AS (
	SELECT * FROM unnest($1::int[], $2::bigint[]) AS q(key, w)
), agg AS (
	SELECT key, CASE WHEN count(*) < $3 THEN array_agg(content_id) END AS cs,
		CASE WHEN count(*) < $3 THEN array_agg(weight) END AS ws
	FROM sif_postings WHERE key = ANY($1) GROUP BY key
), common AS (
	SELECT key FROM agg WHERE cs IS NULL
), shared AS (
	SELECT u.content_id, sum(least(u.weight, q.w)) AS shared
	FROM agg JOIN q ON q.key = agg.key CROSS JOIN LATERAL unnest(agg.cs, agg.ws) AS u(content_id, weight)
	WHERE agg.cs IS NOT NULL
	GROUP BY u.content_id
)`
	// similarTail keeps the best MaxContents contents ($4), with the
	// identical content (by strong hash, $5 and $6) whatever its share;
	// then their records and up to MaxFilesPerContent ($8) of their files
	// on hosts other than $7 heard from within $9. The skipped keys come
	// back in every row.
	similarTail = `, best AS (
	SELECT content_id, max(shared) AS shared FROM (
		(SELECT content_id, shared FROM shared ORDER BY shared DESC, content_id LIMIT $4)
		UNION ALL
		(SELECT content_id, 0 FROM sif_contents WHERE content_id = $5 AND strong = $6)
	) u GROUP BY content_id
)
SELECT b.content_id, b.shared, c.size, c.weight, c.level, c.level_weights, c.type, c.strong,
	h.name, f.path, f.size, f.mtime,
	(SELECT count(*) FROM shared) AS candidates,
	(SELECT coalesce(array_agg(key), '{}') FROM common) AS skipped
FROM best b
JOIN sif_contents c ON c.content_id = b.content_id
CROSS JOIN LATERAL (
	SELECT host_id, path, size, mtime FROM sif_files f
	WHERE f.content_id = b.content_id AND f.host_id <> $7
	LIMIT $8
) f
JOIN sif_hosts h ON h.host_id = f.host_id
WHERE h.last_seen > now() - $9::interval
`
)

// Partitioned reports whether sif_postings is a partitioned table (on one
// server or, through postgres_fdw, over several): queries then read the
// postings grouped by key (Query.Grouped).
func Partitioned(ctx context.Context, db Querier) (bool, error) {
	var kind string
	err := db.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE relname = 'sif_postings' AND relkind IN ('r', 'p') LIMIT 1`).Scan(&kind)
	if err != nil {
		return false, fmt.Errorf("fleet: reading the postings table's kind: %w", err)
	}
	return kind == "p", nil
}

// Similar answers q from the fleet database in one round trip.
func Similar(ctx context.Context, db Querier, q Query) (*Result, error) {
	entries, err := index.QueryEntries(q.Params, q.Sketch)
	if err != nil {
		return nil, err
	}
	if q.Threshold <= 0 {
		q.Threshold = index.DefaultThreshold
	}
	if q.MaxDF == 0 {
		q.MaxDF = index.DefaultMaxDF
	}
	if q.MinFeatures == 0 {
		q.MinFeatures = index.DefaultMinFeatures
	}
	keys := make([]int32, len(entries))
	weights := make([]int64, len(entries))
	for i, e := range entries {
		keys[i], weights[i] = int32(e.Key), int64(min(e.Weight, 1<<62))
	}
	silence := intervalOf(q.Silence)
	var strongID *int64
	if q.Sketch.Strong != ([32]byte{}) {
		id := ContentID(q.Sketch.Strong)
		strongID = &id
	}
	maxDF := q.MaxDF
	if maxDF < 0 {
		maxDF = 1 << 30
	}
	sql := similarLateral + similarTail
	if q.Grouped {
		sql = similarGrouped + similarTail
	}
	rows, err := db.Query(ctx, sql, keys, weights, maxDF+1, MaxContents, strongID, q.Sketch.Strong[:],
		HostID(q.ExcludeHost), MaxFilesPerContent, silence)
	if err != nil {
		return nil, fmt.Errorf("fleet: query: %w", err)
	}
	defer rows.Close()
	res := &Result{Fingerprints: len(entries)}
	var skipped []int32
	type row struct {
		Match
		size, weight int64
		level, typ   int16
		levelWeights []int64
		strong       []byte
	}
	var got []row
	for rows.Next() {
		var r row
		var shared int64
		var path []byte
		var candidates int
		if err := rows.Scan(&r.Content, &shared, &r.size, &r.weight, &r.level, &r.levelWeights, &r.typ, &r.strong,
			&r.Host, &path, &r.Size, &r.MtimeNs, &candidates, &skipped); err != nil {
			return nil, fmt.Errorf("fleet: query: %w", err)
		}
		r.Path = string(path)
		r.SharedWeight = uint64(max(shared, 0))
		res.Candidates = candidates
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fleet: query: %w", err)
	}
	res.Skipped = len(skipped)
	skip := map[uint32]bool{}
	for _, k := range skipped {
		skip[uint32(k)] = true
	}

	// The query's weight at each level, of the keys that count; as the
	// local index measures (index/query.go).
	lvl := q.Params.Level(q.Sketch.Size)
	var weightAt, fullAt, countAt [18]uint64
	for _, e := range entries {
		for l := 0; l <= min(int(e.Level), 17); l++ {
			fullAt[l] += e.Weight
			if !skip[e.Key] {
				weightAt[l] += e.Weight
				countAt[l]++
			}
		}
	}
	res.TooFew = len(entries)-res.Skipped < q.MinFeatures
	ext := strings.ToLower(filepath.Ext(q.Path))
	for _, r := range got {
		rec := index.FileRecord{Weight: uint64(r.weight), Level: uint8(r.level)}
		for _, w := range r.levelWeights {
			rec.LevelWeights = append(rec.LevelWeights, uint64(w))
		}
		l := min(max(lvl, int(rec.Level)), 17)
		identical := len(r.strong) == 32 && [32]byte(r.strong) == q.Sketch.Strong && r.size == q.Sketch.Size
		qw, fw := weightAt[l], rec.WeightAt(l)
		shared := r.SharedWeight
		if identical {
			qw, shared = fullAt[l], fullAt[l]
		}
		m := r.Match
		m.Type = fingerprint.Type(r.typ)
		m.Identical = identical
		m.Containment = fingerprint.Ratio(shared, qw)
		m.ReverseContainment = fingerprint.Ratio(shared, fw)
		m.Resemblance = fingerprint.Ratio(shared, qw+fw-min(shared, qw+fw))
		switch {
		case !identical && (res.TooFew || countAt[l] < uint64(q.MinFeatures)):
			continue
		case !identical && m.Containment < q.Threshold:
			continue
		case q.SizeRatio > 0 && !withinRatio(m.Size, q.Sketch.Size, q.SizeRatio):
			continue
		case q.SameExt && strings.ToLower(filepath.Ext(m.Path)) != ext:
			continue
		case q.SameType && m.Type != q.Sketch.Type:
			continue
		}
		res.Matches = append(res.Matches, m)
	}
	res.Total = len(res.Matches)
	slices.SortFunc(res.Matches, compareMatches)
	if q.Limit > 0 && len(res.Matches) > q.Limit {
		res.Matches = res.Matches[:q.Limit]
	}
	return res, nil
}

// compareMatches orders matches as the local index does: identical files
// first, then by containment, resemblance, and host and path.
func compareMatches(a, b Match) int {
	if a.Identical != b.Identical {
		if a.Identical {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(b.Containment, a.Containment), cmp.Compare(b.Resemblance, a.Resemblance),
		cmp.Compare(a.Host, b.Host), cmp.Compare(a.Path, b.Path))
}

func withinRatio(a, b int64, ratio float64) bool {
	x, y := float64(max(a, 1)), float64(max(b, 1))
	return max(x, y)/min(x, y) <= ratio
}

// ErrTimeout is wrapped by the error of a query the database did not
// answer within its time.
var ErrTimeout = errors.New("fleet: the database did not answer in time")

// DupeSet is a set of identical files across the fleet: one content and
// the files holding it, on every host.
type DupeSet struct {
	Content int64
	Strong  [32]byte
	Size    int64
	Files   []DupeFile
	Hosts   int
}

// DupeFile is one file of a DupeSet.
type DupeFile struct {
	Host string
	Path string
}

// MaxDupeSets caps the sets Dupes returns, the most redundant bytes first.
const MaxDupeSets = 10_000

// dupesSQL lists the contents held by two or more files of hosts heard
// from recently, the most redundant bytes first.
const dupesSQL = `
WITH live AS (
	SELECT host_id, name FROM sif_hosts WHERE last_seen > now() - $1::interval
), sets AS (
	SELECT f.content_id, count(*) AS n FROM sif_files f JOIN live USING (host_id)
	WHERE f.content_id IS NOT NULL
	GROUP BY f.content_id HAVING count(*) > 1
), best AS (
	SELECT s.content_id, s.n, c.size, c.strong FROM sets s JOIN sif_contents c USING (content_id)
	ORDER BY c.size * (s.n - 1) DESC, s.content_id LIMIT $2
)
SELECT b.content_id, b.size, b.strong, live.name, f.path
FROM best b JOIN sif_files f ON f.content_id = b.content_id JOIN live USING (host_id)
ORDER BY b.size * (b.n - 1) DESC, b.content_id, live.name, f.path
`

// Dupes returns the sets of identical files across the fleet, the most
// redundant bytes first, at most MaxDupeSets; hosts silent for longer
// than silence (0: none is) are left out.
func Dupes(ctx context.Context, db Querier, silence time.Duration) ([]DupeSet, error) {
	rows, err := db.Query(ctx, dupesSQL, intervalOf(silence), MaxDupeSets)
	if err != nil {
		return nil, fmt.Errorf("fleet: dupes: %w", err)
	}
	defer rows.Close()
	var sets []DupeSet
	for rows.Next() {
		var id, size int64
		var strong, path []byte
		var host string
		if err := rows.Scan(&id, &size, &strong, &host, &path); err != nil {
			return nil, fmt.Errorf("fleet: dupes: %w", err)
		}
		if n := len(sets); n == 0 || sets[n-1].Content != id {
			set := DupeSet{Content: id, Size: size}
			copy(set.Strong[:], strong)
			sets = append(sets, set)
		}
		set := &sets[len(sets)-1]
		if len(set.Files) == 0 || set.Files[len(set.Files)-1].Host != host {
			set.Hosts++
		}
		set.Files = append(set.Files, DupeFile{Host: host, Path: string(path)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fleet: dupes: %w", err)
	}
	return sets, nil
}

// intervalOf is silence as an SQL interval: hosts not heard from for
// longer are left out (0: none is).
func intervalOf(silence time.Duration) string {
	if silence <= 0 {
		return "100 years"
	}
	return fmt.Sprintf("%d milliseconds", silence.Milliseconds())
}
