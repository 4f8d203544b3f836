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

// The message log of a run lives in its step rows, and every
// codec.SegmentSteps steps also in a segments row (see store/internal/codec).

// loadLog assembles the messages of the state at the opened step row: the
// segments before its segment, then the step rows of its segment up to it,
// both read through q in one round trip, reading only what the store's
// cache (codec.LogCache) does not hold (a second round trip when the cache
// turns out stale).
func loadLog(ctx context.Context, q querier, cache *codec.LogCache, runID string, rk int64, row *codec.Row, load codec.Load) ([]core.Message, error) {
	log, err := loadPlanned(ctx, q, cache, runID, rk, row, cache.Plan(rk, row.Seq), load)
	if errors.Is(err, codec.ErrStale) {
		log, err = loadPlanned(ctx, q, cache, runID, rk, row, codec.FullPlan(row.Seq), load)
	}
	return log, err
}

// loadPlanned reads what p says, in one round trip, and assembles the log.
func loadPlanned(ctx context.Context, q querier, cache *codec.LogCache, runID string, rk int64, row *codec.Row, p codec.LogPlan, load codec.Load) ([]core.Message, error) {
	b := codec.SegmentStart(row.Seq + 1)
	batch := &pgx.Batch{}
	if b > 0 {
		batch.Queue(`SELECT seq_from, seq_to, first, n, CASE WHEN seq_from >= $2 THEN body END, sum FROM segments
			WHERE rk = $1 AND seq_from < $3 ORDER BY seq_from`, rk, int64(p.BodiesFrom), int64(b))
	}
	if row.Seq > p.RowsFrom {
		batch.Queue(`SELECT `+stepColumns+` FROM steps s WHERE s.rk = $1 AND s.seq >= $2 AND s.seq < $3 ORDER BY s.seq`, rk, int64(p.RowsFrom), int64(row.Seq))
	}
	var segs []codec.Segment
	var rows []codec.Row
	if batch.Len() > 0 {
		br := q.SendBatch(ctx, batch)
		err := func() error {
			defer br.Close()
			if b > 0 {
				r, err := br.Query()
				if err != nil {
					return err
				}
				if segs, err = collectSegments(r); err != nil {
					return err
				}
			}
			if row.Seq > p.RowsFrom {
				r, err := br.Query()
				if err != nil {
					return err
				}
				if rows, err = collectRows(r); err != nil {
					return err
				}
			}
			return br.Close()
		}()
		if err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.Seq, err)
		}
	}
	for i := range rows {
		if err := rows[i].OpenVerified(runID, rk); err != nil {
			return nil, err
		}
	}
	return cache.Load(runID, rk, p, row, segs, rows, load)
}

// collectSegments scans segment rows and closes rows.
func collectSegments(rows pgx.Rows) ([]codec.Segment, error) {
	defer rows.Close()
	var segs []codec.Segment
	for rows.Next() {
		var sg codec.Segment
		var from, to, first, n int64
		if err := rows.Scan(&from, &to, &first, &n, &sg.Body, &sg.Sum); err != nil {
			return nil, err
		}
		sg.From, sg.To, sg.First, sg.N = int(from), int(to), int(first), int(n)
		segs = append(segs, sg)
	}
	return segs, rows.Err()
}

// stepsPage is how many step rows iterateSteps reads per query.
const stepsPage = 256

// iterateSteps calls fn with each step of run rk from step from on, in
// order, within tx (a snapshot); log is the message log as step from-1
// left it. Rows are read a page at a time, so that memory stays bounded and
// tool lists can be read through tx between pages; with raw, fn also gets
// the encodings of the messages of the log so far (Export, from 0).
func (s *Postgres) iterateSteps(ctx context.Context, tx pgx.Tx, runID string, rk int64, from int, log []core.Message, raw bool, fn func(store.StepRecord, *codec.Row, [][]byte) error) error {
	var rawMsgs *[][]byte
	if raw {
		rawMsgs = new([][]byte)
	}
	resolve, load := s.resolver(ctx, tx), s.blobLoader(ctx, tx)
	want := from
	for {
		rows, err := tx.Query(ctx, `SELECT `+stepColumns+` FROM steps s WHERE s.rk = $1 AND s.seq >= $2 ORDER BY s.seq LIMIT `+fmt.Sprint(stepsPage),
			rk, int64(want))
		if err != nil {
			return fmt.Errorf("run %s: steps: %w", runID, err)
		}
		page, err := collectRows(rows)
		if err != nil {
			return fmt.Errorf("run %s step %d: %w", runID, want, err)
		}
		for i := range page {
			row := &page[i]
			if row.Seq != want {
				return fmt.Errorf("%w: run %s: step %d is missing (the next stored step is %d)", store.ErrCorrupt, runID, want, row.Seq)
			}
			want++
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
			if err := fn(rec, row, rm); err != nil {
				return err
			}
		}
		if len(page) < stepsPage {
			break
		}
	}
	if want == 0 {
		return fmt.Errorf("%w: run %s has no steps", store.ErrCorrupt, runID)
	}
	return nil
}
