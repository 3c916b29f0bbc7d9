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
	// Template is set on a member of a template query's family
	// (Result.Template): it holds more than index.TemplateShare of the
	// query's common fingerprints, and is judged on all of its weight.
	Template bool
	Type     fingerprint.Type
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
	// Template is set when the query is mostly fingerprints held by more
	// than MaxDF contents and some of its family were found (the local
	// index's Result.Template): they were counted, up to
	// templatePostings postings, and Skipped counts only the others.
	// Family is then how many contents hold more than
	// index.TemplateShare of those counted, of which at most
	// MaxContents are read.
	Template bool
	Family   int
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
), own AS (
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
), own AS (
	SELECT u.content_id, sum(least(u.weight, q.w)) AS shared
	FROM agg JOIN q ON q.key = agg.key CROSS JOIN LATERAL unnest(agg.cs, agg.ws) AS u(content_id, weight)
	WHERE agg.cs IS NOT NULL
	GROUP BY u.content_id
)`
	// similarPlain counts the shared weight of the keys that are not
	// common (own) and no common key.
	similarPlain = `, pick AS (
	SELECT NULL::int AS key, 0::bigint AS w WHERE false
), shared AS (
	SELECT content_id, shared, 0::bigint AS common FROM own
)`
	// similarTemplate is the second round trip of a template query: it
	// also counts the common keys $11 (weights $12), in key order, as long
	// as their postings add up to at most $13 (pick): as keys are uniform,
	// those counted are a uniform sample of the query's common keys, and
	// the percentages over the counted weight stay fair estimates. A
	// content's common weight is what it shares through them.
	similarTemplate = `, tq AS (
	SELECT * FROM unnest($11::int[], $12::bigint[]) AS t(key, w)
), tn AS (
	SELECT key, count(*) AS n FROM sif_postings WHERE key = ANY($11::int[]) GROUP BY key
), pick AS (
	SELECT key, w FROM (
		SELECT tq.key, tq.w, sum(tn.n) OVER (ORDER BY tq.key) AS run FROM tq JOIN tn USING (key)
	) x WHERE run <= $13
), thits AS (
	SELECT p.content_id, sum(least(p.weight, pick.w)) AS common
	FROM sif_postings p JOIN pick ON pick.key = p.key
	WHERE p.key = ANY(ARRAY(SELECT key FROM pick))
	GROUP BY p.content_id
), shared AS (
	SELECT content_id, sum(shared) AS shared, sum(common) AS common FROM (
		SELECT content_id, shared, 0::bigint AS common FROM own
		UNION ALL
		SELECT content_id, common, common FROM thits
	) u GROUP BY content_id
)`
	// similarTail keeps the best MaxContents contents ($4), with the
	// identical content (by strong hash, $5 and $6) whatever its share;
	// then their records and up to MaxFilesPerContent ($8) of their files
	// on hosts other than $7 heard from within $9. One more row, whose
	// content id is NULL, says how many candidates there were, the
	// skipped keys, the common keys counted, and how many contents hold
	// more than $10 (TemplateShare) of the counted weight (the family):
	// it comes also when no content is found, so a query whose keys are
	// all common learns that they are.
	similarTail = `, best AS (
	SELECT content_id, max(shared) AS shared, max(common) AS common FROM (
		(SELECT content_id, shared, common FROM shared ORDER BY shared DESC, content_id LIMIT $4)
		UNION ALL
		(SELECT content_id, 0, 0 FROM sif_contents WHERE content_id = $5 AND strong = $6)
	) u GROUP BY content_id
)
SELECT b.content_id, b.shared::bigint, b.common::bigint, c.size, c.weight, c.level, c.level_weights, c.type, c.strong,
	h.name, f.path, f.size, f.mtime, 0::bigint, '{}'::int[], '{}'::int[], 0::bigint
FROM best b
JOIN sif_contents c ON c.content_id = b.content_id
CROSS JOIN LATERAL (
	SELECT host_id, path, size, mtime FROM sif_files f
	WHERE f.content_id = b.content_id AND f.host_id <> $7
	LIMIT $8
) f
JOIN sif_hosts h ON h.host_id = f.host_id
WHERE h.last_seen > now() - $9::interval
UNION ALL
SELECT NULL, 0, 0, 0, 0, 0, '{}', 0, '', '', '', 0, 0,
	(SELECT count(*) FROM shared),
	(SELECT coalesce(array_agg(key), '{}') FROM common),
	(SELECT coalesce(array_agg(key), '{}') FROM pick),
	(SELECT count(*) FROM shared WHERE common > (SELECT coalesce(sum(w), 0) FROM pick) * $10::numeric)
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

// Similar answers q from the fleet database in one round trip, or two
// for a template query (doc.go, "Asking").
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
	s := &search{q: q, entries: entries, res: &Result{Fingerprints: len(entries)}, lvl: q.Params.Level(q.Sketch.Size)}
	s.top = min(q.Params.Bits, maxLevel)
	got, err := s.ask(ctx, db, nil)
	if err != nil {
		return nil, err
	}
	s.levels()
	if common := s.templates(); common != nil {
		// Mostly what many files share: ask again, counting them.
		if got, err = s.ask(ctx, db, common); err != nil {
			return nil, err
		}
		s.levels()
	}
	s.judge(got)
	return s.res, nil
}

// maxLevel bounds the levels of fingerprint keys (index.maxLevel).
const maxLevel = 16

// templatePostings bounds the postings of common keys a template query
// counts (pick, in similarTemplate): past it, the remaining common keys
// stay skipped. Reading them costs the database about 1 µs each.
var templatePostings = 100_000

// search is one run of Similar.
type search struct {
	q       Query
	entries []index.QueryEntry
	res     *Result

	// The query's level and the top level.
	lvl, top int
	// skip marks the keys skipped for their document frequency, counted
	// the common keys counted all the same (a template query).
	skip, counted map[uint32]bool
	// Per level l, the weight and number of the query's entries of level
	// l or more: that count (weightAt, countAt); those of them counted
	// through common keys (commonAt); all (fullAt, nfullAt).
	weightAt, commonAt, fullAt [maxLevel + 2]uint64
	countAt, nfullAt           [maxLevel + 2]int
	tmpl                       [maxLevel + 2]bool
}

// row is one row of the query's answer: a file of a candidate content.
type row struct {
	Match
	common       uint64 // of SharedWeight, through counted common keys
	size, weight int64
	level, typ   int16
	levelWeights []int64
	strong       []byte
}

// ask runs the query's round trip; with common (the query's common keys
// of template levels, in key order), also counting them.
func (s *search) ask(ctx context.Context, db Querier, common []index.QueryEntry) ([]row, error) {
	q := s.q
	keys := make([]int32, len(s.entries))
	weights := make([]int64, len(s.entries))
	for i, e := range s.entries {
		keys[i], weights[i] = int32(e.Key), int64(min(e.Weight, 1<<62))
	}
	var strongID *int64
	if q.Sketch.Strong != ([32]byte{}) {
		id := ContentID(q.Sketch.Strong)
		strongID = &id
	}
	maxDF := q.MaxDF
	if maxDF < 0 {
		maxDF = 1 << 30
	}
	sql := similarLateral
	if q.Grouped {
		sql = similarGrouped
	}
	args := []any{keys, weights, maxDF + 1, MaxContents, strongID, q.Sketch.Strong[:],
		HostID(q.ExcludeHost), MaxFilesPerContent, intervalOf(q.Silence), index.TemplateShare}
	if common == nil {
		sql += similarPlain + similarTail
	} else {
		ckeys := make([]int32, len(common))
		cweights := make([]int64, len(common))
		for i, e := range common {
			ckeys[i], cweights[i] = int32(e.Key), int64(min(e.Weight, 1<<62))
		}
		sql += similarTemplate + similarTail
		args = append(args, ckeys, cweights, templatePostings)
	}
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("fleet: query: %w", err)
	}
	defer rows.Close()
	var got []row
	var skipped, counted []int32
	for rows.Next() {
		var r row
		var id *int64
		var shared, common int64
		var path []byte
		var candidates, family int
		var sk, co []int32
		if err := rows.Scan(&id, &shared, &common, &r.size, &r.weight, &r.level, &r.levelWeights, &r.typ, &r.strong,
			&r.Host, &path, &r.Size, &r.MtimeNs, &candidates, &sk, &co, &family); err != nil {
			return nil, fmt.Errorf("fleet: query: %w", err)
		}
		if id == nil {
			s.res.Candidates, skipped, counted, s.res.Family = candidates, sk, co, family
			continue
		}
		r.Content, r.Path = *id, string(path)
		r.SharedWeight, r.common = uint64(max(shared, 0)), uint64(max(common, 0))
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fleet: query: %w", err)
	}
	s.skip, s.counted = map[uint32]bool{}, map[uint32]bool{}
	for _, k := range skipped {
		s.skip[uint32(k)] = true
	}
	for _, k := range counted {
		s.counted[uint32(k)] = true
	}
	s.res.Skipped = len(skipped) - len(counted)
	return got, nil
}

// levels sums the query's weight at each level, as the local index does
// (index/query.go).
func (s *search) levels() {
	s.weightAt, s.commonAt, s.fullAt = [maxLevel + 2]uint64{}, [maxLevel + 2]uint64{}, [maxLevel + 2]uint64{}
	s.countAt, s.nfullAt = [maxLevel + 2]int{}, [maxLevel + 2]int{}
	for _, e := range s.entries {
		for l := 0; l <= min(int(e.Level), maxLevel+1); l++ {
			s.fullAt[l] += e.Weight
			s.nfullAt[l]++
			switch {
			case !s.skip[e.Key]:
				s.weightAt[l] += e.Weight
				s.countAt[l]++
			case s.counted[e.Key]:
				s.commonAt[l] += e.Weight
			}
		}
	}
}

// templates finds the levels of template comparisons as the local index
// does (index.TemplateCut): from the query's up, those where its common
// keys hold more than the cut of its weight, with MinFeatures entries.
// It returns the common entries of those levels, in key order, or nil
// when there is none.
func (s *search) templates() []index.QueryEntry {
	if s.q.MaxDF < 0 || len(s.skip) == 0 {
		return nil
	}
	from := s.top + 1
	for l := s.top; l >= s.lvl; l-- {
		common := s.fullAt[l] - s.weightAt[l]
		if s.nfullAt[l] >= s.q.MinFeatures && float64(common) > index.TemplateCut(s.nfullAt[l])*float64(s.fullAt[l]) {
			s.tmpl[l], from = true, l
		}
	}
	if from > s.top {
		return nil
	}
	for l := s.top + 1; l <= maxLevel+1; l++ {
		s.tmpl[l] = s.tmpl[s.top] // no candidate is compared above the top
	}
	var common []index.QueryEntry
	for _, e := range s.entries {
		if s.skip[e.Key] && int(e.Level) >= from {
			common = append(common, e)
		}
	}
	return common
}

// judge measures the candidates' files and keeps those that pass.
func (s *search) judge(got []row) {
	q, res := s.q, s.res
	res.TooFew = len(s.entries)-len(s.skip) < q.MinFeatures
	ext := strings.ToLower(filepath.Ext(q.Path))
	for _, r := range got {
		rec := index.FileRecord{Weight: uint64(r.weight), Level: uint8(r.level)}
		for _, w := range r.levelWeights {
			rec.LevelWeights = append(rec.LevelWeights, uint64(w))
		}
		l := min(max(s.lvl, int(rec.Level)), maxLevel+1)
		identical := len(r.strong) == 32 && [32]byte(r.strong) == q.Sketch.Strong && r.size == q.Sketch.Size
		// A member of the query's family holds more than TemplateShare
		// of its counted common weight and is judged on all of the
		// query's weight, what it shares through the common keys scaled
		// up from those counted (a uniform sample of them); any other
		// candidate on the query's distinctive part.
		family := s.tmpl[l] && float64(r.common) > index.TemplateShare*float64(s.commonAt[l])
		qw, fw, n := s.weightAt[l], rec.WeightAt(l), s.countAt[l]
		shared := r.SharedWeight
		if family {
			qw, n = s.fullAt[l], s.nfullAt[l]
			if all := s.fullAt[l] - s.weightAt[l]; all > s.commonAt[l] {
				shared -= r.common
				shared += uint64(float64(r.common) * float64(all) / float64(s.commonAt[l]))
			}
		} else {
			shared -= min(r.common, shared)
		}
		if identical {
			qw, shared = s.fullAt[l], s.fullAt[l]
		}
		m := r.Match
		m.SharedWeight = shared
		m.Type = fingerprint.Type(r.typ)
		m.Identical = identical
		m.Template = family && !identical
		m.Containment = fingerprint.Ratio(shared, qw)
		m.ReverseContainment = fingerprint.Ratio(shared, fw)
		m.Resemblance = fingerprint.Ratio(shared, qw+fw-min(shared, qw+fw))
		switch {
		case !identical && ((res.TooFew && !family) || n < q.MinFeatures):
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
		res.Template = res.Template || m.Template
		res.Matches = append(res.Matches, m)
	}
	if res.Template {
		res.TooFew = false
	} else {
		res.Skipped = len(s.skip) // no family: the common keys counted for none
	}
	res.Total = len(res.Matches)
	slices.SortFunc(res.Matches, compareMatches)
	if q.Limit > 0 && len(res.Matches) > q.Limit {
		res.Matches = res.Matches[:q.Limit]
	}
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
