package sqlite

import (
	"context"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
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
	var out []codec.Row
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
// segments before its segment, then the step rows of its segment up to it.
func loadLog(ctx context.Context, q querier, runID string, rk int64, row *codec.Row) ([]core.Message, error) {
	log := make([]core.Message, 0, row.MsgCount)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: run %s step %d: %s", store.ErrCorrupt, runID, row.Seq, fmt.Sprintf(format, args...))
	}
	// Segments cover the steps before b; the rest come from step rows.
	b := codec.SegmentStart(row.Seq + 1)
	if b > 0 {
		segs, err := readSegments(ctx, q, rk, b)
		if err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.Seq, err)
		}
		if err := codec.CheckSegments(runID, rk, row.Seq, row.MsgCount, segs); err != nil {
			return nil, err
		}
		if log, err = codec.DecodeSegments(log, segs); err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.Seq, err)
		}
	}
	if row.Seq < b {
		if len(log) != row.MsgCount {
			return nil, fail("holds %d messages, the segments %d", row.MsgCount, len(log))
		}
		return log, nil
	}
	rows, err := readRows(ctx, q, runID, rk, b, row.Seq)
	if err != nil {
		return nil, err
	}
	want := b
	for i := range rows {
		r := &rows[i]
		if r.Seq != want {
			return nil, fail("step %d is missing", want)
		}
		want++
		if log, err = r.AppendTo(runID, log, nil); err != nil {
			return nil, err
		}
	}
	if want != row.Seq {
		return nil, fail("step %d is missing", want)
	}
	return row.AppendTo(runID, log, nil)
}

// readSegments reads the segments of run rk that start before step b.
func readSegments(ctx context.Context, q querier, rk int64, b int) ([]codec.Segment, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq_from, seq_to, first, n, body, sum FROM segments WHERE id >= ? AND id < ? ORDER BY id`,
		rowKey(rk, 0), rowKey(rk, b))
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
