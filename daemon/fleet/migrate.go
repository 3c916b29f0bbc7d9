package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations[i] takes the schema from version i to version i+1, so
// len(migrations) is the version this sif knows (SchemaVersion; a test
// checks they agree). migrations[0] creates the schema, sif_schema
// included. A step is a list of statements run in order in one
// transaction, which also records the new version; a new version is one
// more entry here and a test of the upgrade.
var migrations = [][]string{
	schemaV1,
	schemaV2,
}

// testHookCreated, when set, is called by Migrate after the statements
// that create the schema and before their transaction commits, so a test
// can make a second migration race the first.
var testHookCreated func()

// maxConflicts bounds how often Migrate starts over after losing a race
// to another migrating host, or a transaction retry asked by the
// database.
const maxConflicts = 10

// Migrate brings the database to this sif's schema version and returns
// the fleet's id: it creates the schema in an empty database (with a new
// random fleet id) and applies the migrations above the database's
// version, each in its own transaction that also records the version it
// reaches, so a database is always at one version, never between two.
//
// Hosts may migrate one database at the same time: an upgrade step reads
// the version with SELECT ... FOR UPDATE on the one sif_schema row, so a
// second host waits for the first to commit and then reads the version it
// reached; two hosts creating the schema at once collide on the CREATE
// TABLE (PostgreSQL's DDL is transactional), and the loser rolls back and
// reads the winner's schema and fleet id. A database at a version newer
// than this sif knows is left untouched and refused with an error
// wrapping ErrNewerSchema that says to upgrade sif.
//
// Migrate is sif's own small loop over pgx transactions rather than a
// migration tool such as tern: tern serialises migrators with
// pg_advisory_lock, which the SQL subset sif keeps to (so that
// CockroachDB, YugabyteDB and Citus run it) leaves out, keeps its version
// in a table of its own beside sif_schema's fleet id and parameters, and
// reports a newer schema as a bare version error; the row lock and the
// version check here do all three within the one table.
//
// db may be a *pgx.Conn, a *pgxpool.Pool or a pgx.Tx (whose steps then
// become savepoints of it). Migrate is safe to call from many goroutines
// and hosts at once, each with its own db.
func Migrate(ctx context.Context, db TxStarter) (fleetID string, err error) {
	target := len(migrations)
	conflicts := 0
	for {
		version, fleetID, err := migrateStep(ctx, db, target)
		if err == nil && version == target {
			return fleetID, nil
		}
		if err == nil {
			continue // one step applied; read the version again
		}
		if errors.Is(err, errConflict) && conflicts < maxConflicts {
			conflicts++
			continue
		}
		return "", err
	}
}

// errConflict marks a step that lost a race to another migration (or was
// asked by the database to retry): Migrate reads the version again.
var errConflict = errors.New("fleet: migration conflict")

// migrateStep reads the database's version in a transaction that locks
// the sif_schema row and, below target, applies the next migration in it.
// It returns the version the database is at when it returns.
func migrateStep(ctx context.Context, db TxStarter, target int) (version int, fleetID string, err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, "", fmt.Errorf("fleet: migrating the schema: %w", err)
	}
	defer tx.Rollback(ctx) // after Commit, a no-op

	err = tx.QueryRow(ctx, `SELECT version, fleet_id FROM sif_schema WHERE singleton = 1 FOR UPDATE`).Scan(&version, &fleetID)
	switch {
	case isCode(err, codeUndefinedTable):
		tx.Rollback(ctx) // the failed SELECT ended the transaction
		return createSchema(ctx, db, target)
	case isCode(err, codeSerialization, codeDeadlock):
		return 0, "", fmt.Errorf("%w: %v", errConflict, err)
	case err != nil:
		return 0, "", fmt.Errorf("fleet: reading the schema version: %w", noSchema(err))
	}
	if version > target {
		return version, fleetID, fmt.Errorf("%w: fleet database at schema version %d, this sif knows up to %d: upgrade sif on this host",
			ErrNewerSchema, version, target)
	}
	if version < 1 {
		return version, fleetID, fmt.Errorf("fleet: sif_schema says version %d: not a database sif made", version)
	}
	if version == target {
		return version, fleetID, tx.Commit(ctx)
	}
	for _, stmt := range migrations[version] {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return version, fleetID, stepError(version, err)
		}
	}
	tag, err := tx.Exec(ctx, `UPDATE sif_schema SET version = $1 WHERE singleton = 1 AND version = $2`, version+1, version)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("%w: the version changed under a locked row", errConflict)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return version, fleetID, stepError(version, err)
	}
	return version + 1, fleetID, nil
}

// createSchema creates the schema in a database without sif_schema, at
// version 1 with a new fleet id, in one transaction. Losing the race to
// another host creating it is a conflict; finding some of sif's other
// tables without sif_schema is not (the CREATE fails again after the
// retry: the error names the table), except sif_postings, which an
// operator may create beforehand (partitioned, say): it is taken when its
// columns are sif's, and refused with an error naming them otherwise.
func createSchema(ctx context.Context, db TxStarter, target int) (version int, fleetID string, err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, "", fmt.Errorf("fleet: creating the schema: %w", err)
	}
	defer tx.Rollback(ctx)
	for _, stmt := range migrations[0] {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return 0, "", stepError(0, err)
		}
	}
	if err := checkPostings(ctx, tx); err != nil {
		return 0, "", err
	}
	id := newFleetID()
	if _, err := tx.Exec(ctx, `INSERT INTO sif_schema (singleton, version, fleet_id) VALUES (1, 1, $1)`, id); err != nil {
		return 0, "", stepError(0, err)
	}
	if testHookCreated != nil {
		testHookCreated()
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, "", stepError(0, err)
	}
	return 1, id, nil
}

// stepError describes the failure of the migration from version from:
// a conflict when another host's migration won a race, else the error
// itself.
func stepError(from int, err error) error {
	what := fmt.Sprintf("migrating the fleet schema from version %d to %d", from, from+1)
	if from == 0 {
		what = "creating the fleet schema"
	}
	if isCode(err, codeDuplicateTable, codeDuplicateObject, codeUniqueViolation, codeSerialization, codeDeadlock) {
		return fmt.Errorf("%w: %s: %v", errConflict, what, err)
	}
	return fmt.Errorf("fleet: %s: %w", what, err)
}

// newFleetID returns a random 128-bit id in hex.
func newFleetID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Compile-time checks that pgx's connection, transaction and pool can
// migrate.
var (
	_ TxStarter = (*pgx.Conn)(nil)
	_ TxStarter = pgx.Tx(nil)
)
