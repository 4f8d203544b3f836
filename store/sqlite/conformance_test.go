package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

// TestConformance runs the storage contract's suite against SQLite.
func TestConformance(t *testing.T) {
	storetest.Run(t, Harness())
}

// Harness is the conformance suite's harness for SQLite stores in a
// test's temporary directory.
func Harness() storetest.Harness {
	return storetest.Harness{
		Open: func(t *testing.T, now func() time.Time) store.Store {
			s, err := Open(filepath.Join(t.TempDir(), "conformance.db"), &Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Reopen: func(t *testing.T, s store.Store, now func() time.Time) store.Store {
			o, err := Open(s.(*SQLite).Path(), &Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return o
		},
		Corrupt: func(t *testing.T, st store.Store, runID, what string, n int) {
			s := st.(*SQLite)
			var rk int64
			if err := s.w.QueryRow(`SELECT rk FROM runs WHERE id = ?`, runID).Scan(&rk); err != nil {
				t.Fatal(err)
			}
			switch what {
			case "step":
				flip(t, s, "steps", "body", fmt.Sprintf("id = %d", rowKey(rk, n)), 5)
			case "segment":
				flip(t, s, "segments", "body", fmt.Sprintf("id = %d", rowKey(rk, n)), 5)
			case "intent":
				flip(t, s, "intents", "args", fmt.Sprintf("rk = %d AND seq = %d", rk, n), 1)
			default:
				t.Fatalf("corrupt %q", what)
			}
		},
		Size: func(t *testing.T, st store.Store, runID string) int64 {
			s := st.(*SQLite)
			var n int64
			if err := s.w.QueryRow(`SELECT
				(SELECT coalesce(sum(length(body)), 0) FROM steps WHERE rk = (SELECT rk FROM runs WHERE id = ?1)) +
				(SELECT coalesce(sum(length(body)), 0) FROM segments WHERE rk = (SELECT rk FROM runs WHERE id = ?1)) +
				(SELECT coalesce(sum(length(body)), 0) FROM tool_lists)`, runID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
}
