package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

// TestConformance runs the storage contract's suite against PostgreSQL,
// each of its stores in a schema of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	serverURL(t)
	storetest.Run(t, Harness())
}

// Harness is the conformance suite's harness for PostgreSQL stores in
// fresh schemas of the test server, dropped when the test ends.
func Harness() storetest.Harness {
	return storetest.Harness{
		Open: func(t *testing.T, now func() time.Time) store.Store {
			return openWith(t, &Options{Now: now})
		},
		Reopen: func(t *testing.T, s store.Store, now func() time.Time) store.Store {
			o, err := Open(context.Background(), serverURL(t), &Options{Schema: s.(*Postgres).Schema(), Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return o
		},
		Corrupt: func(t *testing.T, st store.Store, runID, what string, n int) {
			s := st.(*Postgres)
			rk := rkOf(t, s, runID)
			switch what {
			case "step":
				flip(t, s, "steps", "body", fmt.Sprintf("rk = %d AND seq = %d", rk, n), 5)
			case "segment":
				flip(t, s, "segments", "body", fmt.Sprintf("rk = %d AND seq_from = %d", rk, n), 5)
			case "intent":
				flip(t, s, "intents", "args", fmt.Sprintf("rk = %d AND seq = %d", rk, n), 1)
			default:
				t.Fatalf("corrupt %q", what)
			}
		},
		Size: func(t *testing.T, st store.Store, runID string) int64 {
			s := st.(*Postgres)
			var n int64
			if err := s.pool.QueryRow(context.Background(), `SELECT
				(SELECT coalesce(sum(length(body)), 0) FROM steps WHERE rk = (SELECT rk FROM runs WHERE id = $1)) +
				(SELECT coalesce(sum(length(body)), 0) FROM segments WHERE rk = (SELECT rk FROM runs WHERE id = $1)) +
				(SELECT coalesce(sum(length(body)), 0) FROM tool_lists)`, runID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
}
