package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// Acquire takes the run's lease (see store.Runs).
func (s *SQLite) Acquire(ctx context.Context, runID string, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Check(); err != nil {
		return store.Lease{}, fmt.Errorf("run %s: acquire lease: %w", runID, err)
	}
	// A new holder reads the run's last step back rather than trusting
	// what this store remembers of it.
	s.cache.ForgetTail(runID)
	var out store.Lease
	err := s.writeLight(ctx, "run "+runID+": acquire lease", func(tx *wtx) error {
		var cur store.Lease
		var expires int64
		err := tx.QueryRowContext(ctx, `SELECT lease_owner, lease_token, lease_expires_ns FROM runs WHERE id = ?`, runID).
			Scan(&cur.Owner, &cur.Token, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		cur.RunID, cur.Expires = runID, fromNs(expires)
		now := s.now()
		if !req.Takes(cur, now) {
			return &store.BusyError{Holder: cur}
		}
		out = store.Lease{RunID: runID, Owner: req.Owner, Token: cur.Token + 1, Expires: now.Add(req.TTL).UTC()}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET lease_owner = ?, lease_token = ?, lease_expires_ns = ? WHERE id = ?`,
			out.Owner, out.Token, out.Expires.UnixNano(), runID)
		return err
	})
	return out, err
}

// Renew extends a held lease (see store.Runs).
func (s *SQLite) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if ttl <= 0 {
		return l, fmt.Errorf("run %s: renew lease: TTL %v", l.RunID, ttl)
	}
	err := s.writeLight(ctx, "run "+l.RunID+": renew lease", func(tx *wtx) error {
		if _, _, err := fence(ctx, tx, l); err != nil {
			return err
		}
		l.Expires = s.now().Add(ttl).UTC()
		_, err := tx.ExecContext(ctx, `UPDATE runs SET lease_expires_ns = ? WHERE id = ?`, l.Expires.UnixNano(), l.RunID)
		return err
	})
	return l, err
}

// Release gives the lease up (see store.Runs).
func (s *SQLite) Release(ctx context.Context, l store.Lease) error {
	return s.writeLight(ctx, "run "+l.RunID+": release lease", func(tx *wtx) error {
		if _, _, err := fence(ctx, tx, l); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE runs SET lease_owner = '', lease_expires_ns = 0 WHERE id = ?`, l.RunID)
		return err
	})
}

// fence checks, inside a write transaction, that l is still the run's
// lease, and returns the run's key and status.
func fence(ctx context.Context, tx querier, l store.Lease) (rk int64, status store.Status, err error) {
	var owner, st string
	var token int64
	err = tx.QueryRowContext(ctx, `SELECT rk, status, lease_owner, lease_token FROM runs WHERE id = ?`, l.RunID).
		Scan(&rk, &st, &owner, &token)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", fmt.Errorf("run %s: %w", l.RunID, store.ErrNotFound)
	}
	if err != nil {
		return 0, "", err
	}
	if l.Owner == "" || owner != l.Owner || token != l.Token {
		return 0, "", store.LeaseLost(l, owner, token)
	}
	return rk, store.Status(st), nil
}

// lostOrMissing explains why a fenced insert wrote nothing: the run is
// gone, or its lease is not l.
func lostOrMissing(ctx context.Context, q querier, l store.Lease) error {
	var owner string
	var token int64
	err := q.QueryRowContext(ctx, `SELECT lease_owner, lease_token FROM runs WHERE id = ?`, l.RunID).Scan(&owner, &token)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", l.RunID, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return store.LeaseLost(l, owner, token)
}

func fromNs(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// claimable selects the runs a worker may claim at ?1 (now): running, or
// stalled with their retry time come, and a lease free (its expiry is 0)
// or expired; the index runs_claimable holds just those.
const claimable = `status IN ('running', 'stalled') AND lease_expires_ns <= ?1 AND (status = 'running' OR retry_ns <= ?1)`

// Claim takes the lease of one runnable run (see store.Runs).
func (s *SQLite) Claim(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Check(); err != nil {
		return store.Lease{}, fmt.Errorf("claim a run: %w", err)
	}
	// Most claims of an idle worker find nothing: a read says so without
	// taking the write lock from the runs being checkpointed.
	var any int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM runs INDEXED BY runs_claimable WHERE `+claimable+` LIMIT 1`, s.now().UnixNano()).Scan(&any)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Lease{}, store.ErrNotFound
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("claim a run: %w", err)
	}
	var out store.Lease
	err = s.writeLight(ctx, "claim a run", func(tx *wtx) error {
		now := s.now()
		ns := now.UnixNano()
		var id string
		var token int64
		err := tx.QueryRowContext(ctx, `SELECT id, lease_token FROM runs INDEXED BY runs_claimable WHERE `+claimable+`
			ORDER BY created_ns, id LIMIT 1`, ns).Scan(&id, &token)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		out = store.Lease{RunID: id, Owner: req.Owner, Token: token + 1, Expires: now.Add(req.TTL).UTC()}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET lease_owner = ?, lease_token = ?, lease_expires_ns = ? WHERE id = ?`,
			out.Owner, out.Token, out.Expires.UnixNano(), id)
		return err
	})
	if err == nil {
		s.cache.ForgetTail(out.RunID)
	}
	return out, err
}
