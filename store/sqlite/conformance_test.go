package sqlite

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

// TestConformance runs the storage contract's suite against SQLite: every
// backend-generic test of this package is one of its cases.
func TestConformance(t *testing.T) {
	storetest.Run(t, Harness())
}

// Harness is the conformance suite's harness for SQLite stores in a
// test's temporary directory, with every optional hook.
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
		LogCache: func(t *testing.T, s store.Store, budget int64) (store.Store, func() storetest.CacheStats) {
			o, err := Open(s.(*SQLite).Path(), &Options{LogCacheBytes: budget})
			if err != nil {
				t.Fatal(err)
			}
			return o, func() storetest.CacheStats { return cacheStats(o.logs.Stats()) }
		},
		Corrupt: func(t *testing.T, s store.Store, runID, what string, n int) {
			at := map[string]int{"step": 5, "segment": 5, "intent": 1}[what]
			damage(t, s, storetest.Damage{Kind: storetest.DamageKind(what), RunID: runID, Seq: n, At: at})
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
		Damage: damage,
		Dump: func(t *testing.T, st store.Store) []byte {
			s := st.(*SQLite)
			var b bytes.Buffer
			for _, table := range []string{"runs ORDER BY rk", "steps ORDER BY id", "segments ORDER BY id", "intents ORDER BY ord",
				"agent_changes ORDER BY ord", "tool_lists ORDER BY digest", "tool_cache ORDER BY key", "inbox ORDER BY rk, n", "blobs ORDER BY digest"} {
				rows, err := s.r.Query(`SELECT * FROM ` + table)
				if err != nil {
					t.Fatal(err)
				}
				cols, _ := rows.Columns()
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
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
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				rows.Close()
			}
			return b.Bytes()
		},
		Segments: func(t *testing.T, st store.Store, runID string) int {
			var n int
			if err := st.(*SQLite).r.QueryRow(`SELECT count(*) FROM segments g JOIN runs r ON r.rk = g.rk WHERE r.id = ?`, runID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
		Remembers: func(st store.Store, runID string) bool {
			_, ok := st.(*SQLite).cache.Tail(runID)
			return ok
		},
		Idle: func(t *testing.T, st store.Store) bool { return !inTransaction(t, st.(*SQLite)) },
	}
}

// damage is the harness's Damage: it edits the rows of the run in place.
func damage(t *testing.T, st store.Store, d storetest.Damage) {
	t.Helper()
	s := st.(*SQLite)
	var rk int64
	if d.RunID != "" {
		if err := s.w.QueryRow(`SELECT rk FROM runs WHERE id = ?`, d.RunID).Scan(&rk); err != nil {
			t.Fatal(err)
		}
	}
	switch d.Kind {
	case storetest.DamageStep:
		flip(t, s, "steps", "body", fmt.Sprintf("id = %d", rowKey(rk, d.Seq)), d.At)
	case storetest.DamageSegment:
		flip(t, s, "segments", "body", fmt.Sprintf("id = %d", rowKey(rk, d.Seq)), d.At)
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
		execSQL(t, s, `DELETE FROM tool_lists`)
	case storetest.DamageBlobs:
		rows, err := s.w.Query(`SELECT digest FROM blobs`)
		if err != nil {
			t.Fatal(err)
		}
		var digests [][]byte
		for rows.Next() {
			var d []byte
			if err := rows.Scan(&d); err != nil {
				t.Fatal(err)
			}
			digests = append(digests, d)
		}
		rows.Close()
		for _, dg := range digests {
			flip(t, s, "blobs", "body", fmt.Sprintf("digest = x'%x'", dg), d.At)
		}
	case storetest.DamageBlobsGone:
		execSQL(t, s, `DELETE FROM blobs`)
	case storetest.DamageToolCache:
		flip(t, s, "tool_cache", "result", fmt.Sprintf("key = '%s'", d.Key), d.At)
	case storetest.DamageInbox:
		flip(t, s, "inbox", "content", fmt.Sprintf("rk = %d AND n = %d", rk, d.Seq), d.At)
	case storetest.ResealStep:
		var row codec.Row
		if err := scanStep(s.w.QueryRow(`SELECT `+stepColumns+` FROM steps s WHERE id = ?`, rowKey(rk, d.Seq)), &row); err != nil {
			t.Fatal(err)
		}
		if err := row.Open(); err != nil {
			t.Fatal(err)
		}
		row.Head = []byte{0xa1, 0x01, 0x01} // a state with only a version: no phase
		row.Seal()
		execSQL(t, s, `UPDATE steps SET body = ?, sum = ? WHERE id = ?`, row.Body, codec.StepSum(rk, &row), rowKey(rk, d.Seq))
	case storetest.ResealSegment:
		var from, to, first, n int
		if err := s.w.QueryRow(`SELECT seq_from, seq_to, first, n FROM segments WHERE id = ?`, rowKey(rk, d.Seq)).Scan(&from, &to, &first, &n); err != nil {
			t.Fatal(err)
		}
		bad := codec.NewSegment(rk, from, to, first, n, []byte{0xff, 0x01}) // a break code where a message starts
		execSQL(t, s, `UPDATE segments SET body = ?, sum = ? WHERE id = ?`, bad.Body, bad.Sum, rowKey(rk, d.Seq))
	default:
		t.Fatalf("damage %q", d.Kind)
	}
}

// flip inverts one byte of a blob column of the row where matches.
func flip(t *testing.T, s *SQLite, table, column, where string, at int) {
	t.Helper()
	var b []byte
	if err := s.w.QueryRow(`SELECT ` + column + ` FROM ` + table + ` WHERE ` + where).Scan(&b); err != nil {
		t.Fatal(err)
	}
	b[at%len(b)] ^= 0x20
	execSQL(t, s, `UPDATE `+table+` SET `+column+` = ? WHERE `+where, b)
}

// execSQL runs a statement on the write connection.
func execSQL(t *testing.T, s *SQLite, query string, args ...any) {
	t.Helper()
	if _, err := s.w.Exec(query, args...); err != nil {
		t.Fatal(err)
	}
}

// cacheStats is what the suite sees of a log cache's stats.
func cacheStats(st codec.LogCacheStats) storetest.CacheStats {
	return storetest.CacheStats{Runs: st.Runs, Bytes: st.Bytes, Budget: st.Budget, Hits: st.Hits, Misses: st.Misses, Evicts: st.Evicted}
}
