package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/core"
)

// StepRecord is one stored step.
type StepRecord struct {
	Seq int
	// Action is the step's decision; nil for step 0. Its Next() is State.
	Action core.Action
	// Result is the outcome of the previous step's action that led here;
	// nil when there is none.
	Result core.Result
	// State is the state at this step, exactly as it was checkpointed: its
	// core.EncodeState bytes equal those of the state saved.
	State   core.State
	Created time.Time // UTC
}

// LoadLatest returns the run's last step.
func (s *SQLite) LoadLatest(ctx context.Context, runID string) (StepRecord, error) {
	return s.loadStep(ctx, runID, -1)
}

// LoadStep returns step seq of the run, or ErrNotFound.
func (s *SQLite) LoadStep(ctx context.Context, runID string, seq int) (StepRecord, error) {
	if seq < 0 {
		return StepRecord{}, fmt.Errorf("run %s step %d: %w", runID, seq, ErrNotFound)
	}
	return s.loadStep(ctx, runID, seq)
}

// loadStep loads step seq, or the last step when seq is -1, from one
// snapshot.
func (s *SQLite) loadStep(ctx context.Context, runID string, seq int) (StepRecord, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return StepRecord{}, fmt.Errorf("run %s: load: %w", runID, err)
	}
	defer rollback(tx)
	var rk int64
	var row stepRow
	if seq < 0 {
		err = scanStep(tx.QueryRowContext(ctx, `SELECT r.rk, `+stepColumns+` FROM runs r JOIN steps s ON s.id = `+lastStepID+`
			WHERE r.id = ?`, runID), &row, &rk)
	} else {
		err = scanStep(tx.QueryRowContext(ctx, `SELECT r.rk, `+stepColumns+` FROM runs r JOIN steps s ON s.id = (r.rk << 32) + ?2
			WHERE r.id = ?1`, runID, seq), &row, &rk)
	}
	if errors.Is(err, sql.ErrNoRows) {
		err := s.missing(ctx, tx, runID)
		if seq >= 0 && errors.Is(err, ErrCorrupt) { // the run exists, without that step
			err = fmt.Errorf("run %s step %d: %w", runID, seq, ErrNotFound)
		}
		return StepRecord{}, err
	}
	if err != nil {
		return StepRecord{}, fmt.Errorf("run %s: load: %w", runID, err)
	}
	if err := row.verify(runID, rk); err != nil {
		return StepRecord{}, err
	}
	log, err := loadLog(ctx, tx, runID, rk, &row)
	if err != nil {
		return StepRecord{}, err
	}
	return row.record(runID, log)
}

// Steps calls fn with every step of the run in order, from one snapshot,
// reassembling each state from the previous one. It stops at the first
// error fn returns and returns that error as is.
func (s *SQLite) Steps(ctx context.Context, runID string, fn func(StepRecord) error) error {
	return s.steps(ctx, runID, false, func(rec StepRecord, _ *stepRow, _ [][]byte) error { return fn(rec) })
}

// steps iterates the run's steps from one snapshot; with raw, fn also gets
// the encodings of the messages of the log so far (Export).
func (s *SQLite) steps(ctx context.Context, runID string, raw bool, fn func(StepRecord, *stepRow, [][]byte) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("run %s: steps: %w", runID, err)
	}
	defer rollback(tx)
	var rk int64
	err = tx.QueryRowContext(ctx, `SELECT rk FROM runs WHERE id = ?`, runID).Scan(&rk)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("run %s: steps: %w", runID, err)
	}
	return iterateSteps(ctx, tx, runID, rk, raw, fn)
}

// iterateSteps calls fn with each step of run rk, in order, within tx.
func iterateSteps(ctx context.Context, tx *sql.Tx, runID string, rk int64, raw bool, fn func(StepRecord, *stepRow, [][]byte) error) error {
	rows, err := tx.QueryContext(ctx, `SELECT `+stepColumns+` FROM steps s WHERE s.id BETWEEN ? AND ? ORDER BY s.id`, rowKey(rk, 0), rowKey(rk, maxSeq))
	if err != nil {
		return fmt.Errorf("run %s: steps: %w", runID, err)
	}
	defer rows.Close()
	var log []core.Message
	var rawMsgs *[][]byte
	if raw {
		rawMsgs = new([][]byte)
	}
	want := 0
	for ; rows.Next(); want++ {
		var row stepRow
		if err := scanStep(rows, &row); err != nil {
			return fmt.Errorf("run %s step %d: %w", runID, want, err)
		}
		if row.seq != want {
			return fmt.Errorf("%w: run %s: step %d is missing (the next stored step is %d)", ErrCorrupt, runID, want, row.seq)
		}
		if err := row.verify(runID, rk); err != nil {
			return err
		}
		if log, err = row.appendTo(runID, log, rawMsgs); err != nil {
			return err
		}
		rec, err := row.record(runID, log)
		if err != nil {
			return err
		}
		var rm [][]byte
		if raw {
			rm = *rawMsgs
		}
		if err := fn(rec, &row, rm); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("run %s: steps: %w", runID, err)
	}
	if want == 0 {
		return fmt.Errorf("%w: run %s has no steps", ErrCorrupt, runID)
	}
	return nil
}
