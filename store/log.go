package store

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/stepwise-agent/stepwise/core"
)

// The message log of a run lives in the steps that appended to it (each
// step row holds its new messages). Every segmentSteps steps, the checkpoint
// of the last step of the stretch also copies the messages of the stretch
// into one segments row, so that the state at step N is assembled from
// N/segmentSteps segments plus fewer than segmentSteps step rows, instead of
// from N step rows.

// segmentSteps is how many steps one segment covers.
const segmentSteps = 64

// segmentStart is the first step of the segment holding step seq.
func segmentStart(seq int) int { return seq / segmentSteps * segmentSteps }

// closesSegment reports whether step seq is the last of its segment.
func closesSegment(seq int) bool { return (seq+1)%segmentSteps == 0 }

// openSegment is the part of a run's current segment written so far: the
// messages of steps segmentStart(seq)..seq, which start at message first.
// The store remembers it for the runs it writes, so that closing a segment
// needs no read-back; a remembered segment is only ever used for the step
// right after its seq, so a stale or missing one (another process appended,
// a transaction failed) only means reading back.
type openSegment struct {
	seq   int
	first int
	body  []byte
	// written: the segment ended at seq and is in the segments table;
	// only its buffer is kept, for the next segment to fill.
	written bool
}

// extend returns the open segment after step row, given the one after the
// step before (nil when unknown) and the message count before row; nil when
// it cannot be known without reading back.
func (o *openSegment) extend(row *stepRow, before int) *openSegment {
	if row.seq == segmentStart(row.seq) {
		// Room for the whole segment at this step's size, so that it
		// is not copied as it grows; the last segment's buffer when it
		// has that room.
		room := max(min(max(len(row.msgs), 256)*segmentSteps, 64<<10), len(row.msgs))
		var body []byte
		if o != nil && o.written && o.seq == row.seq-1 && cap(o.body) >= room {
			body = o.body[:0]
		} else {
			body = make([]byte, 0, room)
		}
		return &openSegment{seq: row.seq, first: before, body: append(body, row.msgs...)}
	}
	if o == nil || o.written || o.seq != row.seq-1 {
		return nil
	}
	// Appending may write into o.body's spare capacity, never into o's own
	// bytes, so o stays valid. Two extensions of one o share that spare
	// room only when the first one's transaction failed (the store then
	// still remembers o), and that one is never used.
	return &openSegment{seq: row.seq, first: o.first, body: append(o.body, row.msgs...)}
}

// writtenOut is what to remember of o once the segment it completes is in the
// segments table: its buffer (SQLite copied the bytes), for the next
// segment. A failed transaction that filled the buffer again leaves nothing
// the store reads.
func (o *openSegment) writtenOut() *openSegment {
	return &openSegment{seq: o.seq, body: o.body[:0], written: true}
}

// maxOpenSegments bounds the memory the remembered open segments take.
const maxOpenSegments = 256

func (s *SQLite) openSegment(rk int64) *openSegment {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	return s.segments[rk]
}

// setOpenSegment remembers the open segment of run rk once the step that
// made it committed; nil forgets it.
func (s *SQLite) setOpenSegment(rk int64, o *openSegment) {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	if o == nil {
		delete(s.segments, rk)
		return
	}
	if s.segments == nil {
		s.segments = map[int64]*openSegment{}
	}
	if _, ok := s.segments[rk]; !ok && len(s.segments) >= maxOpenSegments {
		for k := range s.segments { // evict any one
			delete(s.segments, k)
			break
		}
	}
	s.segments[rk] = o
}

// insertSegment writes a segments row.
func insertSegment(ctx context.Context, ex execer, rk int64, from, to, first, n int, body []byte) error {
	_, err := ex.ExecContext(ctx, `INSERT INTO segments (id, rk, seq_from, seq_to, first, n, body, sum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		rowKey(rk, from), rk, from, to, first, n, body, segmentSum(rk, from, to, first, n, body))
	return err
}

// closeSegment writes the segment that step last closes, from open when it
// is complete, else by reading the segment's steps back.
func closeSegment(ctx context.Context, tx dbtx, runID string, rk int64, last *stepRow, open *openSegment) error {
	if open == nil || open.written || open.seq != last.seq {
		return writeSegment(ctx, tx, runID, rk, last)
	}
	if n := last.msgCount - open.first; n > 0 {
		return insertSegment(ctx, tx, rk, segmentStart(last.seq), last.seq, open.first, n, open.body)
	}
	return nil
}

// writeSegment copies the messages of the segment that step last closes into
// a segments row. It reads the segment's earlier steps back (and the step
// before, for the count the segment starts at), verifying each, so that a
// corrupt record is never copied under a fresh checksum.
func writeSegment(ctx context.Context, tx dbtx, runID string, rk int64, last *stepRow) error {
	from := segmentStart(last.seq)
	rows, err := tx.QueryContext(ctx, `SELECT `+stepColumns+` FROM steps s WHERE s.id >= ? AND s.id < ? ORDER BY s.id`,
		rowKey(rk, max(from-1, 0)), rowKey(rk, last.seq))
	if err != nil {
		return err
	}
	defer rows.Close()
	first := 0
	var body []byte
	want := max(from-1, 0)
	for rows.Next() {
		var r stepRow
		if err := scanStep(rows, &r); err != nil {
			return err
		}
		if r.seq != want {
			return fmt.Errorf("%w: run %s: step %d is missing", ErrCorrupt, runID, want)
		}
		want++
		if err := r.verify(runID, rk); err != nil {
			return err
		}
		if r.seq < from {
			first = r.msgCount
			continue
		}
		body = append(body, r.msgs...)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if want != last.seq {
		return fmt.Errorf("%w: run %s: step %d is missing", ErrCorrupt, runID, want)
	}
	body = append(body, last.msgs...)
	n := last.msgCount - first
	if n == 0 {
		return nil
	}
	return insertSegment(ctx, tx, rk, from, last.seq, first, n, body)
}

// loadLog assembles the messages of the state at step row: the segments
// before its segment, then the step rows of its segment up to it.
func loadLog(ctx context.Context, q querier, runID string, rk int64, row *stepRow) ([]core.Message, error) {
	log := make([]core.Message, 0, row.msgCount)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: run %s step %d: %s", ErrCorrupt, runID, row.seq, fmt.Sprintf(format, args...))
	}
	// Segments cover the steps before b; the rest come from step rows.
	b := segmentStart(row.seq + 1)
	if b > 0 {
		rows, err := q.QueryContext(ctx, `SELECT seq_from, seq_to, first, n, body, sum FROM segments WHERE id >= ? AND id < ? ORDER BY id`,
			rowKey(rk, 0), rowKey(rk, b))
		if err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.seq, err)
		}
		defer rows.Close()
		var segs []segment
		count := 0
		for rows.Next() {
			var sg segment
			var first, n, sum int64
			if err := rows.Scan(&sg.from, &sg.to, &first, &n, &sg.body, &sum); err != nil {
				return nil, fmt.Errorf("run %s step %d: %w", runID, row.seq, err)
			}
			sg.first, sg.n = int(first), int(n)
			if segmentSum(rk, int(sg.from), int(sg.to), sg.first, sg.n, sg.body) != sum {
				return nil, fail("the segment of steps %d-%d (messages %d-%d) fails its checksum", sg.from, sg.to, first, first+n-1)
			}
			if sg.first != count || sg.n < 0 || sg.n > row.msgCount-count {
				return nil, fail("the segment of steps %d-%d holds messages %d-%d, want from %d up to %d", sg.from, sg.to, first, first+n-1, count, row.msgCount-1)
			}
			count += sg.n
			segs = append(segs, sg)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.seq, err)
		}
		if log, err = decodeSegments(log, segs); err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.seq, err)
		}
	}
	if row.seq < b {
		if len(log) != row.msgCount {
			return nil, fail("holds %d messages, the segments %d", row.msgCount, len(log))
		}
		return log, nil
	}
	if row.seq > b {
		rows, err := q.QueryContext(ctx, `SELECT `+stepColumns+` FROM steps s WHERE s.id >= ? AND s.id < ? ORDER BY s.id`,
			rowKey(rk, b), rowKey(rk, row.seq))
		if err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.seq, err)
		}
		defer rows.Close()
		want := b
		for rows.Next() {
			var r stepRow
			if err := scanStep(rows, &r); err != nil {
				return nil, fmt.Errorf("run %s step %d: %w", runID, row.seq, err)
			}
			if r.seq != want {
				return nil, fail("step %d is missing", want)
			}
			want++
			if err := r.verify(runID, rk); err != nil {
				return nil, err
			}
			if log, err = r.appendTo(runID, log, nil); err != nil {
				return nil, err
			}
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.seq, err)
		}
		if want != row.seq {
			return nil, fail("step %d is missing", want)
		}
	}
	return row.appendTo(runID, log, nil)
}

// segment is a segments row read back, its checksum verified.
type segment struct {
	from, to int64
	first, n int
	body     []byte
}

// parallelDecodeBytes is the size of segments above which decodeSegments
// decodes on several goroutines (a variable for the tests).
var parallelDecodeBytes = 256 << 10

// decodeSegments decodes the messages of segs, which follow each other from
// message len(log), into log's spare capacity. Past parallelDecodeBytes the
// segments are shared out among GOMAXPROCS goroutines, each decoding into
// its segments' own slots.
func decodeSegments(log []core.Message, segs []segment) ([]core.Message, error) {
	base, total, size := len(log), 0, 0
	for _, sg := range segs {
		total += sg.n
		size += len(sg.body)
	}
	log = slices.Grow(log, total)[:base+total]
	errs := make([]error, len(segs))
	decode := func(i int) {
		sg := segs[i]
		at := base + sg.first - segs[0].first
		if _, err := decodeMessages(sg.body, sg.n, false, log[at:at:at+sg.n], nil); err != nil {
			errs[i] = fmt.Errorf("the segment of steps %d-%d: %w: %w", sg.from, sg.to, ErrCorrupt, err)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(segs))
	if size < parallelDecodeBytes || workers < 2 {
		for i := range segs {
			decode(i)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < len(segs); i = int(next.Add(1)) - 1 {
					decode(i)
				}
			})
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return log[:base], err
		}
	}
	return log, nil
}
