//go:build cgo

package tools

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// openReadOnly opens the database at dsn (read-only) on one connection,
// with ATTACH disabled.
func openReadOnly(ctx context.Context, dsn string) (*sql.DB, *sql.Conn, error) {
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

// sqlError words a SQLite error for the model.
func sqlError(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrReadonly || se.Code == sqlite3.ErrPerm) {
		return fmt.Errorf("the database is read-only: %v", err)
	}
	if strings.Contains(err.Error(), "too many attached databases") {
		return errors.New("ATTACH (and VACUUM INTO) are disabled: only the configured database can be queried")
	}
	return fmt.Errorf("SQLite: %v", err)
}
