package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// OpenQuery opens the SQLite database at dsn for the sql_query tool
// (shell/tools.RegisterSQLite): one connection, with ATTACH (and so VACUUM
// INTO) disabled, so that a query reaches no other file. The dsn says
// read-only (mode=ro, _query_only). It lives here because shell has no
// database driver of its own; the program that runs agents wires it.
func OpenQuery(ctx context.Context, dsn string) (*sql.DB, *sql.Conn, error) {
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open the database: %v", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("cannot open the database: %v", err)
	}
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		c.SetLimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0) // no ATTACH, no VACUUM INTO
		return nil
	})
	if err != nil {
		conn.Close()
		db.Close()
		return nil, nil, err
	}
	return db, conn, nil
}

// QueryError words an error of a connection OpenQuery opened for the model.
func QueryError(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrReadonly || se.Code == sqlite3.ErrPerm) {
		return fmt.Errorf("the database is read-only: %v", err)
	}
	if strings.Contains(err.Error(), "too many attached databases") {
		return errors.New("ATTACH (and VACUUM INTO) are disabled: only the configured database can be queried")
	}
	return fmt.Errorf("SQLite: %v", err)
}
