package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Checkpoint appends a step to a run in one transaction (see store.Runs):
// the step row and, when the action changes it, the run's status, a
// segment every codec.SegmentSteps steps, and a tool list this store does
// not hold yet.
func (s *SQLite) Checkpoint(ctx context.Context, l store.Lease, cp store.Checkpoint) error {
	_, err := s.CheckpointStatus(ctx, l, cp)
	return err
}

// CheckpointStatus is Checkpoint, returning the status the step left the
// run in (see store.Runs).
func (s *SQLite) CheckpointStatus(ctx context.Context, l store.Lease, cp store.Checkpoint) (store.Status, error) {
	runID := l.RunID
	if err := codec.CheckCheckpoint(cp); err != nil {
		return "", fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	// A checkpoint, once its transaction began, runs to its end, as
	// every write does (wtx); a caller that gave up before, or while it
	// waited for the write lock, writes nothing.
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	status := store.StatusOf(cp.Action)
	var after codec.Tail
	var open *codec.OpenSegment
	var err error
	t, ok := s.cache.Tail(runID)
	if ok && t.Seq == cp.Seq-1 && t.Status == status && !status.Ended() && !codec.ClosesSegment(cp.Seq) && !codec.TakesTurn(cp) {
		// The common checkpoint: this store wrote the step before, the
		// status stays, no segment closes, no user message (which counts
		// a turn, and may be delivered from the inbox). It is one
		// insert, at the driver level, committed alone or with the
		// writes that arrive meanwhile (batch.go); the row is built
		// before. A model call whose tool list this store does not hold
		// yet takes the general path.
		r := getWriteReq()
		var spare []byte
		r.row, spare, err = codec.Build(r.buf, r.spare, t, cp, s.now().UnixNano(), &s.tools)
		r.spare = spare
		switch {
		case err != nil:
		case r.row.NewTools != nil:
			// The status stays: a step like the common one.
			err = s.writeLight(ctx, "", func(tx *wtx) error {
				after, open, err = s.appendStep(ctx, tx, l, cp, status)
				return err
			})
		default:
			r.ctx, r.rk, r.lease = ctx, t.RK, l
			s.commit(r)
			switch {
			case r.err != nil:
				err = r.err
			case !r.fenced:
				err = lostOrMissing(ctx, s.r, l)
			default:
				after, open = r.row.Tail(t.RK, status), s.cache.OpenSegment(t.RK).Extend(&r.row, t.MsgCount)
			}
		}
		putWriteReq(r)
	} else {
		// A step that leaves a running run running (one that closes a
		// segment) is light; one that changes the status (a pause, a
		// stall, an end) or follows an unknown tail is synced.
		light := ok && t.Status == status && !status.Ended()
		err = s.writeAs(ctx, "", light, func(tx *wtx) error {
			after, open, err = s.appendStep(ctx, tx, l, cp, status)
			return err
		})
	}
	if err != nil {
		s.cache.ForgetTail(runID)
		return "", fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	s.cache.SetOpenSegment(after.RK, open)
	s.cache.SetTail(runID, after)
	return after.Status, nil
}

// appendStep writes cp to the run inside tx, reading the run's last step
// unless this store wrote it. It returns the run's tail and its open
// segment after the step, to remember once tx commits.
func (s *SQLite) appendStep(ctx context.Context, tx *wtx, l store.Lease, cp store.Checkpoint, status store.Status) (after codec.Tail, open *codec.OpenSegment, err error) {
	runID := l.RunID
	t, ok := s.cache.Tail(runID)
	if !ok || t.Seq != cp.Seq-1 {
		var owner string
		var token int64
		if t, owner, token, err = s.lastStep(ctx, tx, runID); err != nil {
			return after, nil, err
		}
		// The lease first: a driver that lost the run learns that, not
		// that its step is out of order.
		if owner != l.Owner || token != l.Token || l.Owner == "" {
			return after, nil, store.LeaseLost(l, owner, token)
		}
	}
	if err := codec.Ended(t.Status, t.Seq, cp); err != nil {
		return after, nil, err
	}
	if cp.Seq != t.Seq+1 {
		return after, nil, fmt.Errorf("%w: seq %d, want %d", store.ErrSeq, cp.Seq, t.Seq+1)
	}
	buf, spare := s.scratch()
	row, spare, err := codec.Build(buf, spare, t, cp, s.now().UnixNano(), &s.tools)
	defer s.keepScratch(row.Buf, spare)
	if err != nil {
		return after, nil, err
	}
	if row.NewTools != nil {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO tool_lists (digest, body) VALUES (?, ?)`, row.Tools, row.NewTools); err != nil {
			return after, nil, fmt.Errorf("insert tool list: %w", err)
		}
		tx.onCommit(func() { s.tools.Stored(row.Tools) })
	}
	if err := tx.insertFenced(ctx, &row, t.RK, l); err != nil {
		return after, nil, insertStepErr(err)
	}
	if cp.Delivered > 0 {
		if err := deliver(ctx, tx, t.RK, cp.Delivered); err != nil {
			return after, nil, err
		}
	}
	if status == store.StatusCompleted {
		// A message posted meanwhile is not left on a completed run:
		// the run stays running, for its driver to take it.
		wait, err := waiting(ctx, tx, t.RK)
		if err != nil {
			return after, nil, err
		}
		if wait {
			status = store.StatusRunning
		}
	}
	// A user message begins a turn: it updates the run as a change of
	// status does, whether or not the status changes; so does an answer
	// a waiting message keeps running (its answer is the run's).
	if turn := codec.TakesTurn(cp); store.StatusOf(cp.Action) != t.Status || turn {
		var answer, reason string
		var code core.FailCode
		switch a := cp.Action.(type) {
		case core.Complete:
			answer = a.Answer
		case core.Fail:
			code, reason = a.Code, a.Reason
		}
		var turns int
		if turn {
			turns = 1
		}
		// A step that ends the run gives its lease up with it, when
		// asked (store.Checkpoint.Release); the step's fenced insert
		// above checked the lease.
		release := cp.Release && status.Ended()
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, updated_ns = ?, answer = ?, fail_code = ?, reason = ?, retry_ns = 0, stall_attempts = 0,
			turns = turns + ?, lease_owner = CASE WHEN ? THEN '' ELSE lease_owner END, lease_expires_ns = CASE WHEN ? THEN 0 ELSE lease_expires_ns END
			WHERE rk = ?`,
			string(status), row.Created, answer, string(code), reason, turns, release, release, t.RK); err != nil {
			return after, nil, fmt.Errorf("update run: %w", err)
		}
	}
	open = s.cache.OpenSegment(t.RK).Extend(&row, t.MsgCount)
	if codec.ClosesSegment(row.Seq) {
		if err := closeSegment(ctx, tx, runID, t.RK, &row, open); err != nil {
			return after, nil, fmt.Errorf("write segment: %w", err)
		}
		if open != nil {
			open = open.WrittenOut()
		}
	}
	return row.Tail(t.RK, status), open, nil
}

// lastStepSQL reads a run's key, status and last step. Scalar subqueries
// rather than a join: through go-sqlite3 this form runs several times faster
// (BenchmarkAppendStep).
const lastStepSQL = `SELECT (SELECT rk FROM runs WHERE id = ?1), (SELECT status FROM runs WHERE id = ?1),
	(SELECT lease_owner FROM runs WHERE id = ?1), (SELECT lease_token FROM runs WHERE id = ?1), ` + stepColumns + `
	FROM steps s WHERE s.id = (SELECT max(id) FROM steps
		WHERE id BETWEEN (SELECT rk FROM runs WHERE id = ?1) << 32 AND ((SELECT rk FROM runs WHERE id = ?1) << 32) + 4294967295)`

// lastStep reads and verifies the run's last step inside tx, without
// copying its body (read in place to check the checksum), and returns the
// run's tail and its lease's holder and token.
func (s *SQLite) lastStep(ctx context.Context, tx dbtx, runID string) (t codec.Tail, owner string, token int64, err error) {
	rows, err := tx.QueryContext(ctx, lastStepSQL, runID)
	if err != nil {
		return t, "", 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return t, "", 0, err
		}
		return t, "", 0, s.missing(ctx, tx, runID)
	}
	var rk sql.NullInt64
	var status string
	var body sql.RawBytes
	var seq, count int64
	var last codec.Row
	if err := rows.Scan(&rk, &status, &owner, &token, &seq, &last.Created, &count, &last.MsgSum, &body, &last.Sum); err != nil {
		return t, "", 0, err
	}
	last.Seq, last.MsgCount, last.Body = int(seq), int(count), body
	if err := last.Verify(runID, rk.Int64); err != nil {
		return t, "", 0, err
	}
	return last.Tail(rk.Int64, store.Status(status)), owner, token, nil
}

// missing explains why a run has no last step: it does not exist, or (a
// corrupt database) it has no steps.
func (s *SQLite) missing(ctx context.Context, q querier, runID string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, runID).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("run %s: %w", runID, err)
	}
	return fmt.Errorf("%w: run %s has no steps", store.ErrCorrupt, runID)
}
