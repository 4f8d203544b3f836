package postgres

import (
	"bytes"
	"context"
	"fmt"
	"github.com/jackc/pgx/v5"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

// TestConformance runs the storage contract's suite against PostgreSQL,
// each of its stores in a schema of its own: every backend-generic test of
// this package is one of its cases.
func TestConformance(t *testing.T) {
	t.Parallel()
	serverURL(t)
	storetest.Run(t, Harness())
}

// Harness is the conformance suite's harness for PostgreSQL stores in
// fresh schemas of the test server, dropped when the test ends, with
// every optional hook but Idle (a store holds no transaction between
// calls: its writes are single statements or batches).
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
		LogCache: func(t *testing.T, s store.Store, budget int64) (store.Store, func() storetest.CacheStats) {
			o, err := Open(context.Background(), serverURL(t), &Options{Schema: s.(*Postgres).Schema(), LogCacheBytes: budget})
			if err != nil {
				t.Fatal(err)
			}
			return o, func() storetest.CacheStats {
				st := o.logs.Stats()
				return storetest.CacheStats{Runs: st.Runs, Bytes: st.Bytes, Budget: st.Budget, Hits: st.Hits, Misses: st.Misses, Evicts: st.Evicted}
			}
		},
		Corrupt: func(t *testing.T, s store.Store, runID, what string, n int) {
			at := map[string]int{"step": 5, "segment": 5, "intent": 1}[what]
			damage(t, s, storetest.Damage{Kind: storetest.DamageKind(what), RunID: runID, Seq: n, At: at})
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
		Damage: damage,
		Dump: func(t *testing.T, st store.Store) []byte {
			s := st.(*Postgres)
			var b bytes.Buffer
			for _, table := range []string{"runs ORDER BY rk", "steps ORDER BY rk, seq", "segments ORDER BY rk, seq_from", "intents ORDER BY ord",
				"agent_changes ORDER BY ord", "tool_lists ORDER BY digest", "tool_cache ORDER BY key", "inbox ORDER BY rk, n", "blobs ORDER BY digest"} {
				rows, err := s.pool.Query(context.Background(), `SELECT * FROM `+table)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					vals, err := rows.Values()
					if err != nil {
						t.Fatal(err)
					}
					for _, v := range vals {
						if bs, ok := v.([]byte); ok {
							v = string(bs)
						}
						fmt.Fprintf(&b, "%v|", v)
					}
					b.WriteByte('\n')
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
			}
			return b.Bytes()
		},
		Segments: func(t *testing.T, st store.Store, runID string) int {
			var n int
			if err := st.(*Postgres).pool.QueryRow(context.Background(), `SELECT count(*) FROM segments g JOIN runs r ON r.rk = g.rk WHERE r.id = $1`, runID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
		Remembers: func(st store.Store, runID string) bool {
			_, ok := st.(*Postgres).cache.Tail(runID)
			return ok
		},
	}
}

// damage is the harness's Damage: it edits the rows of the run in place.
func damage(t *testing.T, st store.Store, d storetest.Damage) {
	t.Helper()
	s := st.(*Postgres)
	var rk int64
	if d.RunID != "" {
		rk = rkOf(t, s, d.RunID)
	}
	ctx := context.Background()
	switch d.Kind {
	case storetest.DamageStep:
		flip(t, s, "steps", "body", fmt.Sprintf("rk = %d AND seq = %d", rk, d.Seq), d.At)
	case storetest.DamageSegment:
		flip(t, s, "segments", "body", fmt.Sprintf("rk = %d AND seq_from = %d", rk, d.Seq), d.At)
	case storetest.DamageIntent:
		where := fmt.Sprintf("rk = %d AND seq = %d", rk, d.Seq)
		if d.CallID != "" {
			where += fmt.Sprintf(" AND call_id = '%s'", d.CallID)
		}
		flip(t, s, "intents", "args", where, d.At)
	case storetest.DamageAgentChange:
		flip(t, s, "agent_changes", "config", fmt.Sprintf("ord = (SELECT max(ord) FROM agent_changes WHERE rk = %d AND seq = %d)", rk, d.Seq), d.At)
	case storetest.DamageToolLists:
		flip(t, s, "tool_lists", "body", "true", d.At)
	case storetest.DamageToolListsGone:
		exec(t, s, `DELETE FROM tool_lists`)
	case storetest.DamageBlobs:
		rows, err := s.pool.Query(ctx, `SELECT digest FROM blobs`)
		if err != nil {
			t.Fatal(err)
		}
		digests, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			t.Fatal(err)
		}
		for _, dg := range digests {
			flip(t, s, "blobs", "body", fmt.Sprintf(`digest = decode('%x', 'hex')`, dg), d.At)
		}
	case storetest.DamageBlobsGone:
		exec(t, s, `DELETE FROM blobs`)
	case storetest.DamageToolCache:
		flip(t, s, "tool_cache", "result", fmt.Sprintf("key = '%s'", d.Key), d.At)
	case storetest.DamageInbox:
		flip(t, s, "inbox", "content", fmt.Sprintf("rk = %d AND n = %d", rk, d.Seq), d.At)
	case storetest.ResealStep:
		var row codec.Row
		if err := scanStep(s.pool.QueryRow(ctx, `SELECT `+stepColumns+` FROM steps s WHERE rk = $1 AND seq = $2`, rk, d.Seq), &row); err != nil {
			t.Fatal(err)
		}
		if err := row.Open(); err != nil {
			t.Fatal(err)
		}
		row.Head = []byte{0xa1, 0x01, 0x01} // a state with only a version: no phase
		row.Seal()
		exec(t, s, `UPDATE steps SET body = $1, sum = $2 WHERE rk = $3 AND seq = $4`, row.Body, codec.StepSum(rk, &row), rk, d.Seq)
	case storetest.ResealSegment:
		var from, to, first, n int
		if err := s.pool.QueryRow(ctx, `SELECT seq_from, seq_to, first, n FROM segments WHERE rk = $1 AND seq_from = $2`, rk, d.Seq).Scan(&from, &to, &first, &n); err != nil {
			t.Fatal(err)
		}
		bad := codec.NewSegment(rk, from, to, first, n, []byte{0xff, 0x01}) // a break code where a message starts
		exec(t, s, `UPDATE segments SET body = $1, sum = $2 WHERE rk = $3 AND seq_from = $4`, bad.Body, bad.Sum, rk, d.Seq)
	default:
		t.Fatalf("damage %q", d.Kind)
	}
}
