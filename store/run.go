package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/stepwise-agent/stepwise/core"
)

// Status is where a run stands.
type Status string

// Run statuses. Completed, failed and cancelled are final: an ended run
// takes no more checkpoints. Interrupted and stalled runs are resumable.
const (
	// StatusRunning: a driver holds the run, or held it and died (see
	// RunInfo.Orphaned).
	StatusRunning Status = "running"
	// StatusAwaitingToolResults: paused for the caller's tool results.
	StatusAwaitingToolResults Status = "awaiting_tool_results"
	// StatusInterrupted: stopped by a signal or its context; resumable.
	StatusInterrupted Status = "interrupted"
	// StatusStalled: a transient failure (a model or tool outage)
	// outlasted its retry policy, or an in-doubt call waits for an
	// operator; resumable, from RunInfo.RetryAt on.
	StatusStalled   Status = "stalled"
	StatusCompleted Status = "completed"
	// StatusFailed: ended without an answer (a permanent error, a limit).
	StatusFailed Status = "failed"
	// StatusCancelled: ended by a cancellation (or its deadline).
	StatusCancelled Status = "cancelled"
)

// Statuses lists every status, in the order of a run's life.
var Statuses = []Status{StatusRunning, StatusAwaitingToolResults, StatusInterrupted, StatusStalled, StatusCompleted, StatusFailed, StatusCancelled}

// Valid reports whether s is one of the run statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusRunning, StatusAwaitingToolResults, StatusInterrupted, StatusStalled, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Ended reports whether s is final (completed, failed or cancelled).
func (s Status) Ended() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// statusOf is the run status an action leads to.
func statusOf(a core.Action) Status {
	switch a := a.(type) {
	case core.Complete:
		return StatusCompleted
	case core.Fail:
		if a.Code == core.FailCancelled {
			return StatusCancelled
		}
		return StatusFailed
	case core.RequestExternalToolCalls:
		return StatusAwaitingToolResults
	}
	return StatusRunning
}

// NewRun is a run to create. Initial is its first state, stored as step 0.
type NewRun struct {
	ID         string
	Agent      string
	ConfigHash string
	// Config is the agent's config as the caller records it (JSON), stored
	// as is.
	Config  []byte
	Input   string
	Initial core.State
	// ParentID and ParentStep record, for a fork, the run and step it was
	// forked from. The fork has its own copy of the message log.
	ParentID   string
	ParentStep int
	// Owner, when set, creates the run with its lease held by Owner for
	// LeaseTTL (CreateRun returns it); otherwise the run is created free.
	Owner    string
	LeaseTTL time.Duration
}

// RunInfo describes a stored run.
type RunInfo struct {
	ID         string
	Agent      string
	ConfigHash string
	// Config is the agent config the run is driven by now: the last
	// agent change's (see AgentChanges), else StartConfig.
	Config []byte
	// StartConfig is the agent config the run started with.
	StartConfig []byte
	Input       string
	Status      Status
	Created     time.Time // UTC
	Updated     time.Time // UTC
	// Answer is the final answer of a completed run.
	Answer string
	// FailCode is why a failed run failed.
	FailCode core.FailCode
	// Reason is the failure reason of a failed run, or the reason given to
	// SetStatus (for example why a run was interrupted).
	Reason     string
	ParentID   string
	ParentStep int
	// LastSeq is the sequence number of the last step; Steps counts the
	// steps, step 0 included (LastSeq+1).
	LastSeq int
	Steps   int
	// Lease is the run's lease as stored: Owner is empty when no driver
	// holds it, and an expired one is not held (Lease.Live).
	Lease Lease
	// RetryAt is, for a stalled run, when the next attempt may start.
	RetryAt time.Time
}

// Orphaned reports whether the run is marked running while no live lease
// holds it: its driver died (a process on another host may still be alive
// past its lease; the shell also checks processes on this host).
func (ri RunInfo) Orphaned(now time.Time) bool {
	return ri.Status == StatusRunning && !ri.Lease.Live(now)
}

// Filter selects runs for ListRuns. Zero fields select everything.
type Filter struct {
	Status Status
	// Statuses selects runs with any of these statuses (with Status, any
	// of them or Status).
	Statuses []Status
	Agent    string
	// Limit caps the number of runs returned (0: no cap).
	Limit int
}

// CreateRun stores a new run (status running) and its step 0, the initial
// state, and returns its lease when r.Owner is set (else a zero Lease). An
// id already stored is refused with ErrExists; a fork's parent run and
// step must exist.
func (s *SQLite) CreateRun(ctx context.Context, r NewRun) (Lease, error) {
	if r.ID == "" {
		return Lease{}, errors.New("create run: empty id")
	}
	var lease Lease
	if r.Owner != "" {
		if err := checkRequest(LeaseRequest{Owner: r.Owner, TTL: r.LeaseTTL}); err != nil {
			return Lease{}, fmt.Errorf("create run %s: %w", r.ID, err)
		}
	}
	head, err := encodeHead(nil, r.Initial)
	if err != nil {
		return Lease{}, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	body, msgSum := encodeMessages(nil, r.Initial.Messages)
	if err := checkMessages(body, len(r.Initial.Messages)); err != nil {
		return Lease{}, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	clock := s.now()
	now := clock.UnixNano()
	if r.Owner != "" {
		lease = Lease{RunID: r.ID, Owner: r.Owner, Token: 1, Expires: clock.Add(r.LeaseTTL).UTC()}
	}
	step := stepRow{seq: 0, created: now, msgCount: len(r.Initial.Messages), msgSum: msgSum, head: head, msgs: body}
	var rk int64
	err = s.write(ctx, "create run "+r.ID, func(tx *wtx) error {
		if r.ParentID != "" {
			var last int
			err := tx.QueryRowContext(ctx, `SELECT s.seq FROM runs r JOIN steps s ON s.id = `+lastStepID+` WHERE r.id = ?`, r.ParentID).Scan(&last)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("parent run %s: %w", r.ParentID, ErrNotFound)
			}
			if err != nil {
				return err
			}
			if r.ParentStep < 0 || r.ParentStep > last {
				return fmt.Errorf("parent run %s step %d: %w", r.ParentID, r.ParentStep, ErrNotFound)
			}
		}
		rec := runRow{
			id: r.ID, agent: r.Agent, configHash: r.ConfigHash, config: r.Config, input: r.Input,
			status: StatusRunning, created: now, updated: now, parentID: r.ParentID, parentStep: r.ParentStep,
			lease: lease,
		}
		var err error
		if rk, err = insertRun(ctx, tx, rec); err != nil {
			return err
		}
		return tx.insertStep(&step, rk)
	})
	if err != nil {
		return Lease{}, err
	}
	s.setOpenSegment(rk, (*openSegment)(nil).extend(&step, 0))
	return lease, nil
}

// runRow is a runs row as written by CreateRun and Import.
type runRow struct {
	id, agent, configHash string
	config                []byte
	input                 string
	status                Status
	created, updated      int64
	answer                string
	failCode              core.FailCode
	reason                string
	parentID              string
	parentStep            int
	lease                 Lease
}

// insertRun inserts a run (its steps follow).
func insertRun(ctx context.Context, tx dbtx, r runRow) (int64, error) {
	if r.config == nil {
		r.config = []byte{}
	}
	var expires int64
	if r.lease.Owner != "" {
		expires = r.lease.Expires.UnixNano()
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO runs (id, agent, config_hash, config, input, status, created_ns, updated_ns,
		answer, fail_code, reason, parent_id, parent_step, lease_owner, lease_token, lease_expires_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.id, r.agent, r.configHash, r.config, r.input, string(r.status), r.created, r.updated,
		r.answer, string(r.failCode), r.reason, r.parentID, r.parentStep, r.lease.Owner, r.lease.Token, expires)
	if err != nil {
		var se sqlite3.Error
		if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique {
			return 0, fmt.Errorf("run %s: %w", r.id, ErrExists)
		}
		return 0, err
	}
	return res.LastInsertId()
}

// runSelect reads RunInfo columns; the last step gives LastSeq and, when it
// is later than the run's own update, Updated.
const runSelect = `SELECT r.id, r.agent, r.config_hash,
	coalesce((SELECT a.config FROM agent_changes a WHERE a.rk = r.rk ORDER BY a.ord DESC LIMIT 1), r.config),
	r.input, r.status, r.created_ns, max(r.updated_ns, s.created_ns),
	r.answer, r.fail_code, r.reason, r.parent_id, r.parent_step, s.seq,
	r.retry_ns, r.lease_owner, r.lease_token, r.lease_expires_ns, r.config
	FROM runs r JOIN steps s ON s.id = ` + lastStepID

func scanRun(sc interface{ Scan(...any) error }) (RunInfo, error) {
	var ri RunInfo
	var status, failCode string
	var created, updated, retry, expires int64
	err := sc.Scan(&ri.ID, &ri.Agent, &ri.ConfigHash, &ri.Config, &ri.Input, &status, &created, &updated,
		&ri.Answer, &failCode, &ri.Reason, &ri.ParentID, &ri.ParentStep, &ri.LastSeq,
		&retry, &ri.Lease.Owner, &ri.Lease.Token, &expires, &ri.StartConfig)
	if err != nil {
		return RunInfo{}, err
	}
	if ri.Config == nil {
		ri.Config = []byte{}
	}
	if ri.StartConfig == nil {
		ri.StartConfig = []byte{}
	}
	ri.Status, ri.FailCode = Status(status), core.FailCode(failCode)
	ri.Created, ri.Updated = fromNs(created), fromNs(updated)
	ri.Steps = ri.LastSeq + 1
	ri.Lease.RunID = ri.ID
	if ri.Lease.Owner != "" {
		ri.Lease.Expires = fromNs(expires)
	}
	if retry != 0 {
		ri.RetryAt = fromNs(retry)
	}
	return ri, nil
}

// Run returns the run's description, or ErrNotFound.
func (s *SQLite) Run(ctx context.Context, runID string) (RunInfo, error) {
	ri, err := scanRun(s.r.QueryRowContext(ctx, runSelect+` WHERE r.id = ?`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return RunInfo{}, fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	if err != nil {
		return RunInfo{}, fmt.Errorf("run %s: %w", runID, err)
	}
	return ri, nil
}

// ListRuns returns the runs f selects, newest first (by creation time, then
// by id).
func (s *SQLite) ListRuns(ctx context.Context, f Filter) ([]RunInfo, error) {
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
	q := runSelect
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
	var out []RunInfo
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

// StatusChange is a status set outside a checkpoint (SetStatus).
type StatusChange struct {
	Status Status
	// Reason says why (why a run was interrupted, why it stalled).
	Reason string
	// RetryAt is, for a stalled run, when the next attempt may start
	// (zero: at once).
	RetryAt time.Time
}

// SetStatus sets a run's status and the reason for it (for example
// interrupted, with why), while l is the run's lease (ErrLeaseLost
// otherwise). Completed, failed and cancelled normally come from the
// Complete and Fail actions through Checkpoint; an ended run's status
// cannot change (ErrEnded).
func (s *SQLite) SetStatus(ctx context.Context, l Lease, ch StatusChange) error {
	runID := l.RunID
	s.forgetTail(runID)
	defer s.forgetTail(runID)
	if !ch.Status.Valid() {
		return fmt.Errorf("run %s: set status: unknown status %q", runID, ch.Status)
	}
	var retry int64
	if ch.Status == StatusStalled && !ch.RetryAt.IsZero() {
		retry = ch.RetryAt.UnixNano()
	}
	return s.write(ctx, fmt.Sprintf("run %s: set status %s", runID, ch.Status), func(tx *wtx) error {
		rk, cur, err := fence(ctx, tx, l)
		if err != nil {
			return err
		}
		if cur.Ended() {
			return fmt.Errorf("%w (%s)", ErrEnded, cur)
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, reason = ?, updated_ns = ?, retry_ns = ? WHERE rk = ?`,
			string(ch.Status), ch.Reason, s.now().UnixNano(), retry, rk)
		return err
	})
}

func fromNs(ns int64) time.Time { return time.Unix(0, ns).UTC() }
