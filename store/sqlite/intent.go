package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// RecordIntent durably records that call is about to run for step seq of the
// run (the step whose action requested it, which must be stored), while l
// is the run's lease: a driver that lost its lease gets ErrLeaseLost and
// must not run the call. Recording the same call again is a no-op;
// recording it with another tool or arguments is store.ErrConflict.
func (s *SQLite) RecordIntent(ctx context.Context, l store.Lease, seq int, call core.ToolCall) error {
	runID := l.RunID
	if call.ID == "" {
		return fmt.Errorf("run %s step %d: record intent: call has no id", runID, seq)
	}
	args := call.Args
	if args == nil {
		args = []byte{}
	}
	return s.write(ctx, fmt.Sprintf("run %s step %d: record intent %s", runID, seq, call.ID), func(tx *wtx) error {
		rk, err := fencedStep(ctx, tx, l, seq)
		if err != nil {
			return err
		}
		var tool string
		var have []byte
		err = tx.QueryRowContext(ctx, `SELECT tool, args FROM intents WHERE rk = ? AND seq = ? AND call_id = ?`, rk, seq, call.ID).Scan(&tool, &have)
		if err == nil {
			if tool != call.Name || !bytes.Equal(have, args) {
				return fmt.Errorf("%w: recorded as %s %s", store.ErrConflict, tool, have)
			}
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		now := s.now().UnixNano()
		_, err = tx.ExecContext(ctx, `INSERT INTO intents (rk, seq, call_id, tool, args, started_ns, sum) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			rk, seq, call.ID, call.Name, args, now, codec.IntentSum(rk, seq, call.ID, call.Name, args, now, nil, 0))
		return err
	})
}

// RecordOutcome records the outcome of a call whose intent was recorded
// (store.ErrNotFound otherwise), while l is the run's lease (ErrLeaseLost
// otherwise). Recording the same outcome again is a no-op; a different one
// is store.ErrConflict.
func (s *SQLite) RecordOutcome(ctx context.Context, l store.Lease, seq int, res core.ToolResult) error {
	runID := l.RunID
	enc, err := codec.EncodeIntentResult(res)
	if err != nil {
		return fmt.Errorf("run %s step %d: record outcome %s: %w", runID, seq, res.CallID, err)
	}
	return s.write(ctx, fmt.Sprintf("run %s step %d: record outcome %s", runID, seq, res.CallID), func(tx *wtx) error {
		rk, err := fencedStep(ctx, tx, l, seq)
		if err != nil {
			return err
		}
		var ord, started int64
		var tool string
		var args, have []byte
		err = tx.QueryRowContext(ctx, `SELECT ord, tool, args, started_ns, result FROM intents WHERE rk = ? AND seq = ? AND call_id = ?`,
			rk, seq, res.CallID).Scan(&ord, &tool, &args, &started, &have)
		if errors.Is(err, sql.ErrNoRows) {
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
		if args == nil {
			args = []byte{}
		}
		now := s.now().UnixNano()
		_, err = tx.ExecContext(ctx, `UPDATE intents SET result = ?, completed_ns = ?, sum = ? WHERE ord = ?`,
			enc, now, codec.IntentSum(rk, seq, res.CallID, tool, args, started, enc, now), ord)
		return err
	})
}

// RetractIntent removes the intent of a call that has no outcome, while l
// is the run's lease: an operator established that the call did not run,
// so it runs when the run resumes. An intent with an outcome cannot be
// retracted (store.ErrConflict); no intent is store.ErrNotFound.
func (s *SQLite) RetractIntent(ctx context.Context, l store.Lease, seq int, callID string) error {
	return s.write(ctx, fmt.Sprintf("run %s step %d: retract intent %s", l.RunID, seq, callID), func(tx *wtx) error {
		rk, err := fencedStep(ctx, tx, l, seq)
		if err != nil {
			return err
		}
		var done int
		err = tx.QueryRowContext(ctx, `SELECT result IS NOT NULL FROM intents WHERE rk = ? AND seq = ? AND call_id = ?`, rk, seq, callID).Scan(&done)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no intent: %w", store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if done != 0 {
			return fmt.Errorf("%w: the call has an outcome", store.ErrConflict)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM intents WHERE rk = ? AND seq = ? AND call_id = ?`, rk, seq, callID)
		return err
	})
}

// Intents returns the intents recorded for step seq of the run, in the order
// they were recorded.
func (s *SQLite) Intents(ctx context.Context, runID string, seq int) ([]store.Intent, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("run %s step %d: intents: %w", runID, seq, err)
	}
	defer rollback(tx)
	rk, err := stepKey(ctx, tx, runID, seq)
	if err != nil {
		return nil, fmt.Errorf("run %s step %d: intents: %w", runID, seq, err)
	}
	return readIntents(ctx, tx, runID, rk, seq)
}

func readIntents(ctx context.Context, tx querier, runID string, rk int64, seq int) ([]store.Intent, error) {
	rows, err := tx.QueryContext(ctx, `SELECT call_id, tool, args, started_ns, result, completed_ns, sum FROM intents
		WHERE rk = ? AND seq = ? ORDER BY ord`, rk, seq)
	if err != nil {
		return nil, fmt.Errorf("run %s step %d: intents: %w", runID, seq, err)
	}
	defer rows.Close()
	var out []store.Intent
	for rows.Next() {
		var in store.Intent
		var started, completed, sum int64
		var result []byte
		if err := rows.Scan(&in.CallID, &in.Tool, &in.Args, &started, &result, &completed, &sum); err != nil {
			return nil, fmt.Errorf("run %s step %d: intents: %w", runID, seq, err)
		}
		if in.Args == nil {
			in.Args = []byte{}
		}
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

// fencedStep checks that l is the run's lease and that step seq exists, and
// returns the run's key.
func fencedStep(ctx context.Context, tx querier, l store.Lease, seq int) (int64, error) {
	rk, _, err := fence(ctx, tx, l)
	if err != nil {
		return 0, err
	}
	var has int
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM steps WHERE id = ?)`, rowKey(rk, seq)).Scan(&has); err != nil {
		return 0, err
	}
	if has == 0 {
		return 0, fmt.Errorf("step %d: %w", seq, store.ErrNotFound)
	}
	return rk, nil
}

// stepKey returns the run's internal key after checking that step seq exists.
func stepKey(ctx context.Context, tx querier, runID string, seq int) (int64, error) {
	var rk int64
	var has int
	err := tx.QueryRowContext(ctx, `SELECT r.rk, EXISTS (SELECT 1 FROM steps s WHERE s.id = (r.rk << 32) + ?) FROM runs r WHERE r.id = ?`,
		seq, runID).Scan(&rk, &has)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	if has == 0 {
		return 0, fmt.Errorf("step %d: %w", seq, store.ErrNotFound)
	}
	return rk, nil
}
