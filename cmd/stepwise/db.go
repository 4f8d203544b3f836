package main

import (
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// openDB opens the store at dsn: a SQLite file path (the embedded default).
func openDB(dsn string, readOnly bool) (store.Store, error) {
	return sqlite.Open(dsn, &sqlite.Options{MustExist: readOnly})
}
