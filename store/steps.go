package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
)

// stepRow is a steps row.
type stepRow struct {
	seq      int
	created  int64
	msgCount int
	msgSum   int64
	action   []byte // nil for step 0
	result   []byte // nil when none
	head     []byte
	msgs     []byte // the messages the step appended; nil when none
	sum      int64
	// buf, when the row was built to be written, is the buffer its blobs
	// were encoded into.
	buf []byte
}

// tail is what the run's tail is once r is its last step.
func (r *stepRow) tail(rk int64, status Status) tail {
	return tail{rk: rk, status: status, seq: r.seq, msgCount: r.msgCount, msgSum: r.msgSum}
}

// Steps and segments are keyed by rk << 32 | seq (see the schema).
const maxSeq = 1<<32 - 1

func rowKey(rk int64, seq int) int64 { return rk<<32 | int64(seq) }

// lastStepID is SQL for the id of the last step of run r.
const lastStepID = `(SELECT max(id) FROM steps WHERE id BETWEEN r.rk << 32 AND (r.rk << 32) + 4294967295)`

const stepColumns = `s.seq, s.created_ns, s.msg_count, s.msg_sum, s.action, s.result, s.head, s.msgs, s.sum`

// scanStep scans stepColumns, after others, into r.
func scanStep(sc interface{ Scan(...any) error }, r *stepRow, others ...any) error {
	var seq, count int64
	dest := append(others, &seq, &r.created, &count, &r.msgSum, &r.action, &r.result, &r.head, &r.msgs, &r.sum)
	if err := sc.Scan(dest...); err != nil {
		return err
	}
	r.seq, r.msgCount = int(seq), int(count)
	return nil
}

func (r *stepRow) verify(runID string, rk int64) error {
	if stepSum(rk, r) != r.sum {
		return fmt.Errorf("%w: run %s step %d: the step record fails its checksum", ErrCorrupt, runID, r.seq)
	}
	return nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

const insertStepSQL = `INSERT INTO steps (id, rk, seq, created_ns, msg_count, msg_sum, action, result, head, msgs, sum)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// fencedInsertStepSQL is insertStepSQL conditional on the run's lease: it
// inserts the row only while ?12 is the run's lease token and the lease is
// held (one row changed), else nothing. The lease check and the insert are
// one statement of the checkpoint's transaction.
const fencedInsertStepSQL = `INSERT INTO steps (id, rk, seq, created_ns, msg_count, msg_sum, action, result, head, msgs, sum)
	SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 FROM runs WHERE rk = ?2 AND lease_token = ?12 AND lease_owner <> ''`

// record decodes the row into a StepRecord whose state holds the first
// msgCount messages of log.
func (r *stepRow) record(runID string, log []core.Message) (StepRecord, error) {
	st, err := core.DecodeState(r.head)
	if err != nil {
		return StepRecord{}, fmt.Errorf("run %s step %d: %w: %w", runID, r.seq, ErrCorrupt, err)
	}
	if st.Messages != nil {
		return StepRecord{}, fmt.Errorf("%w: run %s step %d: the state head holds messages", ErrCorrupt, runID, r.seq)
	}
	if r.msgCount > len(log) {
		return StepRecord{}, fmt.Errorf("%w: run %s step %d: holds %d messages, the log has %d", ErrCorrupt, runID, r.seq, r.msgCount, len(log))
	}
	if r.msgCount > 0 {
		// Capped, so appending to one state's messages never writes into
		// the log other states share.
		st.Messages = log[:r.msgCount:r.msgCount]
	}
	rec := StepRecord{Seq: r.seq, State: st, Created: fromNs(r.created)}
	if r.action != nil {
		if rec.Action, err = core.DecodeAction(r.action, st); err != nil {
			return StepRecord{}, fmt.Errorf("run %s step %d: %w: %w", runID, r.seq, ErrCorrupt, err)
		}
	}
	if r.result != nil {
		if rec.Result, err = core.DecodeResult(r.result); err != nil {
			return StepRecord{}, fmt.Errorf("run %s step %d: %w: %w", runID, r.seq, ErrCorrupt, err)
		}
	}
	return rec, nil
}

// appendTo decodes the messages the step appended onto log, checking that
// they bring it to the step's count. raw, when non-nil, receives each
// message's encoding.
func (r *stepRow) appendTo(runID string, log []core.Message, raw *[][]byte) ([]core.Message, error) {
	before := len(log)
	var ends []int
	var endsp *[]int
	if raw != nil {
		endsp = &ends
	}
	log, err := decodeMessages(r.msgs, -1, false, log, endsp)
	if err != nil {
		return log, fmt.Errorf("run %s step %d: its messages: %w: %w", runID, r.seq, ErrCorrupt, err)
	}
	if len(log) != r.msgCount {
		return log, fmt.Errorf("%w: run %s step %d: holds %d messages, but %d before and %d appended", ErrCorrupt, runID, r.seq, r.msgCount, before, len(log)-before)
	}
	start := 0
	for _, end := range ends {
		*raw = append(*raw, r.msgs[start:end:end])
		start = end
	}
	return log, nil
}
