package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
)

// Checkpoint is one step to append to a run.
type Checkpoint struct {
	// Seq must be the run's last sequence number plus one.
	Seq int
	// Result is the outcome of the previous step's action that led to this
	// step; nil after step 0, or when the same state was stepped again.
	Result core.Result
	// Action is this step's decision; Action.Next() is the state stored.
	Action core.Action
}

// stepData is a checkpoint encoded, ready to write.
type stepData struct {
	seq                  int
	action, result, head []byte
	msgs                 []core.Message
	status               Status
	answer               string
	failCode             core.FailCode
	reason               string
}

func encodeStep(cp Checkpoint) (stepData, error) {
	if cp.Seq < 1 || cp.Seq > maxSeq {
		return stepData{}, fmt.Errorf("%w: seq %d (step 0 is written by CreateRun)", ErrSeq, cp.Seq)
	}
	if cp.Action == nil {
		return stepData{}, errors.New("no action")
	}
	d := stepData{seq: cp.Seq, status: statusOf(cp.Action)}
	var err error
	if d.action, err = core.EncodeAction(cp.Action); err != nil {
		return stepData{}, err
	}
	if cp.Result != nil {
		if d.result, err = core.EncodeResult(cp.Result); err != nil {
			return stepData{}, err
		}
	}
	st := cp.Action.Next()
	if d.head, err = encodeHead(st); err != nil {
		return stepData{}, err
	}
	d.msgs = st.Messages
	switch a := cp.Action.(type) {
	case core.Complete:
		d.answer = a.Answer
	case core.Fail:
		d.failCode, d.reason = a.Code, a.Reason
	}
	return d, nil
}

// encodeHead encodes st without its messages. It checks that the encoding is
// well-formed CBOR with valid UTF-8 text (a model or tool that produced
// invalid UTF-8 would otherwise make the state impossible to load back), so
// such a state is refused now rather than found later. That the state holds
// core's own invariants is core's business.
func encodeHead(st core.State) ([]byte, error) {
	st.Messages = nil
	b, err := core.EncodeState(st)
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	if err := checkCBOR(b); err != nil {
		return nil, fmt.Errorf("the state would not load back: %w", err)
	}
	return b, nil
}

// checkMessages checks that freshly encoded messages will decode (see
// encodeHead).
func checkMessages(body []byte, n int) error {
	if err := checkCBORSeq(body, n); err != nil {
		return fmt.Errorf("messages would not load back: %w", err)
	}
	return nil
}

// Checkpoint appends a step to a run in one transaction: the step (action,
// result, the state's head and the messages the state adds to the run's
// log) and, when the action changes it, the run's status (Complete:
// completed, Fail: failed, RequestExternalToolCalls: awaiting_tool_results,
// otherwise running). Nothing is written when cp.Seq is not the next
// sequence number (ErrSeq), when the state's messages do not extend the
// stored log (ErrNotAppend), or when the run has ended (ErrEnded).
func (s *SQLite) Checkpoint(ctx context.Context, runID string, cp Checkpoint) error {
	d, err := encodeStep(cp)
	if err != nil {
		return fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	// A checkpoint, once begun, runs to its end (it is short, and waits
	// for the write lock at most the busy timeout): its statements then run
	// on this goroutine, where a cancellable context would make the driver
	// start one per statement.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	ctx = context.WithoutCancel(ctx)
	var rk int64
	var open *openSegment
	var after tail
	err = s.write(ctx, "", func(tx *wtx) error {
		rk, open, after, err = s.appendStep(ctx, tx, runID, &d)
		return err
	})
	if err != nil {
		s.forgetTail(runID)
		return fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	s.setOpenSegment(rk, open)
	s.setTail(runID, after)
	return nil
}

// appendStep writes d to the run inside tx. It returns the run's key, its
// open segment and its tail after the step, to remember once tx commits.
func (s *SQLite) appendStep(ctx context.Context, tx *wtx, runID string, d *stepData) (rk int64, open *openSegment, after tail, err error) {
	var status string
	var last stepRow
	if t, ok := s.tail(runID); ok && t.seq == d.seq-1 {
		rk, status, last = t.rk, string(t.status), stepRow{seq: t.seq, msgCount: t.msgCount, msgSum: t.msgSum}
	} else if status, last, err = s.lastStep(ctx, tx, runID, &rk); err != nil {
		return 0, nil, after, err
	}
	if Status(status).Ended() {
		return 0, nil, after, fmt.Errorf("%w (%s at step %d)", ErrEnded, status, last.seq)
	}
	if d.seq != last.seq+1 {
		return 0, nil, after, fmt.Errorf("%w: seq %d, want %d", ErrSeq, d.seq, last.seq+1)
	}
	// The new messages are encoded into the write connection's scratch
	// buffer: SQLite copies them when they are bound, and the open segment
	// copies them too, so the buffer is free again once the step is
	// written.
	row, err := d.row(tx.scratch(), s.now().UnixNano(), last.msgCount, last.msgSum)
	if err != nil {
		return 0, nil, after, err
	}
	defer tx.keepScratch(row.msgs)
	if err := tx.insertStep(&row, rk); err != nil {
		return 0, nil, after, fmt.Errorf("insert step: %w", err)
	}
	if d.status != Status(status) {
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, updated_ns = ?, answer = ?, fail_code = ?, reason = ? WHERE rk = ?`,
			string(d.status), row.created, d.answer, string(d.failCode), d.reason, rk); err != nil {
			return 0, nil, after, fmt.Errorf("update run: %w", err)
		}
	}
	open = s.openSegment(rk).extend(&row, last.msgCount)
	if closesSegment(row.seq) {
		if err := closeSegment(ctx, tx, runID, rk, &row, open); err != nil {
			return 0, nil, after, fmt.Errorf("write segment: %w", err)
		}
		open = nil
	}
	return rk, open, tail{rk: rk, status: d.status, seq: row.seq, msgCount: row.msgCount, msgSum: row.msgSum}, nil
}

// row builds the step row of d after a step holding count messages, the
// last with checksum msgSum, checking that d's messages extend those.
func (d *stepData) row(scratch []byte, now int64, count int, msgSum int64) (stepRow, error) {
	if len(d.msgs) < count {
		return stepRow{}, fmt.Errorf("%w: the state has %d messages, the log already %d", ErrNotAppend, len(d.msgs), count)
	}
	if count > 0 {
		var buf [512]byte
		if messageSum(core.AppendMessage(buf[:0], d.msgs[count-1])) != msgSum {
			return stepRow{}, fmt.Errorf("%w: the state's message %d differs from the stored one", ErrNotAppend, count-1)
		}
	}
	row := stepRow{seq: d.seq, created: now, msgCount: len(d.msgs), msgSum: msgSum, action: d.action, result: d.result, head: d.head}
	if added := d.msgs[count:]; len(added) > 0 {
		row.msgs, row.msgSum = encodeMessages(scratch[:0], added)
		if err := checkMessages(row.msgs, len(added)); err != nil {
			return stepRow{}, err
		}
	}
	return row, nil
}

// lastStepSQL reads a run's key, status and last step. Scalar subqueries
// rather than a join: through go-sqlite3 this form runs several times faster
// (BenchmarkAppendStep).
const lastStepSQL = `SELECT (SELECT rk FROM runs WHERE id = ?1), (SELECT status FROM runs WHERE id = ?1), ` + stepColumns + `
	FROM steps s WHERE s.id = (SELECT max(id) FROM steps
		WHERE id BETWEEN (SELECT rk FROM runs WHERE id = ?1) << 32 AND ((SELECT rk FROM runs WHERE id = ?1) << 32) + 4294967295)`

// lastStep reads and verifies the run's last step inside tx, without its
// blobs (read in place to check the checksum, not copied). It sets rk.
func (s *SQLite) lastStep(ctx context.Context, tx dbtx, runID string, rk *int64) (status string, last stepRow, err error) {
	rows, err := tx.QueryContext(ctx, lastStepSQL, runID)
	if err != nil {
		return "", last, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", last, err
		}
		return "", last, s.missing(ctx, tx, runID)
	}
	var rkv sql.NullInt64
	var raw [4]sql.RawBytes
	var seq, count int64
	if err := rows.Scan(&rkv, &status, &seq, &last.created, &count, &last.msgSum, &raw[0], &raw[1], &raw[2], &raw[3], &last.sum); err != nil {
		return "", last, err
	}
	*rk, last.seq, last.msgCount = rkv.Int64, int(seq), int(count)
	// RawBytes reads a NULL as nil and an empty blob as empty, as the
	// checksum needs.
	last.action, last.result, last.head, last.msgs = raw[0], raw[1], raw[2], raw[3]
	err = last.verify(runID, *rk)
	last.action, last.result, last.head, last.msgs = nil, nil, nil, nil
	return status, last, err
}

// missing explains why a run has no last step: it does not exist, or (a
// corrupt database) it has no steps.
func (s *SQLite) missing(ctx context.Context, q querier, runID string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, runID).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("run %s: %w", runID, ErrNotFound)
	case err != nil:
		return fmt.Errorf("run %s: %w", runID, err)
	}
	return fmt.Errorf("%w: run %s has no steps", ErrCorrupt, runID)
}
