package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// Check compares the rows of host in the fleet database with the files of
// ix under roots, and the contents those rows name with their signatures.
// It reads the whole index and all the host's rows, a run of file ids at a
// time.
func Check(ctx context.Context, q Querier, host string, ix *index.Index, roots []string) (*ipc.FleetCheck, error) {
	rep := &ipc.FleetCheck{Host: host}
	v, err := ix.View()
	if err != nil {
		return nil, err
	}
	defer v.Close()
	hid := HostID(host)
	if err := q.QueryRow(ctx, `SELECT count(*) FROM sif_files WHERE host_id = $1`, hid).Scan(&rep.Rows); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	contents := map[int64]uint32{} // fleet content id → local content id
	after := uint32(0)
	for {
		var local []index.FileRecord
		last, more, err := v.FilesAfter(after, DefaultBatchFiles, func(rec index.FileRecord) error {
			if inRoots(rec.Path, roots) {
				local = append(local, rec)
				if rec.Strong != ([32]byte{}) {
					contents[ContentID(rec.Strong)] = rec.Content
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		hi := int64(last)
		if !more {
			hi = 1 << 32
		}
		b, err := diffRange(ctx, q, hid, int64(after), hi, local, false)
		if err != nil {
			return nil, err
		}
		rep.Files += len(local)
		rep.Missing += len(b.set)
		rep.Extra += len(b.del)
		for _, rec := range b.set {
			if len(rep.MissingPaths) < ipc.MaxFleetCheckList {
				rep.MissingPaths = append(rep.MissingPaths, rec.Path)
			}
		}
		for _, id := range b.del {
			if len(rep.ExtraIDs) < ipc.MaxFleetCheckList {
				rep.ExtraIDs = append(rep.ExtraIDs, id)
			}
		}
		if !more {
			break
		}
		after = last
	}
	// Each content: its row, and as many postings as its signature has
	// entries.
	partitioned, err := Partitioned(ctx, q)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(contents))
	for id := range contents {
		ids = append(ids, id)
	}
	for len(ids) > 0 {
		n := min(len(ids), 5000)
		chunk := ids[:n]
		ids = ids[n:]
		bad, err := checkContents(ctx, q, chunk, partitioned)
		if err != nil {
			return nil, err
		}
		rep.BadContents += bad
	}
	rep.OK = rep.Missing == 0 && rep.Extra == 0 && rep.BadContents == 0
	return rep, nil
}

// checkContents returns how many of contents the fleet lacks, or holds
// without a posting for each entry of its signature. On postings
// partitioned over servers it reads every posting of the signatures' keys
// and the contents (checkPostingsAny), else it looks each (key, content)
// pair up in the primary key (checkPostingsPairs), a probe per posting
// rather than a read of every posting of every key: at a million files,
// keys held by thousands of contents made the first form read the same
// long lists again for each batch.
func checkContents(ctx context.Context, q Querier, contents []int64, partitioned bool) (int, error) {
	rows, err := q.Query(ctx, `SELECT content_id, signature FROM sif_contents WHERE content_id = ANY($1)`, contents)
	if err != nil {
		return 0, fmt.Errorf("fleet: %w", err)
	}
	var keys []int32
	var owners []int64
	want := map[int64]int{}
	err = eachSignature(rows, func(id int64, es []index.Entry) {
		want[id] = len(es)
		for _, e := range es {
			keys = append(keys, int32(e.Key))
			owners = append(owners, id)
		}
	})
	if err != nil {
		return 0, fmt.Errorf("fleet: %w", err)
	}
	bad := len(contents) - len(want)
	check := checkPostingsPairs
	if partitioned {
		check = checkPostingsAny
	}
	got, err := check(ctx, q, keys, owners, contents)
	if err != nil {
		return 0, fmt.Errorf("fleet: %w", err)
	}
	for id, n := range want {
		if got[id] != n {
			bad++
		}
	}
	return bad, nil
}

// checkPostingsPairs counts, per content, the postings (keys[i],
// owners[i]) the fleet holds: one probe of the primary key each.
func checkPostingsPairs(ctx context.Context, q Querier, keys []int32, owners, _ []int64) (map[int64]int, error) {
	rows, err := q.Query(ctx, `
		SELECT x.content_id, count(*) FROM unnest($1::int[], $2::bigint[]) AS x(key, content_id)
		JOIN sif_postings p ON p.key = x.key AND p.content_id = x.content_id
		GROUP BY x.content_id`, keys, owners)
	if err != nil {
		return nil, err
	}
	got := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return nil, err
		}
		got[id] = n
	}
	return got, rows.Err()
}

// checkPostingsAny counts, per content, the postings (keys[i], owners[i])
// the fleet holds, from the postings with one of the keys and one of the
// contents. A join with the pairs, through postgres_fdw, reads every
// posting of every shard; this form runs on each shard as it is.
func checkPostingsAny(ctx context.Context, q Querier, keys []int32, owners, contents []int64) (map[int64]int, error) {
	type posting struct {
		key     int32
		content int64
	}
	expect := make(map[posting]bool, len(keys))
	for i := range keys {
		expect[posting{keys[i], owners[i]}] = true
	}
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	rows, err := q.Query(ctx, `SELECT key, content_id FROM sif_postings WHERE key = ANY($1) AND content_id = ANY($2)`, keys, contents)
	if err != nil {
		return nil, err
	}
	got := map[int64]int{}
	for rows.Next() {
		var p posting
		if err := rows.Scan(&p.key, &p.content); err != nil {
			rows.Close()
			return nil, err
		}
		if expect[p] {
			got[p.content]++
		}
	}
	return got, rows.Err()
}

func inRoots(path string, roots []string) bool {
	for _, r := range roots {
		if index.InTree(path, r) {
			return true
		}
	}
	return false
}

// Forget removes host from the fleet: its row, its files, and the
// contents no other host holds. It returns the files and contents removed.
func Forget(ctx context.Context, db TxStarter, host string) (files, contents int64, err error) {
	tag, err := db.Exec(ctx, `DELETE FROM sif_files WHERE host_id = $1`, HostID(host))
	if err != nil {
		return 0, 0, fmt.Errorf("fleet: forgetting %q: %w", host, err)
	}
	files = tag.RowsAffected()
	tag, err = db.Exec(ctx, `DELETE FROM sif_hosts WHERE host_id = $1`, HostID(host))
	if err != nil {
		return files, 0, fmt.Errorf("fleet: forgetting %q: %w", host, err)
	}
	if tag.RowsAffected() == 0 && files == 0 {
		return 0, 0, fmt.Errorf("%w: %q", ErrNoHost, host)
	}
	contents, err = Sweep(ctx, db)
	return files, contents, err
}

// ErrNoHost: the fleet has no host of that name.
var ErrNoHost = errors.New("fleet: no such host")

// Sweep deletes the contents no file holds, with their postings, a
// thousand at a time, and returns how many it deleted. Publishing drops
// the contents its own changes leave unheld; Sweep catches those a
// failed drop, or a forgotten host, left.
func Sweep(ctx context.Context, db TxStarter) (int64, error) {
	var total int64
	for {
		rows, err := db.Query(ctx, `
			SELECT content_id FROM sif_contents c
			WHERE NOT EXISTS (SELECT 1 FROM sif_files f WHERE f.content_id = c.content_id)
			ORDER BY content_id LIMIT 1000`)
		if err != nil {
			return total, fmt.Errorf("fleet: sweeping contents: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return total, fmt.Errorf("fleet: sweeping contents: %w", err)
		}
		if len(ids) == 0 {
			return total, nil
		}
		n, err := dropContents(ctx, db, ids)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("fleet: sweeping contents: %w", err)
		}
		if n == 0 {
			// Every one was taken by a file in between: stop rather
			// than spin.
			return total, nil
		}
	}
}
