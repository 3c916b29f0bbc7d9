package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sif-dev/sif/daemon/fleet/pgtest"
)

var _ TxStarter = (*pgxpool.Pool)(nil)

// freshDB creates an empty database on srv (from any test goroutine:
// unlike srv's own methods it fails t, not srv's test) and returns its URL.
func freshDB(t *testing.T, srv *pgtest.Server, name string) string {
	t.Helper()
	conn := dial(t, srv.URL("postgres"))
	if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return srv.URL(name)
}

func dial(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(t *testing.T, q Querier, sql string, args ...any) {
	t.Helper()
	if _, err := q.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryInt(t *testing.T, q Querier, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := q.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// withMigrations replaces the list of migrations for one test.
func withMigrations(t *testing.T, steps ...[]string) {
	saved := migrations
	migrations = steps
	t.Cleanup(func() { migrations = saved })
}

func TestSchemaVersionIsTheMigrationsLength(t *testing.T) {
	if len(migrations) != SchemaVersion {
		t.Errorf("%d migrations, SchemaVersion %d", len(migrations), SchemaVersion)
	}
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t, nil)

	t.Run("fresh", func(t *testing.T) {
		conn := dial(t, freshDB(t, srv, "fresh"))
		start := time.Now()
		id, err := Migrate(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("schema created in %v", time.Since(start).Round(time.Millisecond))
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Errorf("fleet id %q, want 32 hex digits", id)
		}
		version, readID, params, err := ReadSchema(ctx, conn)
		if err != nil || version != SchemaVersion || readID != id || params != "" {
			t.Errorf("ReadSchema: %d %q %q %v, want %d %q \"\"", version, readID, params, err, SchemaVersion, id)
		}
		for _, table := range []string{"sif_schema", "sif_hosts", "sif_contents", "sif_postings", "sif_files"} {
			if n := queryInt(t, conn, "SELECT count(*) FROM information_schema.tables WHERE table_name = $1", table); n != 1 {
				t.Errorf("table %s: %d", table, n)
			}
		}
		// Again: nothing to do, the same fleet.
		id2, err := Migrate(ctx, conn)
		if err != nil || id2 != id {
			t.Errorf("second Migrate: %q %v, want %q", id2, err, id)
		}
		// Another database is another fleet.
		other, err := Migrate(ctx, dial(t, freshDB(t, srv, "fresh2")))
		if err != nil || other == id {
			t.Errorf("another database's fleet id %q (%v), first %q", other, err, id)
		}
	})

	t.Run("pool and transaction", func(t *testing.T) {
		url := freshDB(t, srv, "pool")
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		id, err := Migrate(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if id2, err := Migrate(ctx, pool); err != nil || id2 != id {
			t.Errorf("Migrate with the pool: %q %v, want %q", id2, err, id)
		}
	})

	t.Run("newer schema refused", func(t *testing.T) {
		conn := dial(t, freshDB(t, srv, "newer"))
		if _, err := Migrate(ctx, conn); err != nil {
			t.Fatal(err)
		}
		mustExec(t, conn, "UPDATE sif_schema SET version = 3")
		_, err := Migrate(ctx, conn)
		if !errors.Is(err, ErrNewerSchema) {
			t.Fatalf("Migrate of a version 3 database: %v, want ErrNewerSchema", err)
		}
		want := fmt.Sprintf("fleet database at schema version 3, this sif knows up to %d: upgrade sif on this host", SchemaVersion)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
		if v := queryInt(t, conn, "SELECT version FROM sif_schema"); v != 3 {
			t.Errorf("version %d after a refused migration, want 3 untouched", v)
		}
	})

	t.Run("upgrade applies a new step once", func(t *testing.T) {
		url := freshDB(t, srv, "upgrade")
		conn := dial(t, url)
		withMigrations(t, schemaV1)
		id, err := Migrate(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, conn, "INSERT INTO sif_hosts (host_id, name) VALUES (7, 'h')")
		mustExec(t, conn, "CREATE TABLE sif_fake_v2 (n int)")
		// Version 2 as a later sif would add it; it sleeps so that the
		// hosts upgrading at once below overlap. Run twice, it would add
		// a second row (nothing collides to stop it) and then fail on the
		// column it adds.
		withMigrations(t, schemaV1, []string{
			`INSERT INTO sif_fake_v2 VALUES (1)`,
			`ALTER TABLE sif_hosts ADD COLUMN fake text NOT NULL DEFAULT 'v2'`,
			`SELECT pg_sleep(0.3)`,
		})
		var wg sync.WaitGroup
		ids := make([]string, 4)
		errs := make([]error, 4)
		for i := range ids {
			c := dial(t, url)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids[i], errs[i] = Migrate(ctx, c)
			}()
		}
		wg.Wait()
		for i := range ids {
			if errs[i] != nil || ids[i] != id {
				t.Errorf("upgrading host %d: %q %v, want %q", i, ids[i], errs[i], id)
			}
		}
		if n := queryInt(t, conn, "SELECT count(*) FROM sif_fake_v2"); n != 1 {
			t.Errorf("the version 2 step ran %d times, want once", n)
		}
		var fake string
		if err := conn.QueryRow(ctx, "SELECT fake FROM sif_hosts WHERE host_id = 7").Scan(&fake); err != nil || fake != "v2" {
			t.Errorf("upgraded host row: %q %v", fake, err)
		}
		if v, _, _, err := ReadSchema(ctx, conn); err != nil || v != 2 {
			t.Errorf("version %d (%v) after the upgrade, want 2", v, err)
		}
		// The version 1 sif now refuses the database.
		withMigrations(t, schemaV1)
		_, err = Migrate(ctx, conn)
		if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "schema version 2, this sif knows up to 1") {
			t.Errorf("a version 1 sif on the upgraded database: %v", err)
		}
	})

	t.Run("failed step changes nothing", func(t *testing.T) {
		conn := dial(t, freshDB(t, srv, "failed"))
		withMigrations(t, schemaV1)
		if _, err := Migrate(ctx, conn); err != nil {
			t.Fatal(err)
		}
		withMigrations(t, schemaV1, []string{
			`CREATE TABLE sif_partial (n int)`,
			`ALTER TABLE sif_missing ADD COLUMN n int`,
		})
		_, err := Migrate(ctx, conn)
		if err == nil || !strings.Contains(err.Error(), "from version 1 to 2") || !strings.Contains(err.Error(), "sif_missing") {
			t.Fatalf("Migrate with a failing step: %v", err)
		}
		if v := queryInt(t, conn, "SELECT version FROM sif_schema"); v != 1 {
			t.Errorf("version %d after a failed step, want 1", v)
		}
		if n := queryInt(t, conn, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'sif_partial'"); n != 0 {
			t.Error("the failed step's first statement was kept")
		}
	})

	t.Run("concurrent create", func(t *testing.T) {
		// The first host to create the schema waits, before it commits,
		// until the second is blocked creating it too: the second then
		// loses the race on the CREATE TABLE and must read the first's
		// schema and fleet id.
		url := freshDB(t, srv, "race")
		watch := dial(t, srv.URL("postgres"))
		var hooked atomic.Int32
		var hookErr error
		testHookCreated = func() {
			if hooked.Add(1) != 1 {
				return
			}
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				var waiting int
				err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = 'race' AND wait_event_type = 'Lock'`).Scan(&waiting)
				if err != nil {
					hookErr = err
					return
				}
				if waiting > 0 {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			hookErr = errors.New("the second migration never blocked on the first")
		}
		t.Cleanup(func() { testHookCreated = nil })
		var wg sync.WaitGroup
		ids := make([]string, 2)
		errs := make([]error, 2)
		for i := range ids {
			c := dial(t, url)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids[i], errs[i] = Migrate(ctx, c)
			}()
		}
		wg.Wait()
		if hookErr != nil {
			t.Fatal(hookErr)
		}
		if hooked.Load() != 1 {
			t.Errorf("the schema was created %d times", hooked.Load())
		}
		if errs[0] != nil || errs[1] != nil || ids[0] != ids[1] {
			t.Fatalf("two hosts creating one schema: %q %v, %q %v", ids[0], errs[0], ids[1], errs[1])
		}
		conn := dial(t, url)
		if n := queryInt(t, conn, "SELECT count(*) FROM sif_schema WHERE fleet_id = $1", ids[0]); n != 1 {
			t.Errorf("sif_schema rows with the fleet id: %d", n)
		}
	})

	t.Run("concurrent create free-running", func(t *testing.T) {
		// Many hosts at once on fresh databases, with no hook: whatever
		// the interleaving, one schema and one fleet id.
		for round := 0; round < 5; round++ {
			url := freshDB(t, srv, fmt.Sprintf("free%d", round))
			var wg sync.WaitGroup
			ids := make([]string, 4)
			errs := make([]error, 4)
			for i := range ids {
				c := dial(t, url)
				wg.Add(1)
				go func() {
					defer wg.Done()
					ids[i], errs[i] = Migrate(ctx, c)
				}()
			}
			wg.Wait()
			for i := range ids {
				if errs[i] != nil || ids[i] != ids[0] {
					t.Errorf("round %d host %d: %q %v, host 0 %q", round, i, ids[i], errs[i], ids[0])
				}
			}
		}
	})

	t.Run("postings created beforehand", func(t *testing.T) {
		// An operator's sif_postings, hash-partitioned on key (here with
		// local partitions; multinode_test.go puts them on other
		// servers), is taken as it is: no primary key, still partitioned.
		conn := dial(t, freshDB(t, srv, "prepostings"))
		mustExec(t, conn, `CREATE TABLE sif_postings (key integer NOT NULL, content_id bigint NOT NULL, weight integer NOT NULL) PARTITION BY HASH (key)`)
		mustExec(t, conn, `CREATE TABLE sif_postings_0 PARTITION OF sif_postings FOR VALUES WITH (MODULUS 2, REMAINDER 0)`)
		mustExec(t, conn, `CREATE TABLE sif_postings_1 PARTITION OF sif_postings FOR VALUES WITH (MODULUS 2, REMAINDER 1)`)
		id, err := Migrate(ctx, conn)
		if err != nil {
			t.Fatalf("Migrate over a partitioned sif_postings: %v", err)
		}
		var kind string
		if err := conn.QueryRow(ctx, "SELECT relkind::text FROM pg_class WHERE oid = 'sif_postings'::regclass").Scan(&kind); err != nil || kind != "p" {
			t.Errorf("sif_postings relkind %q (%v), want p: the operator's table was replaced", kind, err)
		}
		if v, readID, _, err := ReadSchema(ctx, conn); err != nil || v != SchemaVersion || readID != id {
			t.Errorf("ReadSchema: %d %q %v", v, readID, err)
		}
		if id2, err := Migrate(ctx, conn); err != nil || id2 != id {
			t.Errorf("second Migrate: %q %v, want %q", id2, err, id)
		}
	})

	t.Run("unrelated postings refused", func(t *testing.T) {
		for i, create := range []string{
			`CREATE TABLE sif_postings (key integer, content_id text)`,
			`CREATE TABLE sif_postings (key integer NOT NULL, content_id bigint NOT NULL, weight integer NOT NULL, extra text)`,
			`CREATE TABLE sif_postings (key integer NOT NULL, content_id bigint NOT NULL, weight integer)`,
			`CREATE TABLE sif_postings (key bigint NOT NULL, content_id bigint NOT NULL, weight integer NOT NULL)`,
		} {
			conn := dial(t, freshDB(t, srv, fmt.Sprintf("badpostings%d", i)))
			mustExec(t, conn, create)
			_, err := Migrate(ctx, conn)
			if err == nil || !strings.Contains(err.Error(), "sif_postings exists and is not sif's") {
				t.Fatalf("Migrate over %s: %v", create, err)
			}
			t.Log(err)
			var exists *string
			if err := conn.QueryRow(ctx, "SELECT to_regclass('sif_schema')::text").Scan(&exists); err != nil || exists != nil {
				t.Errorf("sif_schema left behind after %s: %v %v", create, exists, err)
			}
		}
	})

	t.Run("foreign tables", func(t *testing.T) {
		// A database holding a table of sif's names but no sif_schema is
		// not taken over.
		conn := dial(t, freshDB(t, srv, "foreign"))
		mustExec(t, conn, "CREATE TABLE sif_hosts (x int)")
		_, err := Migrate(ctx, conn)
		if err == nil || !strings.Contains(err.Error(), `"sif_hosts" already exists`) {
			t.Fatalf("Migrate over a foreign sif_hosts: %v", err)
		}
		var exists *string
		if err := conn.QueryRow(ctx, "SELECT to_regclass('sif_schema')::text").Scan(&exists); err != nil || exists != nil {
			t.Errorf("sif_schema left behind: %v %v", exists, err)
		}
	})
}
