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

// LoadLatest returns the run's last step.
func (s *SQLite) LoadLatest(ctx context.Context, runID string) (store.StepRecord, error) {
	return s.loadStep(ctx, runID, -1)
}

// LoadStep returns step seq of the run, or ErrNotFound.
func (s *SQLite) LoadStep(ctx context.Context, runID string, seq int) (store.StepRecord, error) {
	if seq < 0 {
		return store.StepRecord{}, fmt.Errorf("run %s step %d: %w", runID, seq, store.ErrNotFound)
	}
	return s.loadStep(ctx, runID, seq)
}

// loadStep loads step seq, or the last step when seq is -1, from one
// snapshot.
func (s *SQLite) loadStep(ctx context.Context, runID string, seq int) (store.StepRecord, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return store.StepRecord{}, fmt.Errorf("run %s: load: %w", runID, err)
	}
	defer rollback(tx)
	var rk int64
	var row codec.Row
	if seq < 0 {
		err = scanStep(tx.QueryRowContext(ctx, `SELECT r.rk, `+stepColumns+` FROM runs r JOIN steps s ON s.id = `+lastStepID+`
			WHERE r.id = ?`, runID), &row, &rk)
	} else {
		err = scanStep(tx.QueryRowContext(ctx, `SELECT r.rk, `+stepColumns+` FROM runs r JOIN steps s ON s.id = (r.rk << 32) + ?2
			WHERE r.id = ?1`, runID, seq), &row, &rk)
	}
	if errors.Is(err, sql.ErrNoRows) {
		err := s.missing(ctx, tx, runID)
		if seq >= 0 && errors.Is(err, store.ErrCorrupt) { // the run exists, without that step
			err = fmt.Errorf("run %s step %d: %w", runID, seq, store.ErrNotFound)
		}
		return store.StepRecord{}, err
	}
	if err != nil {
		return store.StepRecord{}, fmt.Errorf("run %s: load: %w", runID, err)
	}
	if err := row.OpenVerified(runID, rk); err != nil {
		return store.StepRecord{}, err
	}
	log, err := loadLog(ctx, tx, s.logs, runID, rk, &row, s.blobLoader(ctx, tx))
	if err != nil {
		return store.StepRecord{}, err
	}
	return row.Record(runID, log, s.resolver(ctx, tx))
}

// resolver resolves tool list digests through q.
func (s *SQLite) resolver(ctx context.Context, q querier) codec.Resolver {
	return func(digest []byte) ([]core.Tool, error) {
		return s.tools.Resolve(digest, func(d []byte) ([]byte, error) {
			var body []byte
			err := q.QueryRowContext(ctx, `SELECT body FROM tool_lists WHERE digest = ?`, d).Scan(&body)
			if errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("%w: the tool list %x is missing", store.ErrCorrupt, d[:6])
			}
			return body, err
		})
	}
}

// Steps calls fn with every step of the run in order, from one snapshot,
// reassembling each state from the previous one. It stops at the first
// error fn returns and returns that error as is.
func (s *SQLite) Steps(ctx context.Context, runID string, fn func(store.StepRecord) error) error {
	return s.StepsFrom(ctx, runID, 0, fn)
}

// StepsFrom is Steps from step from on (see store.Runs).
func (s *SQLite) StepsFrom(ctx context.Context, runID string, from int, fn func(store.StepRecord) error) error {
	if from < 0 {
		from = 0
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("run %s: steps: %w", runID, err)
	}
	defer rollback(tx)
	var rk int64
	err = tx.QueryRowContext(ctx, `SELECT rk FROM runs WHERE id = ?`, runID).Scan(&rk)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("run %s: steps: %w", runID, err)
	}
	var log []core.Message
	if from > 0 {
		// The log as the step before from left it.
		var row codec.Row
		err := scanStep(tx.QueryRowContext(ctx, `SELECT `+stepColumns+` FROM steps s WHERE s.id = ?`, rowKey(rk, from-1)), &row)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // past the last step
		}
		if err != nil {
			return fmt.Errorf("run %s: steps: %w", runID, err)
		}
		if err := row.OpenVerified(runID, rk); err != nil {
			return err
		}
		if log, err = loadLog(ctx, tx, s.logs, runID, rk, &row, s.blobLoader(ctx, tx)); err != nil {
			return err
		}
	}
	return s.iterateFrom(ctx, tx, runID, rk, from, log, false, func(rec store.StepRecord, _ *codec.Row, _ [][]byte) error { return fn(rec) })
}

// steps iterates the run's steps from one snapshot; with raw, fn also gets
// the encodings of the messages of the log so far (Export).
func (s *SQLite) steps(ctx context.Context, runID string, raw bool, fn func(store.StepRecord, *codec.Row, [][]byte) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("run %s: steps: %w", runID, err)
	}
	defer rollback(tx)
	var rk int64
	err = tx.QueryRowContext(ctx, `SELECT rk FROM runs WHERE id = ?`, runID).Scan(&rk)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("run %s: steps: %w", runID, err)
	}
	return s.iterateSteps(ctx, tx, runID, rk, raw, fn)
}

// iterateSteps calls fn with each step of run rk, in order, within tx.
func (s *SQLite) iterateSteps(ctx context.Context, tx *sql.Tx, runID string, rk int64, raw bool, fn func(store.StepRecord, *codec.Row, [][]byte) error) error {
	return s.iterateFrom(ctx, tx, runID, rk, 0, nil, raw, fn)
}

// iterateFrom calls fn with each step of run rk from step from on, in
// order, within tx; log is the message log as step from-1 left it.
func (s *SQLite) iterateFrom(ctx context.Context, tx *sql.Tx, runID string, rk int64, from int, log []core.Message, raw bool, fn func(store.StepRecord, *codec.Row, [][]byte) error) error {
	rows, err := tx.QueryContext(ctx, `SELECT `+stepColumns+` FROM steps s WHERE s.id BETWEEN ? AND ? ORDER BY s.id`, rowKey(rk, from), rowKey(rk, maxSeq))
	if err != nil {
		return fmt.Errorf("run %s: steps: %w", runID, err)
	}
	defer rows.Close()
	var rawMsgs *[][]byte
	if raw {
		rawMsgs = new([][]byte)
	}
	resolve, load := s.resolver(ctx, tx), s.blobLoader(ctx, tx)
	want := from
	for ; rows.Next(); want++ {
		var row codec.Row
		if err := scanStep(rows, &row); err != nil {
			return fmt.Errorf("run %s step %d: %w", runID, want, err)
		}
		if row.Seq != want {
			return fmt.Errorf("%w: run %s: step %d is missing (the next stored step is %d)", store.ErrCorrupt, runID, want, row.Seq)
		}
		if err := row.OpenVerified(runID, rk); err != nil {
			return err
		}
		if log, err = row.AppendTo(runID, log, rawMsgs, load); err != nil {
			return err
		}
		rec, err := row.Record(runID, log, resolve)
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
		return fmt.Errorf("%w: run %s has no steps", store.ErrCorrupt, runID)
	}
	return nil
}
