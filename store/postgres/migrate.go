package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/schema"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations lists the embedded migrations in order (a test checks that
// they run 1, 2, 3... with no gap).
func migrations() ([]schema.Migration, error) { return schema.Read(migrationFiles, "migrations") }

// SchemaVersion is the schema version this build writes: the number of its
// last embedded migration.
func SchemaVersion() int { return schema.Version(migrationFiles, "migrations") }

// migrateLock is the first key of the advisory lock that serializes
// migrations; the second is the hash of the schema's name, so stores in
// different schemas migrate independently.
const migrateLock = 0x73747770 // "stwp"

// migrate brings the schema up to date. Each migration runs in its own
// transaction together with its row in schema_migrations, so a crash leaves
// the database at a version boundary. Concurrent openers serialize on a
// transaction-scoped advisory lock, and the later ones find nothing to do.
func (s *Postgres) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	for {
		done, err := s.migrateOne(ctx, ms)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next pending migration; done reports that none was.
func (s *Postgres) migrateOne(ctx context.Context, ms []schema.Migration) (done bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, int32(migrateLock)); err != nil {
			return fmt.Errorf("lock for migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text    NOT NULL,
			applied_ns bigint  NOT NULL)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return fmt.Errorf("read version: %w", err)
		}
		if have > len(ms) {
			return fmt.Errorf("%w: the database is at schema version %d, this build knows up to %d; use a newer stepwise",
				store.ErrNewerSchema, have, len(ms))
		}
		if have == len(ms) {
			done = true
			return nil
		}
		m := ms[have]
		// No arguments: pgx sends it with the simple protocol, which
		// runs several statements.
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_ns) VALUES ($1, $2, $3)`,
			m.Version, m.Name, s.now().UnixNano()); err != nil {
			return fmt.Errorf("migration %s: record: %w", m.Name, err)
		}
		return nil
	})
	return done, err
}
