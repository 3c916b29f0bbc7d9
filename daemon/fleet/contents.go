package fleet

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sif-dev/sif/index"
)

// putContentsTx adds to the fleet the contents of files that it lacks:
// their records, signatures and postings, in two short transactions.
//
// The first inserts the records, each marked as still without postings
// (its features column negated), and commits at once. Another host adding
// the same content at the same moment waits only for that insert; while
// the postings went in the same transaction, hosts publishing copies of
// each other's files waited for each other's postings in chains (at a
// million files, 18 s per batch on average, most of publishing's time).
// The second takes the marked records of the batch that no other host is
// working on (FOR NO KEY UPDATE SKIP LOCKED: files may still refer to
// them meanwhile), adds their postings and clears the mark. A content
// whose first transaction committed and whose second never did (the
// publisher stopped in between) is finished by the next host to publish
// a file of it, or by its own publisher when the batch is sent again; a
// query cannot find it meanwhile, as it has no postings.
func (p *Publisher) putContentsTx(ctx context.Context, v *index.View, files []index.FileRecord) error {
	sigOf, err := p.insertContents(ctx, v, files)
	if err != nil || len(sigOf) == 0 {
		return err
	}
	return postContents(ctx, p.cfg.Pool, sigOf)
}

// insertContents inserts the records of the contents of files that the
// fleet lacks, marked as without postings, and returns the signatures of
// the contents that it inserted or found still marked. When v's index
// keeps SimiHash keys, the records carry each content's skew key and sum
// table, and it fills in those of the batch's contents that the fleet
// holds without them (published by hosts without SimiHash keys, or
// before the schema had them).
func (p *Publisher) insertContents(ctx context.Context, v *index.View, files []index.FileRecord) (sigOf map[int64][]byte, err error) {
	local := map[int64]*index.FileRecord{}
	for i := range files {
		if s := files[i].Strong; s != ([32]byte{}) {
			local[ContentID(s)] = &files[i]
		}
	}
	if len(local) == 0 {
		return nil, nil
	}
	ids := make([]int64, 0, len(local))
	for id := range local {
		ids = append(ids, id)
	}
	slices.Sort(ids) // one order for every publisher's locks
	tx, err := p.cfg.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	rows, err := tx.Query(ctx, `SELECT content_id, strong, features < 0, simi_key IS NULL FROM sif_contents WHERE content_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	type held struct {
		strong        []byte
		pending, bare bool // bare: without SimiHash key
	}
	have := map[int64]held{}
	for rows.Next() {
		var id int64
		var h held
		if err := rows.Scan(&id, &h.strong, &h.pending, &h.bare); err != nil {
			rows.Close()
			return nil, err
		}
		have[id] = h
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	sigOf = map[int64][]byte{}
	c := contentRows{simi: v.SimiHash()}
	bare := map[int64]*index.FileRecord{} // held without SimiHash keys, which this host has
	for _, id := range ids {
		rec := local[id]
		if h, ok := have[id]; ok {
			if !bytes.Equal(h.strong, rec.Strong[:]) {
				// Two contents whose SHA-256 begin alike: about one chance
				// in 2^64 per pair. The file is published without content.
				p.log.Warn("fleet: two contents share a content id; the file is published without its signature",
					"path", rec.Path, "content_id", id)
				for i := range files {
					if ContentID(files[i].Strong) == id {
						files[i].Strong = [32]byte{}
					}
				}
				continue
			}
			if h.bare && c.simi {
				bare[id] = rec
			}
			if !h.pending {
				continue
			}
		}
		raw, err := v.Signature(rec.Content)
		if err != nil {
			return nil, err
		}
		if _, ok := have[id]; ok {
			sigOf[id] = raw
			continue
		}
		c.add(id, rec, raw)
	}
	if len(c.id) > 0 {
		rows, err = tx.Query(ctx, `
		INSERT INTO sif_contents (content_id, strong, size, weight, features, level, level_weights, type, signature, simi_key, simi_sum)
		SELECT id, st, sz, w, -f, l, string_to_array(lw, ',')::bigint[], ty, sig, sk, string_to_array(ss, ',')::bigint[]
		FROM unnest($1::bigint[], $2::bytea[], $3::bigint[], $4::bigint[], $5::int[], $6::smallint[], $7::text[], $8::smallint[], $9::bytea[],
			$10::bigint[], $11::text[])
			AS u(id, st, sz, w, f, l, lw, ty, sig, sk, ss)
		ON CONFLICT (content_id) DO NOTHING
		RETURNING content_id`,
			c.id, c.strong, c.size, c.weight, c.features, c.level, c.levelWeights, c.typ, c.sig, c.simiKey, c.simiSum)
		if err != nil {
			return nil, fmt.Errorf("fleet: publishing contents: %w", err)
		}
		added, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, fmt.Errorf("fleet: publishing contents: %w", err)
		}
		for _, id := range added {
			sigOf[id] = c.sigOf[id]
		}
		if c.simi && len(added) < len(c.id) {
			// Another host inserted some of them meanwhile, perhaps
			// without SimiHash keys.
			for _, id := range c.id {
				if _, ok := sigOf[id]; !ok {
					bare[id] = local[id]
				}
			}
		}
	}
	if len(bare) > 0 {
		// In content id order, like the inserts; should two hosts filling
		// in the same contents deadlock all the same, apply tries again.
		var fill contentRows
		for _, id := range slices.Sorted(maps.Keys(bare)) {
			fill.addSimi(id, bare[id])
		}
		if _, err := tx.Exec(ctx, `
		UPDATE sif_contents SET simi_key = u.sk, simi_sum = string_to_array(u.ss, ',')::bigint[]
		FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS u(id, sk, ss)
		WHERE content_id = u.id AND simi_key IS NULL`, fill.id, fill.simiKey, fill.simiSum); err != nil {
			return nil, fmt.Errorf("fleet: filling in SimiHash keys: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("fleet: committing contents: %w", err)
	}
	return sigOf, nil
}

// postContents adds the postings of those of the contents sigOf names
// that are still marked as without them and that no other publisher is
// adding, and clears their marks, in one transaction.
func postContents(ctx context.Context, db TxStarter, sigOf map[int64][]byte) (err error) {
	ids := make([]int64, 0, len(sigOf))
	for id := range sigOf {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	rows, err := tx.Query(ctx, `SELECT content_id FROM sif_contents WHERE content_id = ANY($1) AND features < 0
		ORDER BY content_id FOR NO KEY UPDATE SKIP LOCKED`, ids)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	mine, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	if len(mine) == 0 {
		return tx.Commit(ctx)
	}
	keys, owners, weights, err := postingsOf(mine, sigOf)
	if err != nil {
		return err
	}
	// An INSERT from arrays rather than COPY: as fast on one server, and
	// when sif_postings' partitions are on other servers (postgres_fdw,
	// packaging/fleet/partitioned-postings.sql) PostgreSQL 15 sends an
	// INSERT's rows to them in batches but COPY's one per round trip.
	if _, err := tx.Exec(ctx, `INSERT INTO sif_postings (key, content_id, weight)
		SELECT * FROM unnest($1::int[], $2::bigint[], $3::int[])`, keys, owners, weights); err != nil {
		return fmt.Errorf("fleet: publishing postings: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE sif_contents SET features = -features WHERE content_id = ANY($1)`, mine); err != nil {
		return fmt.Errorf("fleet: publishing postings: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("fleet: committing postings: %w", err)
	}
	return nil
}

// postingsOf returns the postings of the contents ids, whose signatures
// sigOf holds, column by column and in the primary key's order. Rows in
// key order go into the (key, content_id) btree page after page; in the
// signatures' order each lands on a random page. 140 batches of 5,000
// contents, 26 postings each, went into an empty table in 81 s sorted and
// 138 s not (PostgreSQL 15, 512 MB of shared buffers).
func postingsOf(ids []int64, sigOf map[int64][]byte) (keys []int32, owners []int64, weights []int32, err error) {
	type posting struct {
		key    int32
		owner  int64
		weight int32
	}
	var ps []posting
	var es []index.Entry
	for _, id := range ids {
		es, err = index.DecodeSignature(sigOf[id], es[:0])
		if err != nil {
			return nil, nil, nil, err
		}
		for _, e := range es {
			ps = append(ps, posting{int32(e.Key), id, int32(min(e.Weight, 1<<31-1))})
		}
	}
	slices.SortFunc(ps, func(a, b posting) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.owner, b.owner)
	})
	keys, owners, weights = make([]int32, len(ps)), make([]int64, len(ps)), make([]int32, len(ps))
	for i, p := range ps {
		keys[i], owners[i], weights[i] = p.key, p.owner, p.weight
	}
	return keys, owners, weights, nil
}

// contentRows are sif_contents rows to insert, column by column.
type contentRows struct {
	id, size, weight []int64
	features         []int32
	level, typ       []int16
	levelWeights     []string // comma-separated: pgx has no array of arrays of differing lengths
	strong, sig      [][]byte
	sigOf            map[int64][]byte
	// simi is set when the records carry SimiHash keys; else simiKey and
	// simiSum are NULLs.
	simi    bool
	simiKey []*int64
	simiSum []*string // comma-separated, as levelWeights
}

func (c *contentRows) add(id int64, rec *index.FileRecord, sig []byte) {
	if c.sigOf == nil {
		c.sigOf = map[int64][]byte{}
	}
	c.id = append(c.id, id)
	c.strong = append(c.strong, slices.Clone(rec.Strong[:]))
	c.size = append(c.size, rec.FileMeta.Size)
	c.weight = append(c.weight, int64(rec.Weight))
	c.features = append(c.features, int32(rec.Features))
	c.level = append(c.level, int16(rec.Level))
	c.typ = append(c.typ, int16(rec.Type))
	lw := make([]string, len(rec.LevelWeights))
	for i, w := range rec.LevelWeights {
		lw[i] = fmt.Sprint(w)
	}
	c.levelWeights = append(c.levelWeights, strings.Join(lw, ","))
	c.sig = append(c.sig, sig)
	c.sigOf[id] = sig
	if !c.simi {
		c.simiKey, c.simiSum = append(c.simiKey, nil), append(c.simiSum, nil)
		return
	}
	c.appendSimi(rec)
}

// addSimi adds the id, skew key and sum table of rec's content.
func (c *contentRows) addSimi(id int64, rec *index.FileRecord) {
	c.id = append(c.id, id)
	c.appendSimi(rec)
}

func (c *contentRows) appendSimi(rec *index.FileRecord) {
	key := int64(rec.Key)
	sums := make([]string, len(rec.Sum))
	for i, n := range rec.Sum {
		sums[i] = fmt.Sprint(n)
	}
	sum := strings.Join(sums, ",")
	c.simiKey, c.simiSum = append(c.simiKey, &key), append(c.simiSum, &sum)
}

// dropContents deletes, with their postings, those of contents that no
// file holds, and returns how many it deleted. A file added meanwhile by
// another host makes the deletion fail on its foreign key, and the content
// stays; a later sweep tries again.
func dropContents(ctx context.Context, db TxStarter, contents []int64) (int, error) {
	slices.Sort(contents)
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `
		SELECT content_id, signature FROM sif_contents c
		WHERE content_id = ANY($1) AND NOT EXISTS (SELECT 1 FROM sif_files f WHERE f.content_id = c.content_id)
		ORDER BY content_id FOR UPDATE`, contents)
	if err != nil {
		return 0, err
	}
	var gone []int64
	var keys []int32
	err = eachSignature(rows, func(id int64, es []index.Entry) {
		gone = append(gone, id)
		for _, e := range es {
			keys = append(keys, int32(e.Key))
		}
	})
	if err != nil {
		return 0, err
	}
	if len(gone) == 0 {
		return 0, nil
	}
	// Every posting of the contents gone: those with one of their keys
	// (for the index on key) and one of their ids. A join with the
	// (key, content) pairs would do the same on one server, but through
	// postgres_fdw it reads, and locks, every posting of every shard;
	// this form runs on each shard as it is.
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if _, err := tx.Exec(ctx, `DELETE FROM sif_postings WHERE key = ANY($1) AND content_id = ANY($2)`, keys, gone); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM sif_contents WHERE content_id = ANY($1)`, gone); err != nil {
		return 0, err
	}
	return len(gone), tx.Commit(ctx)
}

// retryable reports whether a transaction that failed with err may
// succeed if tried again at once: a deadlock or serialization failure, or
// a foreign key that a concurrent sweep removed.
func retryable(err error) bool {
	var pe interface{ SQLState() string }
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.SQLState() {
	case "40001", "40P01", "23503":
		return true
	}
	return false
}

// eachSignature calls fn with each row of rows, (content id, signature),
// the signature decoded, and closes rows. The entries are reused from row
// to row.
func eachSignature(rows pgx.Rows, fn func(id int64, es []index.Entry)) error {
	defer rows.Close()
	var es []index.Entry
	for rows.Next() {
		var id int64
		var sig []byte
		if err := rows.Scan(&id, &sig); err != nil {
			return err
		}
		var err error
		if es, err = index.DecodeSignature(sig, es[:0]); err != nil {
			return fmt.Errorf("content %d: %w", id, err)
		}
		fn(id, es)
	}
	return rows.Err()
}
