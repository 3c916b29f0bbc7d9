package fleet

import (
	"context"
	"fmt"
	"slices"

	"github.com/sif-dev/sif/index"
)

// fileRow is a row of sif_files, as the comparison reads it.
type fileRow struct {
	path    []byte
	size    int64
	mtime   int64
	content *int64
	bare    bool // its content has no SimiHash key in the fleet
}

// diffRange returns what must change in the fleet's rows of host with file
// ids in (lo, hi] for them to equal local (those files, published). With
// keys (the host's index keeps SimiHash keys), a file whose content the
// fleet holds without its SimiHash key is sent again too, so that
// publishing fills the key in (insertContents).
func diffRange(ctx context.Context, q Querier, host, lo, hi int64, local []index.FileRecord, keys bool) (batch, error) {
	sql := `SELECT file_id, path, size, mtime, content_id, false FROM sif_files
		WHERE host_id = $1 AND file_id > $2 AND file_id <= $3`
	if keys {
		sql = `SELECT f.file_id, f.path, f.size, f.mtime, f.content_id, c.simi_key IS NULL AND f.content_id IS NOT NULL
		FROM sif_files f LEFT JOIN sif_contents c ON c.content_id = f.content_id
		WHERE f.host_id = $1 AND f.file_id > $2 AND f.file_id <= $3`
	}
	rows, err := q.Query(ctx, sql, host, lo, hi)
	if err != nil {
		return batch{}, fmt.Errorf("fleet: reading host rows: %w", err)
	}
	have := map[int64]fileRow{}
	for rows.Next() {
		var id int64
		var r fileRow
		if err := rows.Scan(&id, &r.path, &r.size, &r.mtime, &r.content, &r.bare); err != nil {
			rows.Close()
			return batch{}, err
		}
		have[id] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return batch{}, fmt.Errorf("fleet: reading host rows: %w", err)
	}
	var b batch
	for _, rec := range local {
		r, ok := have[int64(rec.ID)]
		delete(have, int64(rec.ID))
		if ok && r.equal(&rec) && !r.bare {
			continue
		}
		b.set = append(b.set, rec)
	}
	for id := range have {
		b.del = append(b.del, id)
	}
	slices.Sort(b.del)
	return b, nil
}

func (r *fileRow) equal(rec *index.FileRecord) bool {
	if string(r.path) != rec.Path || r.size != rec.FileMeta.Size || r.mtime != rec.MtimeNs {
		return false
	}
	if rec.Strong == ([32]byte{}) {
		return r.content == nil
	}
	return r.content != nil && *r.content == ContentID(rec.Strong)
}
