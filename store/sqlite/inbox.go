package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// PostMessage queues a user message in the run's inbox (see store.Runs):
// one write, synced under SyncCritical like every write that carries a
// promise, that numbers the message from the run's counter (inbox_n) and
// turns a completed run running.
func (s *SQLite) PostMessage(ctx context.Context, runID, content string) (int, error) {
	var n int
	var woke bool
	err := s.write(ctx, "run "+runID+": post a message", func(tx *wtx) error {
		var rk int64
		var status string
		err := tx.QueryRowContext(ctx, `SELECT rk, status FROM runs WHERE id = ?`, runID).Scan(&rk, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		switch st := store.Status(status); st {
		case store.StatusFailed, store.StatusCancelled:
			return fmt.Errorf("%w (%s)", store.ErrEnded, st)
		}
		now := s.now().UnixNano()
		if err := tx.QueryRowContext(ctx, `UPDATE runs SET inbox_n = inbox_n + 1 WHERE rk = ? RETURNING inbox_n`, rk).Scan(&n); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO inbox (rk, n, content, posted_ns, sum) VALUES (?, ?, ?, ?, ?)`,
			rk, n, content, now, codec.InboxSum(rk, n, now, content)); err != nil {
			return err
		}
		if woke = store.Status(status) == store.StatusCompleted; woke {
			// The run waits for its driver again, as after SetStatus
			// running; its answer stays the last turn's.
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = 'running', updated_ns = ?, retry_ns = 0, stall_attempts = 0 WHERE rk = ?`, now, rk)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	if woke {
		// The tail this store remembers says completed.
		s.cache.ForgetTail(runID)
	}
	return n, nil
}

// Inbox returns the run's posted messages not folded in yet, oldest first
// (see store.Runs).
func (s *SQLite) Inbox(ctx context.Context, runID string) ([]store.InboxMessage, error) {
	// The run's key, when this store remembers the run's tail (a run it
	// drives), spares the lookup of the run by id: the inbox's pages
	// alone are read. A run's key never changes.
	var rows *sql.Rows
	var err error
	if t, ok := s.cache.Tail(runID); ok {
		rows, err = s.r.QueryContext(ctx, `SELECT rk, n, content, posted_ns, sum FROM inbox WHERE rk = ? ORDER BY n`, t.RK)
	} else {
		rows, err = s.r.QueryContext(ctx, `SELECT i.rk, i.n, i.content, i.posted_ns, i.sum FROM runs r JOIN inbox i ON i.rk = r.rk
		WHERE r.id = ? ORDER BY i.n`, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: inbox: %w", runID, err)
	}
	defer rows.Close()
	var out []store.InboxMessage
	for rows.Next() {
		var m store.InboxMessage
		var rk, posted, sum int64
		if err := rows.Scan(&rk, &m.N, &m.Content, &posted, &sum); err != nil {
			return nil, fmt.Errorf("run %s: inbox: %w", runID, err)
		}
		if codec.InboxSum(rk, m.N, posted, m.Content) != sum {
			return nil, fmt.Errorf("%w: run %s: inbox message %d fails its checksum", store.ErrCorrupt, runID, m.N)
		}
		m.Posted = fromNs(posted)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run %s: inbox: %w", runID, err)
	}
	return out, nil
}

// deliver removes message n from run rk's inbox inside tx, for the step
// that folds it in: it must be the oldest waiting (ErrConflict otherwise).
func deliver(ctx context.Context, tx dbtx, rk int64, n int) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM inbox WHERE rk = ?1 AND n = ?2 AND n = (SELECT min(n) FROM inbox WHERE rk = ?1)`, rk, n)
	if err != nil {
		return fmt.Errorf("deliver message %d: %w", n, err)
	}
	k, err := res.RowsAffected()
	switch {
	case err != nil:
		return fmt.Errorf("deliver message %d: %w", n, err)
	case k != 1:
		return fmt.Errorf("deliver message %d: %w: it is not the oldest message waiting in the inbox", n, store.ErrConflict)
	}
	return nil
}

// waiting reports whether run rk's inbox holds a message.
func waiting(ctx context.Context, tx dbtx, rk int64) (bool, error) {
	var any bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM inbox WHERE rk = ?)`, rk).Scan(&any); err != nil {
		return false, fmt.Errorf("read inbox: %w", err)
	}
	return any, nil
}
