package postgres

import (
	"context"
	"sync"
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
// failed as a whole) is sent again alone, by the single fenced insert, whose
// outcome is the step's (Postgres.inserted). Each step of a batch is
// atomic by itself and fenced by its own run's lease.

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

// stepReq is one common checkpoint's fenced insert (stepArgs, then the
// lease's token and holder), waiting in or sent with a batch.
type stepReq struct {
	args []any
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

// stepBatcher queues the common checkpoints of a store.
type stepBatcher struct {
	mu      sync.Mutex
	queue   []*stepReq
	leaders int
	// batches and largest count what was sent, for tests.
	batches, largest int
}

var stepReqs = sync.Pool{New: func() any { return &stepReq{lead: make(chan bool, 1)} }}

// insertStep inserts a common checkpoint's step (args as stepArgs gives
// them, then the lease's token and holder), alone or with others, and
// reports its outcome as the single fenced insert does (Postgres.inserted).
func (s *Postgres) insertStep(ctx context.Context, args []any) (rowsAffected int64, err error) {
	r := stepReqs.Get().(*stepReq)
	defer func() {
		r.args, r.sent, r.n, r.err = nil, false, 0, nil
		stepReqs.Put(r)
	}()
	r.args = args
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
	for batch != nil {
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
		batch = nil
		if next != nil {
			next.lead <- true
		}
	}
	if r.sent {
		return r.n, r.err
	}
	// Not inserted by a batch: the single insert tells why, or inserts it.
	ct, err := s.pool.Exec(ctx, fencedInsertStepSQL, args...)
	return ct.RowsAffected(), err
}

// sendSteps inserts a batch's steps in one statement and marks those
// inserted. A batch of one is the single fenced insert itself.
func (s *Postgres) sendSteps(ctx context.Context, batch []*stepReq) {
	if len(batch) == 1 {
		q := batch[0]
		ct, err := s.pool.Exec(ctx, fencedInsertStepSQL, q.args...)
		q.sent, q.n, q.err = true, ct.RowsAffected(), err
		return
	}
	n := len(batch)
	rk, seq, created, count, msgSum, sum, token := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	body, owner := make([][]byte, n), make([]string, n)
	type key struct{ rk, seq int64 }
	index := make(map[key]*stepReq, n)
	for i, q := range batch {
		a := q.args
		rk[i], seq[i], created[i], count[i], msgSum[i], body[i], sum[i], token[i], owner[i] =
			a[0].(int64), a[1].(int64), a[2].(int64), a[3].(int64), a[4].(int64), a[5].([]byte), a[6].(int64), a[7].(int64), a[8].(string)
		index[key{rk[i], seq[i]}] = q
	}
	rows, err := s.pool.Query(ctx, batchInsertStepsSQL, rk, seq, created, count, msgSum, body, sum, token, owner)
	if err != nil {
		return // each step is sent again alone
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
	if rows.Err() != nil {
		// The statement failed, or its outcome is unknown: a step it may
		// have inserted, sent again alone, finds its seq taken and learns
		// that as a stale tail would (ErrSeq).
		return
	}
	for _, q := range inserted {
		q.sent, q.n = true, 1
	}
}
