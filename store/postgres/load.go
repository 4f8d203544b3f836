package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// LoadLatest returns the run's last step.
func (s *Postgres) LoadLatest(ctx context.Context, runID string) (store.StepRecord, error) {
	return s.loadStep(ctx, runID, -1)
}

// LoadStep returns step seq of the run, or ErrNotFound.
func (s *Postgres) LoadStep(ctx context.Context, runID string, seq int) (store.StepRecord, error) {
	if seq < 0 || seq > codec.MaxSeq {
		return store.StepRecord{}, fmt.Errorf("run %s step %d: %w", runID, seq, store.ErrNotFound)
	}
	return s.loadStep(ctx, runID, seq)
}

// loadStep loads step seq, or the last step when seq is -1: its row, then
// (in one round trip) the segments before its segment and the rows of its
// segment before it. No snapshot is needed: steps and segments are never
// modified, and a segment commits with the step that closes it, so every
// segment the step's state needs is there once the step is.
func (s *Postgres) loadStep(ctx context.Context, runID string, seq int) (store.StepRecord, error) {
	var rk *int64
	var row codec.Row
	var rseq, created, count, msgSum, sum *int64
	var err error
	if seq < 0 {
		err = s.pool.QueryRow(ctx, lastStepSQL, runID).Scan(&rk, new(string), new(string), new(int64), &rseq, &created, &count, &msgSum, &row.Body, &sum)
	} else {
		err = s.pool.QueryRow(ctx, `SELECT r.rk, `+stepColumns+` FROM runs r LEFT JOIN steps s ON s.rk = r.rk AND s.seq = $2 WHERE r.id = $1`,
			runID, int64(seq)).Scan(&rk, &rseq, &created, &count, &msgSum, &row.Body, &sum)
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.StepRecord{}, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	case err != nil:
		return store.StepRecord{}, fmt.Errorf("run %s: load: %w", runID, err)
	case rseq == nil && seq >= 0: // the run exists, without that step
		return store.StepRecord{}, fmt.Errorf("run %s step %d: %w", runID, seq, store.ErrNotFound)
	case rseq == nil:
		return store.StepRecord{}, fmt.Errorf("%w: run %s has no steps", store.ErrCorrupt, runID)
	}
	row.Seq, row.Created, row.MsgCount, row.MsgSum, row.Sum = int(*rseq), *created, int(*count), *msgSum, *sum
	if err := row.OpenVerified(runID, *rk); err != nil {
		return store.StepRecord{}, err
	}
	log, err := loadLog(ctx, s.pool, s.logs, runID, *rk, &row, s.blobLoader(ctx, s.pool))
	if err != nil {
		return store.StepRecord{}, err
	}
	return row.Record(runID, log, s.resolver(ctx, s.pool))
}

// resolver resolves tool list digests through q.
func (s *Postgres) resolver(ctx context.Context, q querier) codec.Resolver {
	return func(digest []byte) ([]core.Tool, error) {
		return s.tools.Resolve(digest, func(d []byte) ([]byte, error) {
			var body []byte
			err := q.QueryRow(ctx, `SELECT body FROM tool_lists WHERE digest = $1`, d).Scan(&body)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, fmt.Errorf("%w: the tool list %x is missing", store.ErrCorrupt, d[:min(6, len(d))])
			}
			return body, err
		})
	}
}

// Steps calls fn with every step of the run in order, from one snapshot,
// reassembling each state from the previous one. It stops at the first
// error fn returns and returns that error as is.
func (s *Postgres) Steps(ctx context.Context, runID string, fn func(store.StepRecord) error) error {
	return s.StepsFrom(ctx, runID, 0, fn)
}

// StepsFrom is Steps from step from on (see store.Runs): the state before
// from is assembled as LoadStep assembles it (segments, then at most 63
// step rows), then the steps are read a page at a time, all in one
// read-only REPEATABLE READ transaction.
func (s *Postgres) StepsFrom(ctx context.Context, runID string, from int, fn func(store.StepRecord) error) error {
	from = max(from, 0)
	return s.inTx(ctx, "run "+runID+": steps", readSnapshot, func(b *pgx.Batch) {
		b.Queue(`SELECT r.rk, `+stepColumns+` FROM runs r LEFT JOIN steps s ON s.rk = r.rk AND s.seq = $2 WHERE r.id = $1`,
			runID, int64(from-1))
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		var rk int64
		var row codec.Row
		var seq, created, count, msgSum, sum *int64
		err := br.QueryRow().Scan(&rk, &seq, &created, &count, &msgSum, &row.Body, &sum)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
		}
		if err == nil {
			err = br.Close()
		}
		if err != nil {
			return fmt.Errorf("run %s: steps: %w", runID, err)
		}
		var log []core.Message
		if from > 0 {
			if seq == nil {
				return nil // past the last step
			}
			// The log as the step before from left it.
			row.Seq, row.Created, row.MsgCount, row.MsgSum, row.Sum = int(*seq), *created, int(*count), *msgSum, *sum
			if err := row.OpenVerified(runID, rk); err != nil {
				return err
			}
			if log, err = loadLog(ctx, tx, s.logs, runID, rk, &row, s.blobLoader(ctx, tx)); err != nil {
				return err
			}
		}
		return s.iterateSteps(ctx, tx, runID, rk, from, log, false, func(rec store.StepRecord, _ *codec.Row, _ [][]byte) error { return fn(rec) })
	})
}
