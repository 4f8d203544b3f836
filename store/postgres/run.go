package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// CreateRun stores a new run (see store.Runs): the run's row and its step 0
// in one statement (createRunSQL), or in one transaction when a body is
// stored once for the first time or a fork's parent is checked.
func (s *Postgres) CreateRun(ctx context.Context, r store.NewRun) (store.Lease, error) {
	if r.ID == "" {
		return store.Lease{}, errors.New("create run: empty id")
	}
	if r.Owner != "" {
		if err := (store.LeaseRequest{Owner: r.Owner, TTL: r.LeaseTTL}).Check(); err != nil {
			return store.Lease{}, fmt.Errorf("create run %s: %w", r.ID, err)
		}
	}
	clock := s.now()
	now := clock.UnixNano()
	step, err := codec.Initial(r.Initial, now, &s.blobs)
	if err != nil {
		return store.Lease{}, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	var lease store.Lease
	if r.Owner != "" {
		lease = store.Lease{RunID: r.ID, Owner: r.Owner, Token: 1, Expires: clock.Add(r.LeaseTTL).UTC()}
	}
	rec := codec.RunRow{
		ID: r.ID, Agent: r.Agent, ConfigHash: r.ConfigHash, Config: r.Config, Input: r.Input,
		Status: store.StatusRunning, Created: now, Updated: now, ParentID: r.ParentID, ParentStep: r.ParentStep,
		Lease: lease, Turns: r.Initial.UserTurns(),
	}
	if r.ParentID == "" && step.NewBlob == nil {
		if inline, ref, fresh := s.blobs.SplitConfig(r.Config); fresh == nil {
			// The common create: no parent to check, no body to store
			// once. One statement, under a key taken beforehand.
			rk, err := s.nextRK(ctx)
			if err != nil {
				return store.Lease{}, fmt.Errorf("create run %s: %w", r.ID, err)
			}
			var expires int64
			err = s.pool.QueryRow(ctx, createRunSQL, append(runArgs(rec, inline, ref), stepArgs(&step, rk)...)...).Scan(&expires)
			if uniqueViolation(err, "runs_id_key") {
				err = fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
			}
			if err != nil {
				return store.Lease{}, fmt.Errorf("create run %s: %w", r.ID, err)
			}
			return s.created(r.ID, rk, &step, lease, expires), nil
		}
	}
	// Else one round trip begins the transaction and inserts the run (and
	// the bodies stored once, the parent's check); the step, which needs
	// the run's key, is the second; the commit the third.
	var rk, expires int64
	var queued queuedRun
	blobs := &blobWrites{s: s}
	err = s.inTx(ctx, "", pgx.TxOptions{}, func(b *pgx.Batch) {
		if r.ParentID != "" {
			// Steps are never removed: the parent's step, once seen,
			// stays.
			b.Queue(`SELECT (SELECT max(seq) FROM steps WHERE rk = r.rk) FROM runs r WHERE r.id = $1`, r.ParentID)
		}
		queued = queueRun(b, rec, blobs)
		if step.NewBlob != nil {
			blobs.queue(b, step.Blob, step.NewBlob)
		}
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		if r.ParentID != "" {
			var last *int64
			err := br.QueryRow().Scan(&last)
			if errors.Is(err, pgx.ErrNoRows) || err == nil && last == nil {
				return fmt.Errorf("parent run %s: %w", r.ParentID, store.ErrNotFound)
			}
			if err != nil {
				return err
			}
			if r.ParentStep < 0 || int64(r.ParentStep) > *last {
				return fmt.Errorf("parent run %s step %d: %w", r.ParentID, r.ParentStep, store.ErrNotFound)
			}
		}
		var err error
		if rk, expires, err = queued.scan(br); err != nil {
			return err
		}
		if step.NewBlob != nil {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("store a shared body: %w", err)
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, insertStepSQL, stepArgs(&step, rk)...)
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	blobs.committed()
	return s.created(r.ID, rk, &step, lease, expires), nil
}

// created remembers what a store that created run id under the key rk
// knows of it (step 0 was its last step: its first checkpoint need not read
// it back), and returns its lease, which expires at expires (ns; none when
// the run is not held).
func (s *Postgres) created(id string, rk int64, step *codec.Row, lease store.Lease, expires int64) store.Lease {
	s.cache.SetOpenSegment(rk, (*codec.OpenSegment)(nil).Extend(step, 0))
	s.cache.SetTail(id, step.Tail(rk, store.StatusRunning))
	if lease.Owner != "" {
		lease.Expires = fromNs(expires)
	}
	return lease
}

// rkBlock is how many run keys a store takes from the runs' sequence at a
// time, for its creates (nextRK).
const rkBlock = 64

// rkPool holds the run keys a store took and has not used.
type rkPool struct {
	mu   sync.Mutex
	free []int64
}

// nextRK is a run key no other run has or will have: taken from the runs'
// sequence, rkBlock at a time (one round trip per rkBlock creates). Keys
// a store took and never used (it closed, its process died, a create was
// refused) are skipped; keys say nothing of creation order across stores.
func (s *Postgres) nextRK(ctx context.Context) (int64, error) {
	p := &s.rks
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		rows, err := s.pool.Query(ctx, `SELECT nextval(pg_get_serial_sequence('runs', 'rk')) FROM generate_series(1, $1)`, rkBlock)
		if err != nil {
			return 0, fmt.Errorf("take run keys: %w", err)
		}
		keys, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return 0, fmt.Errorf("take run keys: %w", err)
		}
		p.free = keys
	}
	rk := p.free[0]
	p.free = p.free[1:]
	return rk, nil
}

// insertRun inserts a run (its steps follow), its config stored once
// through blobs when large enough, and returns its key and its lease's
// expiry. A held lease's expiry is set by the server's clock
// (serverNowNs): its TTL is what separates r.Lease.Expires from r.Created.
func insertRun(ctx context.Context, tx pgx.Tx, r codec.RunRow, blobs *blobWrites) (rk, expires int64, err error) {
	b := &pgx.Batch{}
	q := queueRun(b, r, blobs)
	br := tx.SendBatch(ctx, b)
	if rk, expires, err = q.scan(br); err != nil {
		br.Close()
		return 0, 0, err
	}
	return rk, expires, br.Close()
}

// queuedRun is a run's insert queued in a batch (queueRun).
type queuedRun struct {
	id   string
	blob bool // the config's body is queued first
}

// queueRun queues insertRun's statements in b: the config's body, when
// fresh, then the run's row.
func queueRun(b *pgx.Batch, r codec.RunRow, blobs *blobWrites) queuedRun {
	inline, ref, fresh := blobs.s.blobs.SplitConfig(r.Config)
	if fresh != nil {
		blobs.queue(b, ref, fresh)
	}
	b.Queue(insertRunSQL+` RETURNING rk, lease_expires_ns`, runArgs(r, inline, ref)...)
	return queuedRun{id: r.ID, blob: fresh != nil}
}

// runColumns and runValues insert a run's row from runArgs. A held lease's
// expiry is set by the server's clock (serverNowNs) from its TTL ($17).
const (
	runColumns = `id, agent, config_hash, config, input, status, created_ns, updated_ns,
		answer, fail_code, reason, parent_id, parent_step, retry_ns, lease_owner, lease_token, lease_expires_ns, turns, config_ref`
	runValues = `$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
		CASE WHEN $15 = '' THEN 0 ELSE ` + serverNowNs + ` + $17::bigint END, $18, $19`
)

// insertRunSQL inserts a run's row, its key from the runs' sequence.
const insertRunSQL = `INSERT INTO runs (` + runColumns + `) VALUES (` + runValues + `)`

// createRunSQL creates a run in one statement, in autocommit (one round
// trip, atomic by itself): the run's row under the key $20, taken from the
// runs' sequence beforehand (Postgres.nextRK), and its step 0, whose
// checksum covers the key ($20-$26: insertStepSQL's arguments). It returns
// the lease's expiry.
const createRunSQL = `WITH run AS (INSERT INTO runs (` + runColumns + `, rk) OVERRIDING SYSTEM VALUE
		VALUES (` + runValues + `, $20) RETURNING lease_expires_ns)
	INSERT INTO steps (rk, seq, created_ns, msg_count, msg_sum, body, sum) SELECT $20, $21, $22, $23, $24, $25, $26 FROM run
	RETURNING (SELECT lease_expires_ns FROM run)`

// runArgs are runValues' arguments for r, its config split into inline
// and ref (codec.Blobs.SplitConfig).
func runArgs(r codec.RunRow, inline, ref []byte) []any {
	var ttl int64
	if r.Lease.Owner != "" {
		ttl = r.Lease.Expires.UnixNano() - r.Created
	}
	return []any{r.ID, r.Agent, r.ConfigHash, nonNil(inline), []byte(r.Input), string(r.Status), r.Created, r.Updated,
		[]byte(r.Answer), string(r.FailCode), []byte(r.Reason), r.ParentID, int64(r.ParentStep), r.Retry,
		r.Lease.Owner, r.Lease.Token, ttl, int64(r.Turns), ref}
}

// scan reads the results of the run's queued statements from br: its key
// and its lease's expiry.
func (q queuedRun) scan(br pgx.BatchResults) (rk, expires int64, err error) {
	if q.blob {
		if _, err := br.Exec(); err != nil {
			return 0, 0, fmt.Errorf("store a shared body: %w", err)
		}
	}
	err = br.QueryRow().Scan(&rk, &expires)
	if uniqueViolation(err, "runs_id_key") {
		return 0, 0, fmt.Errorf("run %s: %w", q.id, store.ErrExists)
	}
	return rk, expires, err
}

// lastStepJoin joins the run r's last step as s (none for a run without
// steps, which only a corrupt database holds).
const lastStepJoin = ` JOIN LATERAL (SELECT seq, created_ns FROM steps WHERE rk = r.rk ORDER BY seq DESC LIMIT 1) s ON true`

// runSelect reads RunInfo columns; the last step gives LastSeq and, when it
// is later than the run's own update, Updated.
var runSelect = `SELECT r.id, r.agent, r.config_hash,
	` + currentConfig + `,
	r.input, r.status, r.created_ns, greatest(r.updated_ns, s.created_ns),
	r.answer, r.fail_code, r.reason, r.parent_id, r.parent_step, s.seq,
	r.retry_ns, r.lease_owner, r.lease_token, r.lease_expires_ns, ` + startConfig + `, r.cancel_reason, r.stall_attempts, r.takeovers, r.turns, r.inbox_n
	FROM runs r` + lastStepJoin

// startConfig is the column of RunInfo.StartConfig, currentConfig that of
// RunInfo.Config: each stored inline or by digest (storedConfig), NULL
// when its body is missing (ErrCorrupt from scanRun). The last agent
// change's config is the current one when there is a change, never the
// start config in place of one whose body is missing.
var (
	startConfig   = storedConfig("r")
	currentConfig = `CASE WHEN EXISTS (SELECT 1 FROM agent_changes a WHERE a.rk = r.rk) THEN (SELECT ` + storedConfig("a") +
		` FROM agent_changes a WHERE a.rk = r.rk ORDER BY a.ord DESC LIMIT 1) ELSE ` + startConfig + ` END`
)

// listSelect is runSelect for a listing that reads no configs
// (store.Filter.WithConfig false): an empty blob stands for each.
var listSelect = strings.NewReplacer(currentConfig, `''::bytea`, startConfig+`, r.cancel_reason`, `''::bytea, r.cancel_reason`).Replace(runSelect)

func scanRun(sc interface{ Scan(...any) error }) (store.RunInfo, error) {
	var ri store.RunInfo
	var status, failCode string
	var input, answer, reason, cancel []byte
	var takeovers string
	var created, updated, retry, expires, parentStep, lastSeq, stalls, turns, posted int64
	err := sc.Scan(&ri.ID, &ri.Agent, &ri.ConfigHash, &ri.Config, &input, &status, &created, &updated,
		&answer, &failCode, &reason, &ri.ParentID, &parentStep, &lastSeq,
		&retry, &ri.Lease.Owner, &ri.Lease.Token, &expires, &ri.StartConfig, &cancel, &stalls, &takeovers, &turns, &posted)
	if err != nil {
		return store.RunInfo{}, err
	}
	if ri.Config == nil || ri.StartConfig == nil {
		return store.RunInfo{}, fmt.Errorf("%w: run %s: its agent's config, stored once by digest, is missing", store.ErrCorrupt, ri.ID)
	}
	ri.Input, ri.Answer, ri.Reason, ri.CancelReason = string(input), string(answer), string(reason), string(cancel)
	ri.Status, ri.FailCode = store.Status(status), core.FailCode(failCode)
	ri.Created, ri.Updated = fromNs(created), fromNs(updated)
	ri.ParentStep, ri.LastSeq, ri.StallAttempts, ri.Turns, ri.Posted = int(parentStep), int(lastSeq), int(stalls), int(turns), int(posted)
	ri.Steps = ri.LastSeq + 1
	ri.Lease.RunID = ri.ID
	if ri.Lease.Owner != "" {
		ri.Lease.Expires = fromNs(expires)
	}
	if retry != 0 {
		ri.RetryAt = fromNs(retry)
	}
	if takeovers != "" {
		ri.TakeOvers = strings.Split(takeovers, "\n")
	}
	return ri, nil
}

// Run returns the run's description, or ErrNotFound.
func (s *Postgres) Run(ctx context.Context, runID string) (store.RunInfo, error) {
	ri, err := scanRun(s.pool.QueryRow(ctx, runSelect+` WHERE r.id = $1`, runID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.RunInfo{}, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return store.RunInfo{}, fmt.Errorf("run %s: %w", runID, err)
	}
	return ri, nil
}

// ListRuns returns the runs f selects, newest first (by creation time, then
// by id).
func (s *Postgres) ListRuns(ctx context.Context, f store.Filter) ([]store.RunInfo, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	statuses := f.Statuses
	if f.Status != "" {
		statuses = append(statuses[:len(statuses):len(statuses)], f.Status)
	}
	if len(statuses) > 0 {
		list := make([]string, len(statuses))
		for i, st := range statuses {
			list[i] = string(st)
		}
		where = append(where, "r.status = ANY ("+arg(list)+"::text[])")
	}
	if f.Agent != "" {
		where = append(where, "r.agent = "+arg(f.Agent))
	}
	if f.Parent != "" {
		where = append(where, "r.parent_id = "+arg(f.Parent))
	}
	if c := f.Before; c != nil {
		ns, id := arg(c.Created.UnixNano()), arg(c.ID)
		where = append(where, "(r.created_ns < "+ns+" OR (r.created_ns = "+ns+" AND r.id > "+id+"))")
	}
	q := listSelect
	if f.WithConfig {
		q = runSelect
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY r.created_ns DESC, r.id`
	if f.Limit > 0 {
		q += ` LIMIT ` + arg(int64(f.Limit))
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []store.RunInfo
	for rows.Next() {
		ri, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, ri)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// SetStatus sets a run's status outside a checkpoint (see store.Runs): one
// statement, conditional on the lease and on the run not having ended.
func (s *Postgres) SetStatus(ctx context.Context, l store.Lease, ch store.StatusChange) error {
	runID := l.RunID
	s.cache.ForgetTail(runID)
	defer s.cache.ForgetTail(runID)
	if !ch.Status.Valid() {
		return fmt.Errorf("run %s: set status: unknown status %q", runID, ch.Status)
	}
	var retry int64
	if ch.Status == store.StatusStalled && !ch.RetryAt.IsZero() {
		retry = ch.RetryAt.UnixNano()
	}
	what := fmt.Sprintf("run %s: set status %s", runID, ch.Status)
	if l.Owner == "" {
		return fmt.Errorf("%s: %w", what, explainFence(ctx, s.pool, l, false))
	}
	ct, err := s.pool.Exec(ctx, `UPDATE runs SET status = $1, reason = $2, updated_ns = $3, retry_ns = $4,
		stall_attempts = CASE $1 WHEN 'stalled' THEN (CASE WHEN $8 > 0 THEN $8 ELSE stall_attempts + 1 END)
			WHEN 'interrupted' THEN stall_attempts ELSE greatest($8, 0) END
		WHERE id = $5 AND lease_owner = $6 AND lease_token = $7 AND status NOT IN ('completed', 'failed', 'cancelled')`,
		string(ch.Status), []byte(ch.Reason), s.now().UnixNano(), retry, runID, l.Owner, l.Token, int64(ch.StallAttempts))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if ct.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", what, explainFence(ctx, s.pool, l, true))
	}
	return nil
}
