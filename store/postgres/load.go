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
		err = s.pool.QueryRow(ctx, lastStepSQL, runID).Scan(&rk, new(string), &rseq, &created, &count, &msgSum, &row.Body, &sum)
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
	log, err := s.loadLog(ctx, runID, *rk, &row)
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
	return s.snapshot(ctx, runID, `SELECT rk FROM runs WHERE id = $1`, func(row pgx.Row, tx pgx.Tx) error {
		var rk int64
		if err := row.Scan(&rk); err != nil {
			return err
		}
		return s.iterateSteps(ctx, tx, runID, rk, false, func(rec store.StepRecord, _ *codec.Row, _ [][]byte) error { return fn(rec) })
	})
}

// errRunNotFound marks, inside snapshot, a run that is not stored.
var errRunNotFound = errors.New("run not found")

// snapshot runs fn in a read-only REPEATABLE READ transaction (one
// snapshot), with the row that first, a query of the run's row with runID as
// its argument, returns: BEGIN and that query go in one round trip. A run
// that first does not find is ErrNotFound; errors other than fn's own are
// wrapped with the run.
func (s *Postgres) snapshot(ctx context.Context, runID, first string, fn func(pgx.Row, pgx.Tx) error) error {
	var fnErr error
	err := s.inTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(b *pgx.Batch) {
		b.Queue(first, runID)
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		row := br.QueryRow()
		var scanned bool
		err := fn(noRows{row, &scanned}, tx)
		if !scanned {
			fnErr = err
		}
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows) && fnErr == nil:
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	case fnErr != nil && errors.Is(err, fnErr):
		return fnErr
	case err != nil:
		return fmt.Errorf("run %s: %w", runID, err)
	}
	return nil
}
