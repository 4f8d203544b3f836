package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

func TestMigrationsNumbered(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, schema version %d", len(ms), SchemaVersion())
	}
}

func TestMigrateFresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	for i := 0; i < 2; i++ { // the second open finds nothing to do
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n, max int
		if err := s.r.QueryRow(`SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		if n != SchemaVersion() || max != SchemaVersion() {
			t.Fatalf("open %d: %d migrations recorded, max %d; want %d", i, n, max, SchemaVersion())
		}
		var mode string
		s.r.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
		var fk int
		s.w.QueryRow(`PRAGMA foreign_keys`).Scan(&fk)
		if mode != "wal" || fk != 0 { // declared, kept by construction (TestForeignKeysHold)
			t.Fatalf("journal mode %s, foreign keys %d", mode, fk)
		}
		s.Close()
	}
}

func TestMigrateNewer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`INSERT INTO schema_migrations (version, name, applied_ns) VALUES (?, 'future.sql', 0)`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(path, nil)
	if !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("open a newer database: %v", err)
	}
}

func TestOpenOptions(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "x.db"), &Options{Sync: "OFF"}); err == nil {
		t.Error("sync OFF accepted")
	}
	if _, err := Open(":memory:", nil); err == nil {
		t.Error(":memory: accepted")
	}
	s, err := Open(filepath.Join(dir, "odd ?#% name.db"), &Options{Sync: SyncFull})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var sync int
	s.w.QueryRow(`PRAGMA synchronous`).Scan(&sync)
	if sync != 2 {
		t.Fatalf("synchronous = %d, want 2 (FULL)", sync)
	}
	if filepath.Base(s.Path()) != "odd ?#% name.db" {
		t.Fatalf("path %s", s.Path())
	}
}

// TestMigrateCompactSteps: a database of schema version 2 (a step row of
// four blobs, a model call's tools in every model step, plain segments)
// opens at the current version with every step loading back as it was
// checkpointed, the tool lists moved out, and a corrupt old row refused.
func TestMigrateCompactSteps(t *testing.T) {
	for _, corrupt := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "v2.db")
		migrateUpTo = 2
		old, err := Open(path, nil)
		migrateUpTo = 0
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		tools := []core.Tool{{Name: "search", Description: "search the web", Parameters: []byte(`{"type":"object"}`)}}
		log := synthInitial("r").Messages
		states := []core.State{baseState("q", log)}
		var actions []core.Action
		var results []core.Result
		if _, err := old.w.Exec(`INSERT INTO runs (rk, id, agent, config_hash, config, input, status, created_ns, updated_ns) VALUES (1, 'r', 'a', '', x'', 'q', 'running', 1, 1)`); err != nil {
			t.Fatal(err)
		}
		var segBody []byte
		insert := func(seq int, a core.Action, r core.Result, st core.State, before int) {
			var action, result []byte
			if a != nil {
				action, _ = core.EncodeAction(a)
			}
			if r != nil {
				result, _ = core.EncodeResult(r)
			}
			head, _ := codec.EncodeHead(nil, st)
			msgs, sum := codec.EncodeMessages(nil, st.Messages[before:])
			if len(st.Messages) == before {
				msgs, sum = nil, 0
				if before > 0 {
					sum = codec.MessageSum(core.AppendMessage(nil, st.Messages[before-1]))
				}
			}
			segBody = append(segBody, msgs...)
			rowSum := codec.LegacyStepSum(1, seq, int64(seq), len(st.Messages), sum, action, result, head, msgs)
			if corrupt && seq == 5 {
				rowSum++
			}
			if _, err := old.w.Exec(`INSERT INTO steps (id, rk, seq, created_ns, msg_count, msg_sum, action, result, head, msgs, sum) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				rowKey(1, seq), seq, seq, len(st.Messages), sum, action, result, head, msgs, rowSum); err != nil {
				t.Fatal(err)
			}
		}
		insert(0, nil, nil, states[0], 0)
		for seq := 1; seq < codec.SegmentSteps; seq++ {
			before := len(log)
			cp, next := turnStep(log, seq, 80)
			a := cp.Action
			if m, ok := a.(core.RequestModelCall); ok {
				m.Tools = tools
				a = m
			}
			insert(seq, a, cp.Result, a.Next(), before)
			log = next
			actions, results, states = append(actions, a), append(results, cp.Result), append(states, a.Next())
		}
		if _, err := old.w.Exec(`INSERT INTO segments (id, rk, seq_from, seq_to, first, n, body, sum) VALUES (?, 1, 0, ?, 0, ?, ?, ?)`,
			rowKey(1, 0), codec.SegmentSteps-1, len(log), segBody, codec.SegmentSum(1, 0, codec.SegmentSteps-1, 0, len(log), segBody)); err != nil {
			t.Fatal(err)
		}
		old.Close()
		s, err := Open(path, nil)
		if corrupt {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("a corrupt old row: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var lists int
		s.r.QueryRow(`SELECT count(*) FROM tool_lists`).Scan(&lists)
		if lists != 1 {
			t.Fatalf("%d tool lists after the migration, want 1", lists)
		}
		n := 0
		err = s.Steps(ctx, "r", func(rec store.StepRecord) error {
			if rec.Seq > 0 {
				sameStep(t, rec, rec.Seq, states[rec.Seq], actions[rec.Seq-1], results[rec.Seq-1])
			}
			n++
			return nil
		})
		if err != nil || n != codec.SegmentSteps {
			t.Fatalf("%d steps after the migration: %v", n, err)
		}
		last, err := s.LoadLatest(ctx, "r")
		if err != nil || len(last.State.Messages) != len(log) {
			t.Fatalf("latest after the migration: %v", err)
		}
	}
}

// TestMigrateInbox: a run stored before runs were conversations opens
// with one turn and an empty inbox, and takes messages.
func TestMigrateInbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v9.db")
	migrateUpTo = 9
	old, err := Open(path, nil)
	migrateUpTo = 0
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.w.Exec(`INSERT INTO runs (rk, id, agent, config_hash, config, input, status, created_ns, updated_ns) VALUES (1, 'r', 'a', '', x'', 'q', 'completed', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	step, err := codec.Initial(synthInitial("r"), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.w.Exec(`INSERT INTO steps (id, rk, seq, created_ns, msg_count, msg_sum, body, sum) VALUES (?, 1, 0, ?, ?, ?, ?, ?)`,
		rowKey(1, 0), step.Created, step.MsgCount, step.MsgSum, step.Body, codec.StepSum(1, &step)); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if ri, err := s.Run(ctx, "r"); err != nil || ri.Turns != 1 {
		t.Fatalf("a run from before the migration: %+v %v", ri, err)
	}
	if n, err := s.PostMessage(ctx, "r", "and now?"); err != nil || n != 1 {
		t.Fatalf("a message to it: %d %v", n, err)
	}
	if ri, err := s.Run(ctx, "r"); err != nil || ri.Status != store.StatusRunning {
		t.Fatalf("after the message: %+v %v", ri, err)
	}
}
