//go:build cgo

package postgres

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

// TestAcrossSQLite: a run exported by SQLite imports into PostgreSQL and
// exports from it to the same bytes, and back, and the other way round;
// the same memory gives the same hits with the same scores in both (BM25
// computed the same way from the same statistics). See storetest.Across.
func TestAcrossSQLite(t *testing.T) {
	t.Parallel()
	serverURL(t)
	lite := storetest.Harness{Open: func(t *testing.T, now func() time.Time) store.Store {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "across.db"), &sqlite.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
	storetest.Across(t, lite, Harness())
}
