package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/mattn/go-sqlite3"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// CreateRun stores a new run (see store.Runs).
func (s *SQLite) CreateRun(ctx context.Context, r store.NewRun) (store.Lease, error) {
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
	var rk int64
	err = s.write(ctx, "create run "+r.ID, func(tx *wtx) error {
		if r.ParentID != "" {
			var last int
			err := tx.QueryRowContext(ctx, `SELECT s.seq FROM runs r JOIN steps s ON s.id = `+lastStepID+` WHERE r.id = ?`, r.ParentID).Scan(&last)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("parent run %s: %w", r.ParentID, store.ErrNotFound)
			}
			if err != nil {
				return err
			}
			if r.ParentStep < 0 || r.ParentStep > last {
				return fmt.Errorf("parent run %s step %d: %w", r.ParentID, r.ParentStep, store.ErrNotFound)
			}
		}
		rec := codec.RunRow{
			ID: r.ID, Agent: r.Agent, ConfigHash: r.ConfigHash, Config: r.Config, Input: r.Input,
			Status: store.StatusRunning, Created: now, Updated: now, ParentID: r.ParentID, ParentStep: r.ParentStep,
			Lease: lease, Turns: r.Initial.UserTurns(),
		}
		var err error
		if rk, err = s.insertRun(ctx, tx, rec); err != nil {
			return err
		}
		if step.NewBlob != nil {
			if err := s.putBlob(ctx, tx, step.Blob, step.NewBlob); err != nil {
				return err
			}
		}
		return tx.insertStep(&step, rk)
	})
	if err != nil {
		return store.Lease{}, err
	}
	// This store wrote step 0: its first checkpoint need not read it
	// back, and takes the common path (a run created held had its first
	// checkpoint read its tail and commit synced).
	s.cache.SetOpenSegment(rk, (*codec.OpenSegment)(nil).Extend(&step, 0))
	s.cache.SetTail(r.ID, step.Tail(rk, store.StatusRunning))
	return lease, nil
}

// insertRun inserts a run (its steps follow), its config stored once
// when large enough.
func (s *SQLite) insertRun(ctx context.Context, tx *wtx, r codec.RunRow) (int64, error) {
	config, ref, err := s.splitConfig(ctx, tx, r.Config)
	if err != nil {
		return 0, err
	}
	if config == nil {
		config = []byte{}
	}
	var expires, ttl int64
	if r.Lease.Owner != "" {
		// A new run's lease was taken at its creation time: its TTL is
		// what separates them (the heartbeat's watchers need it).
		expires, ttl = r.Lease.Expires.UnixNano(), r.Lease.Expires.UnixNano()-r.Created
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO runs (id, agent, config_hash, config, config_ref, input, status, created_ns, updated_ns,
		answer, fail_code, reason, parent_id, parent_step, retry_ns, lease_owner, lease_token, lease_expires_ns, lease_ttl_ns, turns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Agent, r.ConfigHash, config, ref, r.Input, string(r.Status), r.Created, r.Updated,
		r.Answer, string(r.FailCode), r.Reason, r.ParentID, r.ParentStep, r.Retry, r.Lease.Owner, r.Lease.Token, expires, ttl, r.Turns)
	if err != nil {
		var se sqlite3.Error
		if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique {
			return 0, fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
		}
		return 0, err
	}
	return res.LastInsertId()
}

// runSelect reads RunInfo columns; the last step gives LastSeq (a step's
// id is the run's key << 32 plus its seq) and, when it is later than the
// run's own update, Updated. The last step is read by scalar subqueries,
// not joined: SQLite runs a join on a correlated subquery several times
// slower (BenchmarkRun), and a server reads a run on most requests.
var runSelect = `SELECT r.id, r.agent, r.config_hash,
	` + currentConfig + `,
	r.input, r.status, r.created_ns,
	max(r.updated_ns, (SELECT created_ns FROM steps WHERE id BETWEEN r.rk << 32 AND (r.rk << 32) + 4294967295 ORDER BY id DESC LIMIT 1)),
	r.answer, r.fail_code, r.reason, r.parent_id, r.parent_step, ` + lastStepID + ` - (r.rk << 32),
	r.retry_ns, r.lease_owner, r.lease_token, r.lease_expires_ns, ` + startConfig + `, r.cancel_reason, r.stall_attempts, r.takeovers, r.turns, r.inbox_n
	FROM runs r`

// runByID is runSelect of one run, built once: a server reads a run on
// most requests.
var runByID = runSelect + ` WHERE r.id = ?`

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
var listSelect = strings.NewReplacer(currentConfig, `x''`, startConfig+`, r.cancel_reason`, `x'', r.cancel_reason`).Replace(runSelect)

func scanRun(sc interface{ Scan(...any) error }) (store.RunInfo, error) {
	var ri store.RunInfo
	var status, failCode, takeovers string
	var created, updated, retry, expires int64
	err := sc.Scan(&ri.ID, &ri.Agent, &ri.ConfigHash, &ri.Config, &ri.Input, &status, &created, &updated,
		&ri.Answer, &failCode, &ri.Reason, &ri.ParentID, &ri.ParentStep, &ri.LastSeq,
		&retry, &ri.Lease.Owner, &ri.Lease.Token, &expires, &ri.StartConfig, &ri.CancelReason, &ri.StallAttempts, &takeovers, &ri.Turns, &ri.Posted)
	if err != nil {
		return store.RunInfo{}, err
	}
	if ri.Config == nil || ri.StartConfig == nil {
		return store.RunInfo{}, fmt.Errorf("%w: run %s: its agent's config, stored once by digest, is missing", store.ErrCorrupt, ri.ID)
	}
	ri.Status, ri.FailCode = store.Status(status), core.FailCode(failCode)
	ri.Created, ri.Updated = fromNs(created), fromNs(updated)
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
func (s *SQLite) Run(ctx context.Context, runID string) (store.RunInfo, error) {
	ri, err := scanRun(s.r.QueryRowContext(ctx, runByID, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.RunInfo{}, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return store.RunInfo{}, fmt.Errorf("run %s: %w", runID, err)
	}
	return ri, nil
}

// ListRuns returns the runs f selects, newest first (by creation time, then
// by id).
func (s *SQLite) ListRuns(ctx context.Context, f store.Filter) ([]store.RunInfo, error) {
	var where []string
	var args []any
	statuses := f.Statuses
	if f.Status != "" {
		statuses = append(statuses[:len(statuses):len(statuses)], f.Status)
	}
	if len(statuses) > 0 {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(statuses)), ", ")
		where = append(where, "r.status IN ("+marks+")")
		for _, st := range statuses {
			args = append(args, string(st))
		}
	}
	if f.Agent != "" {
		where, args = append(where, "r.agent = ?"), append(args, f.Agent)
	}
	if f.Parent != "" {
		where, args = append(where, "r.parent_id = ?"), append(args, f.Parent)
	}
	if c := f.Before; c != nil {
		ns := c.Created.UnixNano()
		where, args = append(where, "(r.created_ns < ? OR (r.created_ns = ? AND r.id > ?))"), append(args, ns, ns, c.ID)
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
		q, args = q+` LIMIT ?`, append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
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

// SetStatus sets a run's status outside a checkpoint (see store.Runs).
func (s *SQLite) SetStatus(ctx context.Context, l store.Lease, ch store.StatusChange) error {
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
	return s.write(ctx, fmt.Sprintf("run %s: set status %s", runID, ch.Status), func(tx *wtx) error {
		rk, cur, err := fence(ctx, tx, l)
		if err != nil {
			return err
		}
		if cur.Ended() {
			return fmt.Errorf("%w (%s)", store.ErrEnded, cur)
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?1, reason = ?2, updated_ns = ?3, retry_ns = ?4, stall_attempts = `+stallAttemptsSQL+` WHERE rk = ?6`,
			string(ch.Status), ch.Reason, s.now().UnixNano(), retry, ch.StallAttempts, rk)
		return err
	})
}

// stallAttemptsSQL is the stall count SetStatus writes, from the new
// status (?1) and StatusChange.StallAttempts (?5; see there).
const stallAttemptsSQL = `CASE ?1 WHEN 'stalled' THEN (CASE WHEN ?5 > 0 THEN ?5 ELSE stall_attempts + 1 END)
	WHEN 'interrupted' THEN stall_attempts ELSE max(?5, 0) END`
