package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// inTransaction reports whether the write connection has a transaction
// open.
func inTransaction(t *testing.T, s *SQLite) bool {
	t.Helper()
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	open := false
	if err := conn.Raw(func(dc any) error {
		open = !dc.(*sqlite3.SQLiteConn).AutoCommit()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return open
}

func TestWriteRollsBack(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	st := newRun(t, s, "r1")
	boom := errors.New("boom")
	err := s.write(ctx, "test", func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET reason = 'changed' WHERE id = 'r1'`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("write: %v, want boom", err)
	}
	if inTransaction(t, s) {
		t.Fatal("the write connection was left inside a transaction")
	}
	var reason string
	if err := s.r.QueryRow(`SELECT reason FROM runs WHERE id = 'r1'`).Scan(&reason); err != nil || reason != "" {
		t.Fatalf("reason %q, %v: the failed write was not rolled back", reason, err)
	}
	// The connection still takes checkpoints.
	cp, _ := turnStep(st.Messages, 1, 10)
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), cp); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint waiting for another process's write lock, whose caller
// gives up meanwhile, writes nothing once the lock is free.
func TestCheckpointCancelledWhileWaitingForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	s, err := Open(path, &Options{Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := newRun(t, s, "r1")
	l := leaseOf(t, s, "r1")
	other, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hold, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if _, err := hold.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cp, _ := turnStep(st.Messages, 1, 10)
	go func() { done <- s.Checkpoint(ctx, l, cp) }()
	time.Sleep(100 * time.Millisecond) // the checkpoint waits in BEGIN
	select {
	case err := <-done:
		t.Fatalf("the checkpoint did not wait for the lock: %v", err)
	default:
	}
	cancel()
	if _, err := hold.ExecContext(context.Background(), `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("checkpoint cancelled while waiting: %v", err)
	}
	if info, err := s.Run(context.Background(), "r1"); err != nil || info.LastSeq != 0 {
		t.Fatalf("after it: %+v, %v", info, err)
	}
	if inTransaction(t, s) {
		t.Fatal("the write connection was left inside a transaction")
	}
}

// A connection database/sql throws away (a broken one) is replaced, and the
// hot statements are prepared again on the new one.
func TestWriteAfterConnectionReplaced(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	log := newRun(t, s, "r1").Messages
	var cp store.Checkpoint
	var prev *sqlite3.SQLiteConn
	for seq := 1; seq <= 4; seq++ {
		cp, log = turnStep(log, seq, 10)
		if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), cp); err != nil {
			t.Fatalf("step %d: %v", seq, err)
		}
		if s.hot.h == nil || s.hot.h.conn == prev {
			t.Fatalf("step %d did not run on a new connection", seq)
		}
		prev = s.hot.h.conn
		// Throw the connection away; the next step gets a new one.
		conn, err := s.w.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	}
	rec, err := s.LoadLatest(ctx, "r1")
	if err != nil || rec.Seq != 4 || len(rec.State.Messages) != len(log) {
		t.Fatalf("latest: step %d, %d messages (want 4, %d): %v", rec.Seq, len(rec.State.Messages), len(log), err)
	}
}

// The schema's foreign keys are not enforced (see Open); every write path
// must keep them by construction. This exercises each one and then asks
// SQLite to check them all.
func TestForeignKeysHold(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	log := newRun(t, s, "r").Messages
	for seq := 1; seq <= 2*codec.SegmentSteps+3; seq++ { // closes two segments
		var cp store.Checkpoint
		cp, log = turnStep(log, seq, 50)
		if err := s.Checkpoint(ctx, leaseOf(t, s, "r"), cp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordIntent(ctx, leaseOf(t, s, "r"), 7, core.ToolCall{ID: "c7", Name: "search", Args: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordOutcome(ctx, leaseOf(t, s, "r"), 7, core.ToolResult{CallID: "c7", Output: "found"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(ctx, store.NewRun{ID: "fork", Agent: "agent", ParentID: "r", ParentStep: 70, Initial: baseState("q", log[:4])}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MemoryCreate(ctx, "ns", []core.Entity{{Name: "Alice", Observations: []string{"engineer"}}, {Name: "Acme"}},
		[]core.Relation{{From: "Alice", To: "Acme", Type: "works_at"}, {From: "Alice", To: "Bob", Type: "knows"}}); err != nil {
		t.Fatal(err)
	}
	var exported bytes.Buffer
	if err := s.Export(ctx, "r", &exported); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportAs(ctx, &exported, "copy"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(ctx, leaseOf(t, s, "r"), store.StatusChange{Status: store.StatusInterrupted, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.r.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, parent string
		var rowid, fkid any
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			t.Fatal(err)
		}
		t.Errorf("%s row %v refers to a missing %s row", table, rowid, parent)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var steps, segments, intents, relations int
	if err := s.r.QueryRow(`SELECT (SELECT count(*) FROM steps), (SELECT count(*) FROM segments), (SELECT count(*) FROM intents), (SELECT count(*) FROM mem_relations)`).
		Scan(&steps, &segments, &intents, &relations); err != nil {
		t.Fatal(err)
	}
	if steps < 2*(2*codec.SegmentSteps+4) || segments < 4 || intents != 2 || relations != 2 {
		t.Fatalf("the paths were not all exercised: %d steps, %d segments, %d intents, %d relations", steps, segments, intents, relations)
	}
}
