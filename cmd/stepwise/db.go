package main

import (
	"context"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/shell/tools"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/postgres"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// The sql_query tool reaches SQLite through the driver the store uses
// (shell has none of its own).
func init() { tools.RegisterSQLite(tools.SQLite{Open: sqlite.OpenQuery, Error: sqlite.QueryError}) }

// isPostgresURL reports whether a --db value names a PostgreSQL database.
func isPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// openDB opens the store at dsn: a postgres:// (or postgresql://) URL, else
// the path of a SQLite file (the embedded default). A read-only command
// never creates a SQLite file: a missing one is store.ErrNotFound. d says
// what a commit survives (store.Durability).
func openDB(dsn string, readOnly bool, d store.Durability) (store.Store, error) {
	if isPostgresURL(dsn) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return postgres.Open(ctx, dsn, &postgres.Options{Durability: d})
	}
	return sqlite.Open(dsn, &sqlite.Options{MustExist: readOnly, Sync: sqlite.SyncFor(d)})
}
