package postgres

import (
	"context"
	"sync"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// The common checkpoints of different runs that arrive together are sent
// together: one statement, one round trip and one commit (one WAL flush)
// for all of them, where each took its own (ADR 0038). A writer that
// finds fewer than stepLeaders batches in flight sends its step at once,
// with those that queued meanwhile; the others queue, and the first of
// them leads the next batch when one returns.
//
// The batch is only a faster way to the same outcome: a step it did not
// insert (its lease is not the run's, or its seq is taken; or the batch
// was rolled back as a whole) is sent again alone, by the single fenced
// insert, whose outcome is the step's (Postgres.inserted); a batch whose
// outcome is unknown gives its steps the error that says so, as the single
// insert would (sendSteps). Each step of a batch is atomic by itself and
// fenced by its own run's lease.

// batchInsertStepsSQL is fencedInsertStepSQL for many steps: each row is
// inserted when its run's lease is the one given, and a row whose (rk,
// seq) is taken is skipped; it returns the rows inserted.
const batchInsertStepsSQL = `INSERT INTO steps (rk, seq, created_ns, msg_count, msg_sum, body, sum)
	SELECT v.rk, v.seq, v.created_ns, v.msg_count, v.msg_sum, v.body, v.sum
	FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bytea[], $7::bigint[], $8::bigint[], $9::text[])
		AS v (rk, seq, created_ns, msg_count, msg_sum, body, sum, token, owner)
	JOIN runs r ON r.rk = v.rk AND r.lease_token = v.token AND r.lease_owner = v.owner
	ORDER BY v.rk
	FOR SHARE OF r
	ON CONFLICT (rk, seq) DO NOTHING
	RETURNING rk, seq`

// stepLeaders is how many batches may be in flight at once: a second
// overlaps the first's round trip and commit, where a writer alone would
// wait for both.
const stepLeaders = 2

// stepReq is one common checkpoint's fenced insert: its row's columns and
// the lease's token and holder, waiting in or sent with a batch.
type stepReq struct {
	rk, seq, created, count, msgSum, sum, token int64
	body                                        []byte
	owner                                       string
	// sent: the step's outcome is n rows inserted, or err (a batch of
	// one, or a step a larger batch inserted).
	sent bool
	n    int64
	err  error
	// lead: true when a batch returned and this writer leads the next,
	// the steps in batch; false when a batch sent this one.
	lead  chan bool
	batch []*stepReq
}

// set makes q the insert of row in run rk under the lease l, setting
// row's checksum.
func (q *stepReq) set(row *codec.Row, rk int64, l store.Lease) {
	row.Sum = codec.StepSum(rk, row)
	q.rk, q.seq, q.created, q.count, q.msgSum, q.body, q.sum = rk, int64(row.Seq), row.Created, int64(row.MsgCount), row.MsgSum, nonNil(row.Body), row.Sum
	q.token, q.owner = l.Token, l.Owner
}

// args are fencedInsertStepSQL's arguments for q.
func (q *stepReq) args() []any {
	return []any{q.rk, q.seq, q.created, q.count, q.msgSum, q.body, q.sum, q.token, q.owner}
}

// stepBatcher queues the common checkpoints of a store.
type stepBatcher struct {
	mu      sync.Mutex
	queue   []*stepReq
	leaders int
	// batches and largest count what was sent, for tests.
	batches, largest int
}

var stepReqs = sync.Pool{New: func() any { return &stepReq{lead: make(chan bool, 1)} }}

// insertStep inserts a common checkpoint's step, row of run rk under the
// lease l, alone or with others, and reports its outcome as the single
// fenced insert does (Postgres.inserted).
func (s *Postgres) insertStep(ctx context.Context, row *codec.Row, rk int64, l store.Lease) (rowsAffected int64, err error) {
	r := stepReqs.Get().(*stepReq)
	defer func() {
		r.body, r.sent, r.n, r.err = nil, false, 0, nil
		stepReqs.Put(r)
	}()
	r.set(row, rk, l)
	b := &s.steps
	b.mu.Lock()
	var batch []*stepReq
	if b.leaders < stepLeaders {
		b.leaders++
		batch = append(b.queue, r)
		b.queue = nil
		b.mu.Unlock()
	} else {
		b.queue = append(b.queue, r)
		b.mu.Unlock()
		if <-r.lead {
			batch, r.batch = r.batch, nil // a leader's place passed on, with the queue
		}
	}
	if batch != nil {
		b.mu.Lock()
		b.batches++
		b.largest = max(b.largest, len(batch))
		b.mu.Unlock()
		s.sendSteps(ctx, batch)
		b.mu.Lock()
		var next *stepReq
		if len(b.queue) > 0 {
			// The first writer queued leads the next batch, the queue
			// handed to it whole: no other leader takes it meanwhile.
			next = b.queue[0]
			next.batch, b.queue = b.queue, nil
		} else {
			b.leaders--
		}
		b.mu.Unlock()
		for _, q := range batch {
			if q != r {
				q.lead <- false
			}
		}
		if next != nil {
			next.lead <- true
		}
	}
	if r.sent {
		return r.n, r.err
	}
	// Not inserted by a batch: the single insert tells why, or inserts it.
	ct, err := s.pool.Exec(ctx, fencedInsertStepSQL, r.args()...)
	return ct.RowsAffected(), err
}

// sendSteps inserts a batch's steps in one statement and marks those
// inserted. A batch of one is the single fenced insert itself.
//
// Two writers of one step (a driver that lost its run and the run's new
// holder, in one process) never go in one batch: a returned row names its
// step by (rk, seq) alone, which would not tell whose insert it was. The
// later is left out, and sent again alone.
//
// A batch that fails as a whole is rolled back, or its commit's outcome is
// unknown (the connection was lost). In the first case each step is sent
// again alone. In the second, which store.Unavailable recognizes, each
// step gets that error, as the single insert would: sent again, a step
// the batch did commit would find its seq taken and take it for a stale
// tail (ErrSeq), where the caller's retry of an unavailable store learns
// it was written.
func (s *Postgres) sendSteps(ctx context.Context, batch []*stepReq) {
	if len(batch) == 1 {
		q := batch[0]
		ct, err := s.pool.Exec(ctx, fencedInsertStepSQL, q.args()...)
		q.sent, q.n, q.err = true, ct.RowsAffected(), err
		return
	}
	type key struct{ rk, seq int64 }
	index := make(map[key]*stepReq, len(batch))
	sent := make([]*stepReq, 0, len(batch))
	for _, q := range batch {
		if k := (key{q.rk, q.seq}); index[k] == nil {
			index[k] = q
			sent = append(sent, q)
		}
	}
	n := len(sent)
	rk, seq, created, count, msgSum, sum, token := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	body, owner := make([][]byte, n), make([]string, n)
	for i, q := range sent {
		rk[i], seq[i], created[i], count[i], msgSum[i], body[i], sum[i], token[i], owner[i] =
			q.rk, q.seq, q.created, q.count, q.msgSum, q.body, q.sum, q.token, q.owner
	}
	failed := func(err error) {
		if store.Unavailable(err) {
			for _, q := range sent {
				q.sent, q.n, q.err = true, 0, err
			}
		}
	}
	rows, err := s.pool.Query(ctx, batchInsertStepsSQL, rk, seq, created, count, msgSum, body, sum, token, owner)
	if err != nil {
		failed(err)
		return
	}
	var inserted []*stepReq
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.rk, &k.seq); err != nil {
			break
		}
		if q := index[k]; q != nil {
			inserted = append(inserted, q)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		failed(err)
		return
	}
	for _, q := range inserted {
		q.sent, q.n = true, 1
	}
}
