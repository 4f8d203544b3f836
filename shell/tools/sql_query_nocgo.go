//go:build !cgo

package tools

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// openReadOnly fails: the SQLite driver needs cgo, and this build has none
// (the library builds without cgo; the CLI is built with it).
func openReadOnly(context.Context, string) (*sql.DB, *sql.Conn, error) {
	return nil, nil, errors.New("sql_query is not available: this program was built without cgo, which the SQLite driver needs")
}

// sqlError words a database error for the model.
func sqlError(err error) error { return fmt.Errorf("SQLite: %v", err) }
