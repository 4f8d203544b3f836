package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// PostMessage queues a user message in the run's inbox (see store.Runs).
// It reads the run's row FOR UPDATE (with BEGIN, in one round trip), so
// that racing posts take the run's counter (inbox_n) in turn and a
// checkpoint, whose step insert reads the row FOR SHARE, either commits
// before the post reads the status or sees the message; then it numbers
// the message, stores it and turns a completed run running.
func (s *Postgres) PostMessage(ctx context.Context, runID, content string) (int, error) {
	var n int64
	var woke bool
	err := s.inTx(ctx, "", pgx.TxOptions{}, func(b *pgx.Batch) {
		b.Queue(`SELECT rk, status, inbox_n FROM runs WHERE id = $1 FOR UPDATE`, runID)
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		var rk int64
		var status string
		err := br.QueryRow().Scan(&rk, &status, &n)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		switch st := store.Status(status); st {
		case store.StatusFailed, store.StatusCancelled:
			return fmt.Errorf("%w (%s)", store.ErrEnded, st)
		}
		n++
		now := s.now().UnixNano()
		b := &pgx.Batch{}
		if woke = store.Status(status) == store.StatusCompleted; woke {
			// The run waits for its driver again, as after SetStatus
			// running; its answer stays the last turn's.
			b.Queue(`UPDATE runs SET inbox_n = $1, status = 'running', updated_ns = $2, retry_ns = 0, stall_attempts = 0 WHERE rk = $3`, n, now, rk)
		} else {
			b.Queue(`UPDATE runs SET inbox_n = $1 WHERE rk = $2`, n, rk)
		}
		b.Queue(`INSERT INTO inbox (rk, n, content, posted_ns, sum) VALUES ($1, $2, $3, $4, $5)`,
			rk, n, []byte(content), now, codec.InboxSum(rk, int(n), now, content))
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return 0, fmt.Errorf("run %s: post a message: %w", runID, err)
	}
	if woke {
		// The tail this store remembers says completed.
		s.cache.ForgetTail(runID)
	}
	return int(n), nil
}

// Inbox returns the run's posted messages not folded in yet, oldest first
// (see store.Runs).
func (s *Postgres) Inbox(ctx context.Context, runID string) ([]store.InboxMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT i.rk, i.n, i.content, i.posted_ns, i.sum FROM runs r JOIN inbox i ON i.rk = r.rk
		WHERE r.id = $1 ORDER BY i.n`, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: inbox: %w", runID, err)
	}
	defer rows.Close()
	var out []store.InboxMessage
	for rows.Next() {
		var rk, n, posted, sum int64
		var content []byte
		if err := rows.Scan(&rk, &n, &content, &posted, &sum); err != nil {
			return nil, fmt.Errorf("run %s: inbox: %w", runID, err)
		}
		m := store.InboxMessage{N: int(n), Content: string(content), Posted: fromNs(posted)}
		if codec.InboxSum(rk, m.N, posted, m.Content) != sum {
			return nil, fmt.Errorf("%w: run %s: inbox message %d fails its checksum", store.ErrCorrupt, runID, m.N)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run %s: inbox: %w", runID, err)
	}
	return out, nil
}
