package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// The writes of intents are fenced like SQLite's: a transaction reads the
// run's row FOR SHARE (with BEGIN, in one round trip), checks the lease and
// that the step exists, and writes; the row lock keeps an Acquire out until
// it commits.

// fencedStepSQL reads, with the run's row locked, what fencedStep checks.
const fencedStepSQL = `SELECT r.rk, r.status, r.lease_owner, r.lease_token,
	EXISTS (SELECT 1 FROM steps s WHERE s.rk = r.rk AND s.seq = $2) FROM runs r WHERE r.id = $1 FOR SHARE`

// fencedStep checks the result of fencedStepSQL: l is still the run's
// lease and step seq exists. It returns the run's key and status.
func fencedStep(row pgx.Row, l store.Lease, seq int) (int64, store.Status, error) {
	var rk, token int64
	var status, owner string
	var has bool
	err := row.Scan(&rk, &status, &owner, &token, &has)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", fmt.Errorf("run %s: %w", l.RunID, store.ErrNotFound)
	}
	if err != nil {
		return 0, "", err
	}
	if l.Owner == "" || owner != l.Owner || token != l.Token {
		return 0, "", store.LeaseLost(l, owner, token)
	}
	if seq >= 0 && !has {
		return 0, "", fmt.Errorf("step %d: %w", seq, store.ErrNotFound)
	}
	return rk, store.Status(status), nil
}

// fencedWrite runs fn in a transaction once fencedStep found l to be the
// run's lease and step seq stored (any step when seq < 0); what names the
// operation in errors.
func (s *Postgres) fencedWrite(ctx context.Context, what string, l store.Lease, seq int, fn func(tx pgx.Tx, rk int64, status store.Status) error) error {
	err := s.inTx(ctx, "", pgx.TxOptions{}, func(b *pgx.Batch) {
		b.Queue(fencedStepSQL, l.RunID, int64(max(seq, 0)))
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		rk, status, err := fencedStep(br.QueryRow(), l, seq)
		if err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		return fn(tx, rk, status)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// RecordIntent durably records that call is about to run for step seq of the
// run (the step whose action requested it, which must be stored), while l
// is the run's lease: a driver that lost its lease gets ErrLeaseLost and
// must not run the call. Recording the same call again is a no-op;
// recording it with another tool or arguments is store.ErrConflict.
func (s *Postgres) RecordIntent(ctx context.Context, l store.Lease, seq int, call core.ToolCall) error {
	runID := l.RunID
	if call.ID == "" {
		return fmt.Errorf("run %s step %d: record intent: call has no id", runID, seq)
	}
	args := nonNil(call.Args)
	what := fmt.Sprintf("run %s step %d: record intent %s", runID, seq, call.ID)
	return s.fencedWrite(ctx, what, l, seq, func(tx pgx.Tx, rk int64, _ store.Status) error {
		now := s.now().UnixNano()
		ct, err := tx.Exec(ctx, `INSERT INTO intents (rk, seq, call_id, tool, args, started_ns, sum) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (rk, seq, call_id) DO NOTHING`,
			rk, int64(seq), []byte(call.ID), []byte(call.Name), args, now, codec.IntentSum(rk, seq, call.ID, call.Name, args, now, nil, 0))
		if err != nil || ct.RowsAffected() == 1 {
			return err
		}
		var tool, have []byte
		if err := tx.QueryRow(ctx, `SELECT tool, args FROM intents WHERE rk = $1 AND seq = $2 AND call_id = $3`,
			rk, int64(seq), []byte(call.ID)).Scan(&tool, &have); err != nil {
			return err
		}
		if string(tool) != call.Name || !bytes.Equal(have, args) {
			return fmt.Errorf("%w: recorded as %s %s", store.ErrConflict, tool, have)
		}
		return nil
	})
}

// RecordOutcome records the outcome of a call whose intent was recorded
// (store.ErrNotFound otherwise), while l is the run's lease (ErrLeaseLost
// otherwise). Recording the same outcome again is a no-op; a different one
// is store.ErrConflict.
func (s *Postgres) RecordOutcome(ctx context.Context, l store.Lease, seq int, res core.ToolResult) error {
	runID := l.RunID
	enc, err := codec.EncodeIntentResult(res)
	if err != nil {
		return fmt.Errorf("run %s step %d: record outcome %s: %w", runID, seq, res.CallID, err)
	}
	what := fmt.Sprintf("run %s step %d: record outcome %s", runID, seq, res.CallID)
	return s.fencedWrite(ctx, what, l, seq, func(tx pgx.Tx, rk int64, _ store.Status) error {
		var ord, started int64
		var tool, args, have []byte
		err := tx.QueryRow(ctx, `SELECT ord, tool, args, started_ns, result FROM intents WHERE rk = $1 AND seq = $2 AND call_id = $3 FOR UPDATE`,
			rk, int64(seq), []byte(res.CallID)).Scan(&ord, &tool, &args, &started, &have)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("no intent: %w", store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if have != nil {
			if !bytes.Equal(have, enc) {
				return fmt.Errorf("%w: another outcome is recorded", store.ErrConflict)
			}
			return nil
		}
		now := s.now().UnixNano()
		_, err = tx.Exec(ctx, `UPDATE intents SET result = $1, completed_ns = $2, sum = $3 WHERE ord = $4`,
			enc, now, codec.IntentSum(rk, seq, res.CallID, string(tool), nonNil(args), started, enc, now), ord)
		return err
	})
}

// RetractIntent removes the intent of a call that has no outcome, while l
// is the run's lease: an operator established that the call did not run,
// so it runs when the run resumes. An intent with an outcome cannot be
// retracted (store.ErrConflict); no intent is store.ErrNotFound.
func (s *Postgres) RetractIntent(ctx context.Context, l store.Lease, seq int, callID string) error {
	what := fmt.Sprintf("run %s step %d: retract intent %s", l.RunID, seq, callID)
	return s.fencedWrite(ctx, what, l, seq, func(tx pgx.Tx, rk int64, _ store.Status) error {
		var done bool
		err := tx.QueryRow(ctx, `SELECT result IS NOT NULL FROM intents WHERE rk = $1 AND seq = $2 AND call_id = $3 FOR UPDATE`,
			rk, int64(seq), []byte(callID)).Scan(&done)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("no intent: %w", store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if done {
			return fmt.Errorf("%w: the call has an outcome", store.ErrConflict)
		}
		_, err = tx.Exec(ctx, `DELETE FROM intents WHERE rk = $1 AND seq = $2 AND call_id = $3`, rk, int64(seq), []byte(callID))
		return err
	})
}

// Intents returns the intents recorded for step seq of the run, in the order
// they were recorded: the step's existence and its intents are read in one
// round trip.
func (s *Postgres) Intents(ctx context.Context, runID string, seq int) ([]store.Intent, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT r.rk, EXISTS (SELECT 1 FROM steps s WHERE s.rk = r.rk AND s.seq = $2) FROM runs r WHERE r.id = $1`, runID, int64(seq))
	b.Queue(`SELECT i.call_id, i.tool, i.args, i.started_ns, i.result, i.completed_ns, i.sum FROM intents i JOIN runs r ON r.rk = i.rk
		WHERE r.id = $1 AND i.seq = $2 ORDER BY i.ord`, runID, int64(seq))
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	var rk int64
	var has bool
	err := br.QueryRow().Scan(&rk, &has)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("run %s step %d: intents: run %s: %w", runID, seq, runID, store.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("run %s step %d: intents: %w", runID, seq, err)
	case !has:
		return nil, fmt.Errorf("run %s step %d: intents: step %d: %w", runID, seq, seq, store.ErrNotFound)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("run %s step %d: intents: %w", runID, seq, err)
	}
	defer rows.Close()
	var out []store.Intent
	for rows.Next() {
		var in store.Intent
		var started, completed, sum int64
		var callID, tool, result []byte
		if err := rows.Scan(&callID, &tool, &in.Args, &started, &result, &completed, &sum); err != nil {
			return nil, fmt.Errorf("run %s step %d: intents: %w", runID, seq, err)
		}
		in.CallID, in.Tool, in.Args = string(callID), string(tool), nonNil(in.Args)
		if codec.IntentSum(rk, seq, in.CallID, in.Tool, in.Args, started, result, completed) != sum {
			return nil, fmt.Errorf("%w: run %s step %d: intent %s fails its checksum", store.ErrCorrupt, runID, seq, in.CallID)
		}
		in.State, in.Started = store.IntentStarted, fromNs(started)
		if result != nil {
			r, err := codec.DecodeIntentResult(result)
			if err != nil {
				return nil, fmt.Errorf("run %s step %d: intent %s: %w: %w: %v", runID, seq, in.CallID, store.ErrCorrupt, core.ErrCorrupt, err)
			}
			in.State, in.Result, in.Completed = store.IntentCompleted, &r, fromNs(completed)
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run %s step %d: intents: %w", runID, seq, err)
	}
	return out, nil
}
