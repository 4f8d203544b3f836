package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// writeTimeout bounds a checkpoint, which runs to its end whatever its
// caller's context does once it has begun (its statements wait at most for
// another transaction on the run's row: an Acquire, a status change).
const writeTimeout = 30 * time.Second

// errStaleTail reports, from a checkpoint built on the tail this store
// remembered, that the step's (run, seq) is taken: another writer appended.
// The checkpoint is then tried once more from the tail read back.
var errStaleTail = errors.New("the run's remembered tail is stale")

// Checkpoint appends a step to a run (see store.Runs). The common
// checkpoint (this store wrote the run's last step, the status stays, no
// segment closes, no new tool list, no user message) is one fenced INSERT
// in autocommit: one round trip, shared with the common checkpoints of
// other runs that arrive meanwhile (batch.go). Any other is one pipelined
// batch (one round trip, one implicit transaction) of fenced statements:
// the step, the run's row (status, turns), the segment it closes, a new
// tool list; preceded, when this store does not know the run's tail, by
// one read of it. A step that delivers an inbox message sends the batch
// with BEGIN and the message's removal, and commits in a second round
// trip.
func (s *Postgres) Checkpoint(ctx context.Context, l store.Lease, cp store.Checkpoint) error {
	_, err := s.CheckpointStatus(ctx, l, cp)
	return err
}

// CheckpointStatus is Checkpoint, returning the status the step left the
// run in (see store.Runs).
func (s *Postgres) CheckpointStatus(ctx context.Context, l store.Lease, cp store.Checkpoint) (store.Status, error) {
	runID := l.RunID
	if err := codec.CheckCheckpoint(cp); err != nil {
		return "", fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	// A checkpoint, once begun, runs to its end (bounded by writeTimeout):
	// cancelled half-way, it could commit without its caller knowing.
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	status, err := s.checkpoint(ctx, l, cp, false)
	if errors.Is(err, errStaleTail) {
		s.cache.ForgetTail(runID)
		status, err = s.checkpoint(ctx, l, cp, true)
	}
	if err != nil {
		s.cache.ForgetTail(runID)
		return "", fmt.Errorf("checkpoint run %s step %d: %w", runID, cp.Seq, err)
	}
	return status, nil
}

// checkpoint writes cp and returns the status it left the run in; retried
// says the remembered tail was found stale once already.
func (s *Postgres) checkpoint(ctx context.Context, l store.Lease, cp store.Checkpoint, retried bool) (store.Status, error) {
	status := store.StatusOf(cp.Action)
	runID := l.RunID
	var back []codec.Row // the steps a closing segment is read back from
	readBack := false
	t, ok := s.cache.Tail(runID)
	if !ok || t.Seq != cp.Seq-1 {
		var owner string
		var token int64
		var err error
		if t, owner, token, back, err = s.readTail(ctx, runID, cp.Seq); err != nil {
			return "", err
		}
		// The lease first: a driver that lost the run learns that, not
		// that its step is out of order.
		if l.Owner == "" || owner != l.Owner || token != l.Token {
			return "", store.LeaseLost(l, owner, token)
		}
		readBack = codec.ClosesSegment(cp.Seq)
	}
	if err := codec.Ended(t.Status, t.Seq, cp); err != nil {
		return "", err
	}
	if cp.Seq != t.Seq+1 {
		return "", fmt.Errorf("%w: seq %d, want %d", store.ErrSeq, cp.Seq, t.Seq+1)
	}
	sb := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sb)
	row, spare, err := codec.Build(sb.buf, sb.spare, t, cp, s.now().UnixNano(), &s.tools)
	sb.keep(row.Buf, spare)
	if err != nil {
		return "", err
	}
	open := s.cache.OpenSegment(t.RK).Extend(&row, t.MsgCount)
	var seg *codec.Segment
	if codec.ClosesSegment(row.Seq) {
		sg, ok, skip := codec.FromOpen(t.RK, &row, open)
		if !ok && !skip {
			if !readBack {
				from := max(codec.SegmentStart(row.Seq)-1, 0)
				if back, err = s.readRows(ctx, s.pool, runID, t.RK, from, row.Seq); err != nil {
					return "", fmt.Errorf("write segment: %w", err)
				}
			}
			if sg, ok, err = codec.SegmentFromRows(runID, t.RK, back, &row); err != nil {
				return "", fmt.Errorf("write segment: %w", err)
			}
		}
		if ok {
			seg = &sg
		}
		if open != nil {
			open = open.WrittenOut()
		}
	}
	if l.Owner == "" { // no holder's lease fences anything
		return "", lostOrMissing(ctx, s.pool, l)
	}
	turn := codec.TakesTurn(cp)
	if status == t.Status && seg == nil && row.NewTools == nil && !turn {
		// The common checkpoint: one statement, atomic by itself.
		n, err := s.insertStep(ctx, &row, t.RK, l)
		if err = s.inserted(ctx, l, n, err, retried); err != nil {
			return "", err
		}
	} else {
		// A user message begins a turn: it updates the run as a change
		// of status does, whether or not the status changes.
		update := status != t.Status || turn
		args := stepArgs(&row, t.RK, l.Token, l.Owner)
		queue := func(b *pgx.Batch) {
			b.Queue(fencedInsertStepSQL, args...)
			// The statements after the step's are conditional on the
			// same lease. The step's insert holds the run's row (FOR
			// SHARE) until the transaction ends, so they see the lease it
			// saw: all of them write, or none. The delivery is not
			// conditional: it runs in a transaction that commits only
			// when the step and the delivery both wrote.
			if cp.Delivered > 0 {
				b.Queue(`DELETE FROM inbox WHERE rk = $1 AND n = $2 AND n = (SELECT min(n) FROM inbox WHERE rk = $1)`, t.RK, int64(cp.Delivered))
			}
			if update {
				var answer, reason string
				var code core.FailCode
				switch a := cp.Action.(type) {
				case core.Complete:
					answer = a.Answer
				case core.Fail:
					code, reason = a.Code, a.Reason
				}
				// A message posted meanwhile is not left on a completed
				// run: the run stays running, for its driver to take it.
				// The post holds the run's row FOR UPDATE while it
				// writes, so this statement sees the message or the post
				// sees the run completed.
				set := `$1`
				// A step that ends the run gives its lease up with it,
				// when asked (store.Checkpoint.Release): not a completion
				// a waiting message keeps running.
				release := `$10`
				if status == store.StatusCompleted {
					set = `CASE WHEN EXISTS (SELECT 1 FROM inbox WHERE rk = $6) THEN 'running' ELSE $1 END`
					release = `($10 AND NOT EXISTS (SELECT 1 FROM inbox WHERE rk = $6))`
				}
				var turns int64
				if turn {
					turns = 1
				}
				b.Queue(`UPDATE runs SET status = `+set+`, updated_ns = $2, answer = $3, fail_code = $4, reason = $5, retry_ns = 0, stall_attempts = 0,
					turns = turns + $9, lease_owner = CASE WHEN `+release+` THEN '' ELSE lease_owner END,
					lease_expires_ns = CASE WHEN `+release+` THEN 0 ELSE lease_expires_ns END
					WHERE rk = $6 AND lease_token = $7 AND lease_owner = $8 RETURNING status`,
					string(status), row.Created, []byte(answer), string(code), []byte(reason), t.RK, l.Token, l.Owner, turns,
					cp.Release && status.Ended())
			}
			if seg != nil {
				b.Queue(`INSERT INTO segments (rk, seq_from, seq_to, first, n, body, sum)
					SELECT $1, $2, $3, $4, $5, $6, $7 FROM runs WHERE rk = $1 AND lease_token = $8 AND lease_owner = $9`,
					t.RK, int64(seg.From), int64(seg.To), int64(seg.First), int64(seg.N), seg.Body, seg.Sum, l.Token, l.Owner)
			}
			if row.NewTools != nil {
				b.Queue(`INSERT INTO tool_lists (digest, body) SELECT $1, $2 FROM runs WHERE rk = $3 AND lease_token = $4 AND lease_owner = $5
					ON CONFLICT (digest) DO NOTHING`, row.Tools, row.NewTools, t.RK, l.Token, l.Owner)
			}
		}
		read := func(br pgx.BatchResults) error {
			ct, err := br.Exec()
			if err != nil || ct.RowsAffected() != 1 {
				return notInserted{ct.RowsAffected(), err}
			}
			if cp.Delivered > 0 {
				ct, err := br.Exec()
				switch {
				case err != nil:
					return fmt.Errorf("deliver message %d: %w", cp.Delivered, err)
				case ct.RowsAffected() != 1:
					return fmt.Errorf("deliver message %d: %w: it is not the oldest message waiting in the inbox", cp.Delivered, store.ErrConflict)
				}
			}
			if update {
				var st string
				if err := br.QueryRow().Scan(&st); err != nil {
					return fmt.Errorf("update run: %w", err)
				}
				status = store.Status(st)
			}
			return nil
		}
		var err error
		if cp.Delivered > 0 {
			err = s.inTx(ctx, "", pgx.TxOptions{}, queue, func(br pgx.BatchResults, _ pgx.Tx) error { return read(br) })
		} else {
			b := &pgx.Batch{}
			queue(b)
			br := s.pool.SendBatch(ctx, b)
			err = read(br)
			if cerr := br.Close(); err == nil && cerr != nil {
				err = notInserted{1, cerr}
			}
		}
		if ni, ok := errors.AsType[notInserted](err); ok {
			err = s.inserted(ctx, l, ni.n, ni.err, retried)
		}
		if err != nil {
			return "", err
		}
		if row.NewTools != nil {
			s.tools.Stored(row.Tools)
		}
	}
	s.cache.SetOpenSegment(t.RK, open)
	s.cache.SetTail(runID, row.Tail(t.RK, status))
	return status, nil
}

// notInserted is the outcome of a fenced step insert that failed, or
// inserted n rows but one, for inserted to interpret once the batch is
// closed.
type notInserted struct {
	n   int64
	err error
}

func (e notInserted) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("%d steps inserted", e.n)
}

// inserted interprets the outcome of a fenced step insert: a step already
// stored at (run, seq) is a stale tail (or, after a retry, a racing
// writer: ErrSeq), no row inserted a lease that is not the run's.
func (s *Postgres) inserted(ctx context.Context, l store.Lease, n int64, err error, retried bool) error {
	switch {
	case uniqueViolation(err, "steps_pkey") && !retried:
		return errStaleTail
	case uniqueViolation(err, "steps_pkey"):
		return fmt.Errorf("%w: another writer stored the step first", store.ErrSeq)
	case err != nil:
		return fmt.Errorf("insert step: %w", err)
	case n != 1:
		return lostOrMissing(ctx, s.pool, l)
	}
	return nil
}

// lastStepSQL reads a run's key, status, lease and last step (NULLs when it
// has no step).
const lastStepSQL = `SELECT r.rk, r.status, r.lease_owner, r.lease_token, ` + stepColumns + ` FROM runs r
	LEFT JOIN LATERAL (SELECT * FROM steps WHERE rk = r.rk ORDER BY seq DESC LIMIT 1) s ON true WHERE r.id = $1`

// readTail reads the run's last step and verifies it, for the checkpoint of
// step seq, and returns the run's tail and its lease's holder and token.
// When step seq closes a segment it also reads, in the same round trip,
// the steps the segment is built from (verified and opened).
func (s *Postgres) readTail(ctx context.Context, runID string, seq int) (t codec.Tail, owner string, token int64, back []codec.Row, err error) {
	b := &pgx.Batch{}
	b.Queue(lastStepSQL, runID)
	closes := codec.ClosesSegment(seq)
	if closes {
		b.Queue(`SELECT `+stepColumns+` FROM steps s WHERE s.rk = (SELECT rk FROM runs WHERE id = $1) AND s.seq >= $2 AND s.seq < $3 ORDER BY s.seq`,
			runID, int64(max(codec.SegmentStart(seq)-1, 0)), int64(seq))
	}
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if t, owner, token, err = scanLastStep(br.QueryRow(), runID); err != nil {
		return t, "", 0, nil, err
	}
	rk := t.RK
	if closes {
		rows, err := br.Query()
		if err != nil {
			return t, "", 0, nil, err
		}
		if back, err = collectRows(rows); err != nil {
			return t, "", 0, nil, err
		}
		for i := range back {
			if err := back[i].OpenVerified(runID, rk); err != nil {
				return t, "", 0, nil, err
			}
		}
	}
	return t, owner, token, back, br.Close()
}

// scanLastStep reads and verifies the run's last step from row, the result
// of lastStepSQL, and returns the run's tail and its lease's holder and
// token.
func scanLastStep(row pgx.Row, runID string) (t codec.Tail, owner string, token int64, err error) {
	var rk int64
	var status string
	var last codec.Row
	var lseq, count, created, msgSum, sum *int64
	err = row.Scan(&rk, &status, &owner, &token, &lseq, &created, &count, &msgSum, &last.Body, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, "", 0, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return t, "", 0, err
	}
	if lseq == nil {
		return t, "", 0, fmt.Errorf("%w: run %s has no steps", store.ErrCorrupt, runID)
	}
	last.Seq, last.Created, last.MsgCount, last.MsgSum, last.Sum = int(*lseq), *created, int(*count), *msgSum, *sum
	if err := last.Verify(runID, rk); err != nil {
		return t, "", 0, err
	}
	return last.Tail(rk, store.Status(status)), owner, token, nil
}

// readRows reads, verifies and opens the step rows from..to-1 of run rk.
func (s *Postgres) readRows(ctx context.Context, q querier, runID string, rk int64, from, to int) ([]codec.Row, error) {
	if to <= from {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT `+stepColumns+` FROM steps s WHERE s.rk = $1 AND s.seq >= $2 AND s.seq < $3 ORDER BY s.seq`,
		rk, int64(from), int64(to))
	if err != nil {
		return nil, err
	}
	out, err := collectRows(rows)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if err := out[i].OpenVerified(runID, rk); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// collectRows scans step rows (stepColumns) and closes rows.
func collectRows(rows pgx.Rows) ([]codec.Row, error) {
	defer rows.Close()
	var out []codec.Row
	for rows.Next() {
		var r codec.Row
		if err := scanStep(rows, &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// scratch holds the buffers a checkpoint builds its row in (codec.Build),
// reused across checkpoints: pgx copies the arguments into its own buffer
// as it sends them, and nothing the store remembers points into them.
type scratch struct{ buf, spare []byte }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// keep keeps the grown buffers for the next checkpoint, unless they grew
// too large to keep around.
func (sb *scratch) keep(buf, spare []byte) {
	if cap(buf) > cap(sb.buf) && cap(buf) <= 1<<20 {
		sb.buf = buf[:0]
	}
	if cap(spare) > cap(sb.spare) && cap(spare) <= 1<<20 {
		sb.spare = spare[:0]
	}
}
