package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sif-dev/sif/daemon/fleet/pgtest"
)

func TestSchema(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t, nil)

	t.Run("no schema", func(t *testing.T) {
		conn := dial(t, freshDB(t, srv, "empty"))
		if _, _, _, err := ReadSchema(ctx, conn); !errors.Is(err, ErrNoSchema) {
			t.Errorf("ReadSchema of an empty database: %v, want ErrNoSchema", err)
		}
		if err := SetParams(ctx, conn, `{}`); !errors.Is(err, ErrNoSchema) {
			t.Errorf("SetParams on an empty database: %v, want ErrNoSchema", err)
		}
		mustExec(t, conn, "CREATE TABLE sif_schema (singleton int PRIMARY KEY, version int NOT NULL, fleet_id text NOT NULL, params text)")
		if _, _, _, err := ReadSchema(ctx, conn); !errors.Is(err, ErrNoSchema) || !strings.Contains(err.Error(), "no row") {
			t.Errorf("ReadSchema of an empty sif_schema: %v, want ErrNoSchema", err)
		}
		if _, err := Migrate(ctx, conn); !errors.Is(err, ErrNoSchema) {
			t.Errorf("Migrate with an empty sif_schema: %v, want ErrNoSchema", err)
		}
	})

	t.Run("params", func(t *testing.T) {
		conn := dial(t, freshDB(t, srv, "params"))
		if _, err := Migrate(ctx, conn); err != nil {
			t.Fatal(err)
		}
		mine := `{"window":48,"level":3}`
		if err := SetParams(ctx, conn, mine); err != nil {
			t.Fatal(err)
		}
		if err := SetParams(ctx, conn, mine); err != nil {
			t.Errorf("the same parameters again: %v", err)
		}
		if _, _, params, err := ReadSchema(ctx, conn); err != nil || params != mine {
			t.Errorf("ReadSchema params %q %v, want %q", params, err, mine)
		}
		theirs := `{"window":64,"level":3}`
		err := SetParams(ctx, conn, theirs)
		if !errors.Is(err, ErrParamsMismatch) || !strings.Contains(err.Error(), mine) || !strings.Contains(err.Error(), theirs) {
			t.Errorf("other parameters: %v, want ErrParamsMismatch naming both", err)
		}
		if _, _, params, _ := ReadSchema(ctx, conn); params != mine {
			t.Errorf("params %q after a mismatch, want %q kept", params, mine)
		}
	})

	t.Run("params race", func(t *testing.T) {
		url := freshDB(t, srv, "paramsrace")
		if _, err := Migrate(ctx, dial(t, url)); err != nil {
			t.Fatal(err)
		}
		const hosts = 6
		errs := make([]error, hosts)
		var wg sync.WaitGroup
		for i := range hosts {
			c := dial(t, url)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = SetParams(ctx, c, []string{`{"a":1}`, `{"a":2}`}[i%2])
			}()
		}
		wg.Wait()
		_, _, won, err := ReadSchema(ctx, dial(t, url))
		if err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			mine := []string{`{"a":1}`, `{"a":2}`}[i%2]
			if (mine == won) != (err == nil) || (err != nil && !errors.Is(err, ErrParamsMismatch)) {
				t.Errorf("host %d with %s, the fleet's %s: %v", i, mine, won, err)
			}
		}
	})

	t.Run("tables", func(t *testing.T) {
		conn := dial(t, freshDB(t, srv, "tables"))
		if _, err := Migrate(ctx, conn); err != nil {
			t.Fatal(err)
		}
		hostID := idOf(sha256.Sum256([]byte("alpha")))
		strong := sha256.Sum256([]byte("some content"))
		contentID := idOf(strong)
		root := []byte("/srv/d\xffata") // not UTF-8
		mustExec(t, conn, "INSERT INTO sif_hosts (host_id, name, roots) VALUES ($1, 'alpha', $2)", hostID, [][]byte{root})
		var roots [][]byte
		var gen int64
		if err := conn.QueryRow(ctx, "SELECT roots, gen FROM sif_hosts WHERE host_id = $1", hostID).Scan(&roots, &gen); err != nil ||
			len(roots) != 1 || string(roots[0]) != string(root) || gen != 0 {
			t.Errorf("roots %q gen %d (%v)", roots, gen, err)
		}
		// A second host with the same name is refused.
		if _, err := conn.Exec(ctx, "INSERT INTO sif_hosts (host_id, name) VALUES (1, 'alpha')"); !isCode(err, codeUniqueViolation) {
			t.Errorf("two hosts named alpha: %v", err)
		}
		insertContent := `INSERT INTO sif_contents (content_id, strong, size, weight, features, level, level_weights, signature)
			VALUES ($1, $2, 100, 40, 12, 2, $3, '\x0102') ON CONFLICT (content_id) DO NOTHING`
		mustExec(t, conn, insertContent, contentID, strong[:], []int64{40, 10, 2})
		mustExec(t, conn, insertContent, contentID, strong[:], []int64{40, 10, 2}) // replayed: no change
		var levels []int64
		if err := conn.QueryRow(ctx, "SELECT level_weights FROM sif_contents").Scan(&levels); err != nil || len(levels) != 3 {
			t.Errorf("level_weights %v %v", levels, err)
		}
		// A 32-bit key with its top bit set is stored as a negative int4.
		key := int32(-1) // 0xffffffff
		upsert := `INSERT INTO sif_postings (key, content_id, weight) VALUES ($1, $2, $3)
			ON CONFLICT (key, content_id) DO UPDATE SET weight = excluded.weight`
		mustExec(t, conn, upsert, key, contentID, 3)
		mustExec(t, conn, upsert, key, contentID, 5)
		if w := queryInt(t, conn, "SELECT weight FROM sif_postings WHERE key = $1 AND content_id = $2", key, contentID); w != 5 {
			t.Errorf("posting weight %d after the upsert, want 5", w)
		}
		path := []byte("/srv/d\xffata/f\x01")
		mustExec(t, conn, "INSERT INTO sif_files (host_id, file_id, path, size, mtime, content_id) VALUES ($1, 1, $2, 100, 1700000000123456789, $3)", hostID, path, contentID)
		mustExec(t, conn, "INSERT INTO sif_files (host_id, file_id, path, size, mtime) VALUES ($1, 2, '\\x2f61', 5, 0)", hostID) // strong hash unknown
		// A file of an unknown content, or an unknown host, is refused.
		const fkViolation = "23503"
		if _, err := conn.Exec(ctx, "INSERT INTO sif_files (host_id, file_id, path, size, mtime, content_id) VALUES ($1, 3, '\\x2f', 1, 0, 42)", hostID); !isCode(err, fkViolation) {
			t.Errorf("a file of a missing content: %v", err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO sif_files (host_id, file_id, path, size, mtime) VALUES (99, 1, '\\x2f', 1, 0)"); !isCode(err, fkViolation) {
			t.Errorf("a file of a missing host: %v", err)
		}
		var got []byte
		if err := conn.QueryRow(ctx, "SELECT path FROM sif_files WHERE content_id = $1", contentID).Scan(&got); err != nil || string(got) != string(path) {
			t.Errorf("path %q %v", got, err)
		}
		// The files of a content are found through sif_files_content.
		mustExec(t, conn, "SET enable_seqscan = off")
		rows, _ := conn.Query(ctx, "EXPLAIN SELECT host_id FROM sif_files WHERE content_id = 5")
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || !strings.Contains(strings.Join(plan, "\n"), "sif_files_content") {
			t.Errorf("plan %q %v, want the sif_files_content index", plan, err)
		}
		// Forgetting a host forgets its files, not the shared contents.
		mustExec(t, conn, "DELETE FROM sif_hosts WHERE host_id = $1", hostID)
		if n := queryInt(t, conn, "SELECT count(*) FROM sif_files"); n != 0 {
			t.Errorf("%d files left after their host was deleted", n)
		}
		if n := queryInt(t, conn, "SELECT count(*) FROM sif_contents"); n != 1 {
			t.Errorf("%d contents after a host was deleted, want 1", n)
		}
	})

	t.Run("errors", func(t *testing.T) {
		var pgErr error = &pgconn.PgError{Code: codeUndefinedTable}
		if !isCode(pgErr, codeDuplicateTable, codeUndefinedTable) || isCode(pgErr, codeDuplicateTable) || isCode(errors.New("x"), codeUndefinedTable) {
			t.Error("isCode")
		}
	})
}

// idOf is the id the package doc describes: the first 8 bytes of a
// SHA-256, big-endian, as a signed 64-bit integer.
func idOf(sum [32]byte) int64 { return int64(binary.BigEndian.Uint64(sum[:8])) }
