package postgres

import (
	"context"
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
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
func (s *Postgres) migrateOne(ctx context.Context, ms []migration) (done bool, err error) {
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
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_ns) VALUES ($1, $2, $3)`,
			m.version, m.name, s.now().UnixNano()); err != nil {
			return fmt.Errorf("migration %s: record: %w", m.name, err)
		}
		return nil
	})
	return done, err
}
