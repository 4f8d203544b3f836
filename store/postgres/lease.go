package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// serverNowNs is the server's clock in nanoseconds since the epoch (to the
// microsecond) when the statement started: lease expiries are written and
// judged by it, in the statements that take or renew a lease, so that
// contenders on hosts whose clocks disagree agree on when a lease lapses
// (docs/adr/0027-one-clock.md). It is stable within a statement, so the
// claim's condition on it can use the index runs_claimable.
const serverNowNs = `(extract(epoch from statement_timestamp()) * 1000000000)::bigint`

// Acquire takes the run's lease (see store.Runs). A free lease is taken by
// one conditional update (acquireFree). Otherwise it reads the lease with
// the run's row locked (FOR UPDATE); the holder named by
// req.TakeOver is taken at once, a held one only by an update conditional
// on its expiry having passed by the server's clock. The new holder and
// token are written in the same transaction; a fenced step insert (FOR
// SHARE) waits for it or it waits for the insert, so nothing is written by
// the old holder once the new one holds the run.
func (s *Postgres) Acquire(ctx context.Context, runID string, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Check(); err != nil {
		return store.Lease{}, fmt.Errorf("run %s: acquire lease: %w", runID, err)
	}
	// A new holder reads the run's last step back rather than trusting
	// what this store remembers of it: in the same round trip as the
	// lease, with the run's row locked (no step can be appended until the
	// lease changes hands), and remembered once the lease is taken, so
	// that the holder's first checkpoint is one insert.
	s.cache.ForgetTail(runID)
	if out, ok, err := s.acquireFree(ctx, runID, req); err != nil || ok {
		if err != nil {
			return store.Lease{}, fmt.Errorf("run %s: acquire lease: %w", runID, err)
		}
		return out, nil
	}
	var out store.Lease
	var tail codec.Tail
	var tailErr error
	err := s.inTx(ctx, "", pgx.TxOptions{}, func(b *pgx.Batch) {
		b.Queue(`SELECT lease_owner, lease_token, lease_expires_ns FROM runs WHERE id = $1 FOR UPDATE`, runID)
		b.Queue(lastStepSQL, runID)
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		var cur store.Lease
		var expires int64
		err := br.QueryRow().Scan(&cur.Owner, &cur.Token, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		tail, _, _, tailErr = scanLastStep(br.QueryRow(), runID)
		if err := br.Close(); err != nil {
			return err
		}
		cur.RunID, cur.Expires = runID, fromNs(expires)
		out = store.Lease{RunID: runID, Owner: req.Owner, Token: cur.Token + 1}
		// The row is locked: only time changes until the update, which
		// judges expiry on the server's clock unless the lease is free or
		// named (then the condition is left out).
		cond, note := ` AND lease_expires_ns <= `+serverNowNs, ""
		if req.TakesOver(cur, false) {
			cond = ""
			if req.Forced != "" && cur.Owner != "" {
				note = req.TakeOverNote(cur, s.now())
			}
		}
		var newExpires int64
		err = tx.QueryRow(ctx, `UPDATE runs SET lease_owner = $1, lease_token = $2, lease_expires_ns = `+serverNowNs+` + $3::bigint,
			takeovers = CASE WHEN $4 = '' THEN takeovers WHEN takeovers = '' THEN $4 ELSE takeovers || E'\n' || $4 END
			WHERE id = $5`+cond+` RETURNING lease_expires_ns`,
			out.Owner, out.Token, int64(req.TTL), note, runID).Scan(&newExpires)
		if errors.Is(err, pgx.ErrNoRows) {
			return &store.BusyError{Holder: cur}
		}
		out.Expires = fromNs(newExpires)
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("run %s: acquire lease: %w", runID, err)
	}
	if tailErr == nil {
		s.cache.SetTail(runID, tail)
	}
	return out, nil
}

// acquireFree takes the run's lease when it is free, the common case: one
// update conditional on no one holding it, sent with the read of the run's
// last step (the row the update locked), in one round trip and one
// implicit transaction. ok is false when the lease is held or the run does
// not exist: Acquire then takes the locked way, which says which.
func (s *Postgres) acquireFree(ctx context.Context, runID string, req store.LeaseRequest) (out store.Lease, ok bool, err error) {
	b := &pgx.Batch{}
	b.Queue(`UPDATE runs SET lease_owner = $1, lease_token = lease_token + 1, lease_expires_ns = `+serverNowNs+` + $2::bigint
		WHERE id = $3 AND lease_owner = '' RETURNING lease_token, lease_expires_ns`, req.Owner, int64(req.TTL), runID)
	b.Queue(lastStepSQL, runID)
	br := s.pool.SendBatch(ctx, b)
	var token, expires int64
	err = br.QueryRow().Scan(&token, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, false, br.Close()
	}
	if err != nil {
		br.Close()
		return out, false, err
	}
	tail, _, _, tailErr := scanLastStep(br.QueryRow(), runID)
	if err := br.Close(); err != nil {
		return out, false, err
	}
	if tailErr == nil {
		s.cache.SetTail(runID, tail)
	}
	return store.Lease{RunID: runID, Owner: req.Owner, Token: token, Expires: fromNs(expires)}, true, nil
}

// Renew extends a held lease to ttl from now by the server's clock (see
// store.Runs): one statement, conditional on the lease.
func (s *Postgres) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if ttl <= 0 {
		return l, fmt.Errorf("run %s: renew lease: TTL %v", l.RunID, ttl)
	}
	if l.Owner == "" {
		return l, fmt.Errorf("run %s: renew lease: %w", l.RunID, explainFence(ctx, s.pool, l, false))
	}
	var expires int64
	err := s.pool.QueryRow(ctx, `UPDATE runs SET lease_expires_ns = `+serverNowNs+` + $1::bigint
		WHERE id = $2 AND lease_owner = $3 AND lease_token = $4 RETURNING lease_expires_ns`,
		int64(ttl), l.RunID, l.Owner, l.Token).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		err = explainFence(ctx, s.pool, l, false)
	}
	if err != nil {
		return l, fmt.Errorf("run %s: renew lease: %w", l.RunID, err)
	}
	l.Expires = fromNs(expires)
	return l, nil
}

// Release gives the lease up (see store.Runs): one statement, conditional
// on the lease.
func (s *Postgres) Release(ctx context.Context, l store.Lease) error {
	err := s.leaseUpdate(ctx, l, `UPDATE runs SET lease_owner = '', lease_expires_ns = 0 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3`,
		l.RunID, l.Owner, l.Token)
	if err != nil {
		return fmt.Errorf("run %s: release lease: %w", l.RunID, err)
	}
	return nil
}

// leaseUpdate runs an update of the run's row conditional on l, and
// explains an update that changed nothing.
func (s *Postgres) leaseUpdate(ctx context.Context, l store.Lease, sql string, args ...any) error {
	if l.Owner == "" {
		return explainFence(ctx, s.pool, l, false)
	}
	ct, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return err
	}
	if ct.RowsAffected() == 0 {
		return explainFence(ctx, s.pool, l, false)
	}
	return nil
}

// explainFence explains why a write conditional on l (and, with ended, on
// the run not having ended) changed nothing: the run does not exist, l is
// not its lease (store.LeaseLost), or it has ended.
func explainFence(ctx context.Context, q querier, l store.Lease, ended bool) error {
	var owner, status string
	var token int64
	err := q.QueryRow(ctx, `SELECT lease_owner, lease_token, status FROM runs WHERE id = $1`, l.RunID).Scan(&owner, &token, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("run %s: %w", l.RunID, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if l.Owner == "" || owner != l.Owner || token != l.Token {
		return store.LeaseLost(l, owner, token)
	}
	if st := store.Status(status); ended && st.Ended() {
		return fmt.Errorf("%w (%s)", store.ErrEnded, st)
	}
	return errors.New("the run changed while it was written; try again")
}

// lostOrMissing explains why a fenced insert (conditional on the token
// only, as the step insert is) wrote nothing: the run is gone, or its lease
// is not l.
func lostOrMissing(ctx context.Context, q querier, l store.Lease) error {
	var owner string
	var token int64
	err := q.QueryRow(ctx, `SELECT lease_owner, lease_token FROM runs WHERE id = $1`, l.RunID).Scan(&owner, &token)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("run %s: %w", l.RunID, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return store.LeaseLost(l, owner, token)
}

// claimSQL hands the oldest runnable run to a worker in one statement (a
// free lease's expiry is 0, so an expiry not after the server's now is a
// free or expired lease; the index runs_claimable holds the candidates;
// a stalled run's retry time is $1, the store's clock): it
// locks the first candidate no other claim or Acquire holds (SKIP LOCKED,
// so racing workers take different runs, each re-checked against its
// latest version once locked) and writes the new holder and token.
const claimSQL = `WITH c AS (
	SELECT rk FROM runs
	WHERE status IN ('running', 'stalled') AND lease_expires_ns <= ` + serverNowNs + ` AND (status = 'running' OR retry_ns <= $1)
	ORDER BY created_ns, id LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE runs r SET lease_owner = $2, lease_token = r.lease_token + 1, lease_expires_ns = ` + serverNowNs + ` + $3::bigint FROM c WHERE r.rk = c.rk
RETURNING r.id, r.lease_token, r.lease_expires_ns`

// Claim takes the lease of one runnable run (see store.Runs): a run marked
// running that no live lease holds, or a stalled one whose retry time has
// come, the oldest first; ErrNotFound when there is none.
func (s *Postgres) Claim(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Check(); err != nil {
		return store.Lease{}, fmt.Errorf("claim a run: %w", err)
	}
	out := store.Lease{Owner: req.Owner}
	var expires int64
	err := s.pool.QueryRow(ctx, claimSQL, s.now().UnixNano(), out.Owner, int64(req.TTL)).Scan(&out.RunID, &out.Token, &expires)
	out.Expires = fromNs(expires)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("claim a run: %w", err)
	}
	s.cache.ForgetTail(out.RunID)
	return out, nil
}
