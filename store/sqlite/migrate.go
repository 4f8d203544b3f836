package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/stepwise-agent/stepwise/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema change; version is the file's number.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded migrations in order. Their numbers must run
// 1, 2, 3... with no gap (a test checks it).
func migrations() ([]migration, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with its number", e.Name())
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want number %d", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the schema version this build writes: the number of its
// last embedded migration.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

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
func (s *SQLite) migrateOne(ctx context.Context, ms []migration) (done bool, err error) {
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
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if fn := goMigrations[m.version]; fn != nil {
			if err := fn(ctx, tx); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_ns) VALUES (?, ?, ?)`,
			m.version, m.name, s.now().UnixNano()); err != nil {
			return fmt.Errorf("migration %s: record: %w", m.name, err)
		}
		return nil
	})
	return done, err
}

// rollback ends a transaction that was not committed; after Commit it is a
// no-op.
func rollback(tx *sql.Tx) { _ = tx.Rollback() }
