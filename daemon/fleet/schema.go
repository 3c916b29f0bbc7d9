package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SchemaVersion is the version of the fleet schema this sif creates and
// uses. A database at a higher version was migrated by a newer sif;
// Migrate refuses it (ErrNewerSchema).
const SchemaVersion = 2

// Querier runs statements. *pgx.Conn, pgx.Tx and *pgxpool.Pool satisfy
// it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// TxStarter is a Querier that also starts transactions. *pgx.Conn,
// pgx.Tx (whose Begin makes a savepoint) and *pgxpool.Pool satisfy it.
type TxStarter interface {
	Querier
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Errors of the schema, checked with errors.Is; the errors returned wrap
// them in a message that says what to do.
var (
	// ErrNewerSchema: the database was migrated by a newer sif.
	ErrNewerSchema = errors.New("fleet: database schema is newer than this sif")
	// ErrNoSchema: the database has no sif_schema table, or no row in it.
	ErrNoSchema = errors.New("fleet: database has no sif schema")
	// ErrParamsMismatch: the fleet's fingerprint parameters differ from
	// this host's, so their fingerprints cannot be compared.
	ErrParamsMismatch = errors.New("fleet: fingerprint parameters differ from the fleet's")
)

// schemaV1 creates version 1 of the schema; see the package doc's Schema
// section. It keeps to SQL that PostgreSQL, CockroachDB, YugabyteDB and
// Citus all run: no extensions, sequences or serial columns (ids are
// computed by sif), plain btree indexes.
var schemaV1 = []string{
	`CREATE TABLE sif_schema (
		singleton int PRIMARY KEY CHECK (singleton = 1),
		version int NOT NULL,
		fleet_id text NOT NULL,
		params text
	)`,
	`CREATE TABLE sif_hosts (
		host_id bigint PRIMARY KEY,
		name text NOT NULL UNIQUE,
		gen bigint NOT NULL DEFAULT 0,
		roots bytea[] NOT NULL DEFAULT '{}',
		last_seen timestamptz NOT NULL DEFAULT now(),
		version text NOT NULL DEFAULT ''
	)`,
	`CREATE TABLE sif_contents (
		content_id bigint PRIMARY KEY,
		strong bytea NOT NULL,
		size bigint NOT NULL,
		weight bigint NOT NULL,
		features integer NOT NULL,
		level smallint NOT NULL,
		level_weights bigint[] NOT NULL,
		type smallint NOT NULL DEFAULT 0,
		signature bytea NOT NULL
	)`,
	// An operator may create sif_postings before the first host joins,
	// e.g. hash-partitioned on key with partitions on other servers
	// (packaging/fleet/partitioned-postings.sql); createSchema then
	// checks its columns (checkPostings).
	`CREATE TABLE IF NOT EXISTS sif_postings (
		key integer NOT NULL,
		content_id bigint NOT NULL,
		weight integer NOT NULL,
		PRIMARY KEY (key, content_id)
	)`,
	`CREATE TABLE sif_files (
		host_id bigint NOT NULL REFERENCES sif_hosts ON DELETE CASCADE,
		file_id bigint NOT NULL,
		path bytea NOT NULL,
		size bigint NOT NULL,
		mtime bigint NOT NULL,
		content_id bigint REFERENCES sif_contents,
		PRIMARY KEY (host_id, file_id)
	)`,
	`CREATE INDEX sif_files_content ON sif_files (content_id)`,
}

// schemaV2 adds each content's SimiHash skew key and sum table (NULL for
// a content published only by hosts whose index keeps no SimiHash keys),
// and an index on the key so that SimiFind's key range is one index range
// scan (SimiFind). The key is a uint32 and the sums uint32 counts, so both
// are bigint: int would overflow past 2^31. Added columns without a
// default and a plain btree index run on PostgreSQL, CockroachDB,
// YugabyteDB and Citus alike, and cost nothing on existing rows.
var schemaV2 = []string{
	`ALTER TABLE sif_contents ADD COLUMN simi_key bigint`,
	`ALTER TABLE sif_contents ADD COLUMN simi_sum bigint[]`,
	`CREATE INDEX sif_contents_simi ON sif_contents (simi_key)`,
}

// postingsColumns are sif_postings' columns, in order, as
// information_schema names their types.
var postingsColumns = []struct{ name, typ string }{
	{"key", "integer"}, {"content_id", "bigint"}, {"weight", "integer"},
}

// checkPostings checks that the table sif_postings has exactly sif's
// columns (key integer, content_id bigint, weight integer, all NOT NULL),
// so that a table an operator created beforehand (partitioned, its
// partitions perhaps on other servers) is taken and an unrelated table of
// that name is refused with an error naming what differs.
func checkPostings(ctx context.Context, q Querier) error {
	rows, err := q.Query(ctx, `
		SELECT column_name, data_type, is_nullable FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'sif_postings'
		ORDER BY ordinal_position`)
	if err != nil {
		return fmt.Errorf("fleet: reading sif_postings' columns: %w", err)
	}
	var have []string
	ok := true
	for i := 0; rows.Next(); i++ {
		var name, typ, nullable string
		if err := rows.Scan(&name, &typ, &nullable); err != nil {
			rows.Close()
			return fmt.Errorf("fleet: reading sif_postings' columns: %w", err)
		}
		col := name + " " + typ
		if nullable != "NO" {
			col += " NULL"
		}
		have = append(have, col)
		if i >= len(postingsColumns) || name != postingsColumns[i].name || typ != postingsColumns[i].typ || nullable != "NO" {
			ok = false
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("fleet: reading sif_postings' columns: %w", err)
	}
	if ok && len(have) == len(postingsColumns) {
		return nil
	}
	return fmt.Errorf("fleet: the table sif_postings exists and is not sif's: its columns are (%s), sif's are (key integer, content_id bigint, weight integer), all NOT NULL: drop or rename it, or create it as packaging/fleet/partitioned-postings.sql does",
		strings.Join(have, ", "))
}

// ReadSchema returns the database's schema version, fleet id and
// fingerprint parameters ("" when no host has published yet). A database
// without the schema gives an error wrapping ErrNoSchema.
func ReadSchema(ctx context.Context, q Querier) (version int, fleetID, params string, err error) {
	var p *string
	err = q.QueryRow(ctx, `SELECT version, fleet_id, params FROM sif_schema WHERE singleton = 1`).Scan(&version, &fleetID, &p)
	if err != nil {
		return 0, "", "", fmt.Errorf("fleet: reading the schema version: %w", noSchema(err))
	}
	if p != nil {
		params = *p
	}
	return version, fleetID, params, nil
}

// SetParams records params, the fleet's fingerprint parameters (JSON,
// compared as text: callers encode them canonically), when none are
// recorded yet, and otherwise checks they are the recorded ones: different
// ones give an error wrapping ErrParamsMismatch that names both. When
// hosts call it at once, the first to update the row sets the parameters
// and the others compare with them.
func SetParams(ctx context.Context, q Querier, params string) error {
	var fleet string
	err := q.QueryRow(ctx, `UPDATE sif_schema SET params = COALESCE(params, $1) WHERE singleton = 1 RETURNING params`, params).Scan(&fleet)
	if err != nil {
		return fmt.Errorf("fleet: setting the fingerprint parameters: %w", noSchema(err))
	}
	if fleet != params {
		return fmt.Errorf("%w: the fleet database's are %s, this host's are %s (every host of a fleet must fingerprint alike)",
			ErrParamsMismatch, fleet, params)
	}
	return nil
}

// noSchema turns the errors of a database without sif_schema, or without
// its row, into one wrapping ErrNoSchema.
func noSchema(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: sif_schema has no row (run sif's migration: sifd does at start)", ErrNoSchema)
	}
	if isCode(err, codeUndefinedTable) {
		return fmt.Errorf("%w: no sif_schema table (run sif's migration: sifd does at start): %v", ErrNoSchema, err)
	}
	return err
}

// PostgreSQL's error codes (SQLSTATE) that the schema code tells apart;
// CockroachDB and YugabyteDB use the same ones.
const (
	codeUndefinedTable  = "42P01"
	codeDuplicateTable  = "42P07"
	codeDuplicateObject = "42710"
	codeUniqueViolation = "23505"
	codeSerialization   = "40001"
	codeDeadlock        = "40P01"
)

// isCode reports whether err is a PostgreSQL error with one of codes.
func isCode(err error, codes ...string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	for _, c := range codes {
		if pgErr.Code == c {
			return true
		}
	}
	return false
}
