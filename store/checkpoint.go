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

// errNotFenced reports, from inside the hot transaction, that the fenced
// insert wrote nothing; the checkpoint then explains it (ErrLeaseLost).
var errNotFenced = errors.New("not fenced")

// checkCheckpoint checks what can be checked of cp before its run is read.
func checkCheckpoint(cp Checkpoint) error {
	if cp.Seq < 1 || cp.Seq > maxSeq {
		return fmt.Errorf("%w: seq %d (step 0 is written by CreateRun)", ErrSeq, cp.Seq)
	}
	if cp.Action == nil {
		return errors.New("no action")
	}
	return nil
}

// encodeHead appends the encoding of st without its messages to dst. It
// checks that the encoding is well-formed CBOR with valid UTF-8 text (a
// model or tool that produced invalid UTF-8 would otherwise make the state
// impossible to load back), so such a state is refused now rather than
// found later. That the state holds core's own invariants is core's
// business.
func encodeHead(dst []byte, st core.State) ([]byte, error) {
	st.Messages = nil
	start := len(dst)
	dst = core.AppendState(dst, st)
	if err := checkCBOR(dst[start:]); err != nil {
		return dst[:start], fmt.Errorf("the state would not load back: %w", err)
	}
	return dst, nil
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
// otherwise running). The step is written only while l is the run's lease
// (checked in the same transaction); otherwise nothing is written and the
// error is ErrLeaseLost. Nothing is written either when cp.Seq is not the
// next sequence number (ErrSeq), when the state's messages do not extend
// the stored log (ErrNotAppend), or when the run has ended (ErrEnded).
func (s *SQLite) Checkpoint(ctx context.Context, l Lease, cp Checkpoint) error {
	runID := l.RunID
	if err := checkCheckpoint(cp); err != nil {
		return fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	// A checkpoint, once begun, runs to its end (it is short, and waits
	// for the write lock at most the busy timeout): its statements then run
	// on this goroutine, where a cancellable context would make the driver
	// start one per statement.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	status := statusOf(cp.Action)
	var after tail
	var open *openSegment
	var err error
	if t, ok := s.tail(runID); ok && t.seq == cp.Seq-1 && t.status == status && !status.Ended() && !closesSegment(cp.Seq) {
		// The common checkpoint: this store wrote the step before, the
		// status stays, no segment closes. It is one insert, and the
		// whole transaction runs at the driver level in one go; the row
		// is built before it begins.
		var row stepRow
		err = s.writeHot(ctx, func() (err error) {
			row, err = s.stepAfter(s.scratch(), t, cp)
			s.keepScratch(row.buf)
			return err
		}, func(h *hotStmts) error {
			fenced, err := h.insertFenced(&row, t.rk, l.Token)
			if err != nil {
				return fmt.Errorf("insert step: %w", err)
			}
			if !fenced {
				return errNotFenced
			}
			after, open = row.tail(t.rk, status), s.openSegment(t.rk).extend(&row, t.msgCount)
			return nil
		})
		if errors.Is(err, errNotFenced) {
			err = lostOrMissing(ctx, s.r, l)
		}
	} else {
		err = s.write(ctx, "", func(tx *wtx) error {
			after, open, err = s.appendStep(ctx, tx, l, cp, status)
			return err
		})
	}
	if err != nil {
		s.forgetTail(runID)
		return fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	s.setOpenSegment(after.rk, open)
	s.setTail(runID, after)
	return nil
}

// appendStep writes cp to the run inside tx, reading the run's last step
// unless this store wrote it. It returns the run's tail and its open
// segment after the step, to remember once tx commits.
func (s *SQLite) appendStep(ctx context.Context, tx *wtx, l Lease, cp Checkpoint, status Status) (after tail, open *openSegment, err error) {
	runID := l.RunID
	t, ok := s.tail(runID)
	if !ok || t.seq != cp.Seq-1 {
		if t, err = s.lastStep(ctx, tx, runID); err != nil {
			return after, nil, err
		}
	}
	if t.status.Ended() {
		return after, nil, fmt.Errorf("%w (%s at step %d)", ErrEnded, t.status, t.seq)
	}
	if cp.Seq != t.seq+1 {
		return after, nil, fmt.Errorf("%w: seq %d, want %d", ErrSeq, cp.Seq, t.seq+1)
	}
	row, err := s.stepAfter(s.scratch(), t, cp)
	defer s.keepScratch(row.buf)
	if err != nil {
		return after, nil, err
	}
	if err := tx.insertFenced(ctx, &row, t.rk, l); err != nil {
		return after, nil, fmt.Errorf("insert step: %w", err)
	}
	if status != t.status {
		var answer, reason string
		var code core.FailCode
		switch a := cp.Action.(type) {
		case core.Complete:
			answer = a.Answer
		case core.Fail:
			code, reason = a.Code, a.Reason
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, updated_ns = ?, answer = ?, fail_code = ?, reason = ?, retry_ns = 0 WHERE rk = ?`,
			string(status), row.created, answer, string(code), reason, t.rk); err != nil {
			return after, nil, fmt.Errorf("update run: %w", err)
		}
	}
	open = s.openSegment(t.rk).extend(&row, t.msgCount)
	if closesSegment(row.seq) {
		if err := closeSegment(ctx, tx, runID, t.rk, &row, open); err != nil {
			return after, nil, fmt.Errorf("write segment: %w", err)
		}
		if open != nil {
			open = open.writtenOut()
		}
	}
	return row.tail(t.rk, status), open, nil
}

// stepAfter builds the row of cp, the step after the one t describes,
// encoding its blobs one after the other into buf (row.buf is buf as
// grown). It checks that the state's messages extend the log the run holds.
func (s *SQLite) stepAfter(buf []byte, t tail, cp Checkpoint) (row stepRow, err error) {
	row = stepRow{seq: cp.Seq, created: s.now().UnixNano()}
	b := buf[:0]
	defer func() { row.buf = b }()
	if b, err = core.AppendAction(b, cp.Action); err != nil {
		return row, err
	}
	endAction := len(b)
	if cp.Result != nil {
		if b, err = core.AppendResult(b, cp.Result); err != nil {
			return row, err
		}
	}
	endResult := len(b)
	st := cp.Action.Next()
	if b, err = encodeHead(b, st); err != nil {
		return row, fmt.Errorf("encode state: %w", err)
	}
	endHead := len(b)
	msgs := st.Messages
	if len(msgs) < t.msgCount {
		return row, fmt.Errorf("%w: the state has %d messages, the log already %d", ErrNotAppend, len(msgs), t.msgCount)
	}
	if t.msgCount > 0 {
		// The last message the log holds, encoded past the head to be
		// compared, then dropped.
		b = core.AppendMessage(b, msgs[t.msgCount-1])
		if messageSum(b[endHead:]) != t.msgSum {
			return row, fmt.Errorf("%w: the state's message %d differs from the stored one", ErrNotAppend, t.msgCount-1)
		}
		b = b[:endHead]
	}
	row.msgCount, row.msgSum = len(msgs), t.msgSum
	if added := msgs[t.msgCount:]; len(added) > 0 {
		b, row.msgSum = encodeMessages(b, added)
		row.msgs = b[endHead:]
		if err := checkMessages(row.msgs, len(added)); err != nil {
			return row, err
		}
	}
	// Sliced only now: the buffer may have moved as it grew.
	row.action, row.head = b[:endAction:endAction], b[endResult:endHead:endHead]
	if cp.Result != nil {
		row.result = b[endAction:endResult:endResult]
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
// blobs (read in place to check the checksum, not copied), and returns the
// run's tail.
func (s *SQLite) lastStep(ctx context.Context, tx dbtx, runID string) (t tail, err error) {
	rows, err := tx.QueryContext(ctx, lastStepSQL, runID)
	if err != nil {
		return t, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return t, err
		}
		return t, s.missing(ctx, tx, runID)
	}
	var rk sql.NullInt64
	var status string
	var raw [4]sql.RawBytes
	var seq, count int64
	var last stepRow
	if err := rows.Scan(&rk, &status, &seq, &last.created, &count, &last.msgSum, &raw[0], &raw[1], &raw[2], &raw[3], &last.sum); err != nil {
		return t, err
	}
	last.seq, last.msgCount = int(seq), int(count)
	// RawBytes reads a NULL as nil and an empty blob as empty, as the
	// checksum needs.
	last.action, last.result, last.head, last.msgs = raw[0], raw[1], raw[2], raw[3]
	if err := last.verify(runID, rk.Int64); err != nil {
		return t, err
	}
	return last.tail(rk.Int64, Status(status)), nil
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
