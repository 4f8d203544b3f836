package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

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

// migrateUpTo, when positive, stops the migrations at that version (for
// the tests of migrations).
var migrateUpTo int

// migrate brings the schema up to date. Each migration runs in its own
// (immediate) transaction together with its row in schema_migrations, so a
// crash leaves the database at a version boundary; concurrent openers
// serialize on the write lock and the later ones find nothing to do.
func (s *SQLite) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if migrateUpTo > 0 {
		ms = ms[:migrateUpTo] // tests build databases of earlier versions
	}
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_ns INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for {
		done, err := s.migrateOne(ctx, ms)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next pending migration; done reports that none was.
func (s *SQLite) migrateOne(ctx context.Context, ms []schema.Migration) (done bool, err error) {
	err = s.write(ctx, "migrate", func(tx *wtx) error {
		var have int
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return fmt.Errorf("read version: %w", err)
		}
		if have > len(ms) {
			return fmt.Errorf("%w: %s is at schema version %d, this build knows up to %d; use a newer stepwise",
				store.ErrNewerSchema, s.path, have, len(ms))
		}
		if have == len(ms) {
			done = true
			return nil
		}
		m := ms[have]
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if fn := goMigrations[m.Version]; fn != nil {
			if err := fn(ctx, tx); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_ns) VALUES (?, ?, ?)`,
			m.Version, m.Name, s.now().UnixNano()); err != nil {
			return fmt.Errorf("migration %s: record: %w", m.Name, err)
		}
		return nil
	})
	return done, err
}

// rollback ends a transaction that was not committed; after Commit it is a
// no-op.
func rollback(tx *sql.Tx) { _ = tx.Rollback() }
