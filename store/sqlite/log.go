package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// The message log of a run lives in its step rows, and every
// codec.SegmentSteps steps also in a segments row (see store/internal/codec).

// insertSegment writes a segments row.
func insertSegment(ctx context.Context, ex execer, rk int64, sg codec.Segment) error {
	_, err := ex.ExecContext(ctx, `INSERT INTO segments (id, rk, seq_from, seq_to, first, n, body, sum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		rowKey(rk, sg.From), rk, sg.From, sg.To, sg.First, sg.N, sg.Body, sg.Sum)
	return err
}

// closeSegment writes the segment that step last closes, from open when it
// is complete, else by reading the segment's steps back.
func closeSegment(ctx context.Context, tx dbtx, runID string, rk int64, last *codec.Row, open *codec.OpenSegment) error {
	sg, ok, skip := codec.FromOpen(rk, last, open)
	switch {
	case skip:
		return nil
	case ok:
		return insertSegment(ctx, tx, rk, sg)
	}
	return writeSegment(ctx, tx, runID, rk, last)
}

// writeSegment copies the messages of the segment that step last closes into
// a segments row. It reads the segment's earlier steps back (and the step
// before, for the count the segment starts at), verifying each, so that a
// corrupt record is never copied under a fresh checksum.
func writeSegment(ctx context.Context, tx dbtx, runID string, rk int64, last *codec.Row) error {
	from := codec.SegmentStart(last.Seq)
	rows, err := readRows(ctx, tx, runID, rk, max(from-1, 0), last.Seq)
	if err != nil {
		return err
	}
	sg, ok, err := codec.SegmentFromRows(runID, rk, rows, last)
	if err != nil || !ok {
		return err
	}
	return insertSegment(ctx, tx, rk, sg)
}

// readRows reads, verifies and opens the step rows from..to-1 of run rk.
func readRows(ctx context.Context, q querier, runID string, rk int64, from, to int) ([]codec.Row, error) {
	if to <= from {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT `+stepColumns+` FROM steps s WHERE s.id >= ? AND s.id < ? ORDER BY s.id`,
		rowKey(rk, from), rowKey(rk, to))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]codec.Row, 0, to-from)
	for rows.Next() {
		var r codec.Row
		if err := scanStep(rows, &r); err != nil {
			return nil, err
		}
		if err := r.OpenVerified(runID, rk); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// loadLog assembles the messages of the state at the opened step row: the
// segments before its segment, then the step rows of its segment up to it,
// reading only what the store's cache (codec.LogCache) does not hold.
func loadLog(ctx context.Context, q querier, cache *codec.LogCache, runID string, rk int64, row *codec.Row, load codec.Load) ([]core.Message, error) {
	log, err := loadPlanned(ctx, q, cache, runID, rk, row, cache.Plan(rk, row.Seq), load)
	if errors.Is(err, codec.ErrStale) {
		log, err = loadPlanned(ctx, q, cache, runID, rk, row, codec.FullPlan(row.Seq), load)
	}
	return log, err
}

// loadPlanned reads what p says and assembles the log.
func loadPlanned(ctx context.Context, q querier, cache *codec.LogCache, runID string, rk int64, row *codec.Row, p codec.LogPlan, load codec.Load) ([]core.Message, error) {
	var segs []codec.Segment
	if b := codec.SegmentStart(row.Seq + 1); b > 0 {
		var err error
		if segs, err = readSegments(ctx, q, rk, p.BodiesFrom, b); err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.Seq, err)
		}
	}
	rows, err := readRows(ctx, q, runID, rk, p.RowsFrom, row.Seq)
	if err != nil {
		return nil, err
	}
	return cache.Load(runID, rk, p, row, segs, rows, load)
}

// readSegments reads the segments of run rk that start before step b, the
// bodies of those from step bodies on (the others' Body is nil).
func readSegments(ctx context.Context, q querier, rk int64, bodies, b int) ([]codec.Segment, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq_from, seq_to, first, n, CASE WHEN id >= ?1 THEN body END, sum FROM segments
		WHERE id >= ?2 AND id < ?3 ORDER BY id`, rowKey(rk, bodies), rowKey(rk, 0), rowKey(rk, b))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var segs []codec.Segment
	for rows.Next() {
		var sg codec.Segment
		if err := rows.Scan(&sg.From, &sg.To, &sg.First, &sg.N, &sg.Body, &sg.Sum); err != nil {
			return nil, err
		}
		segs = append(segs, sg)
	}
	return segs, rows.Err()
}
