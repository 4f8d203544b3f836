package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Lease is the right to drive a run: only its holder may write what driving
// a run writes (checkpoints, intents, outcomes, statuses, agent changes).
// A lease lapses at Expires unless its holder renews it; another driver may
// then acquire it. Every acquisition increments the run's token, and every
// fenced write checks the token in the same transaction as the write, so a
// holder that lost its lease (stopped by the OS past its expiry while
// another took over) can write nothing. See docs/adr/0010-run-ownership.md.
type Lease struct {
	RunID string
	// Owner names the holder; the shell writes "host/pid/nonce".
	Owner string
	// Token is the fencing token: 1 for the lease a run is created with,
	// one more at every acquisition.
	Token int64
	// Expires is when the lease lapses unless renewed, by the store's
	// clock. A zero Lease (no owner) is not held.
	Expires time.Time
}

// Live reports whether the lease is held at now: it names an owner and
// has not expired.
func (l Lease) Live(now time.Time) bool { return l.Owner != "" && now.Before(l.Expires) }

// LeaseRequest asks for a run's lease.
type LeaseRequest struct {
	// Owner names the new holder; required.
	Owner string
	// TTL is how long the lease lasts unless renewed; required.
	TTL time.Duration
	// TakeOver, when set, takes the lease from exactly this holder (owner
	// and token) even before it expires: the caller found that holder dead
	// (its process is gone). Another holder's live lease is still refused.
	TakeOver *Lease
}

// Errors of run ownership.
var (
	// ErrBusy: another driver holds the run's lease (see BusyError).
	ErrBusy = errors.New("the run is held by another driver")
	// ErrLeaseLost: a fenced write, renewal or release came from a lease
	// that is no longer the run's (another driver took the run over, or
	// the lease was released). Nothing was written.
	ErrLeaseLost = errors.New("the lease on the run was lost")
)

// BusyError is ErrBusy with the lease that holds the run.
type BusyError struct{ Holder Lease }

func (e *BusyError) Error() string {
	return fmt.Sprintf("run %s is held by %s until %s", e.Holder.RunID, e.Holder.Owner, e.Holder.Expires.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// leaseLost explains ErrLeaseLost with the run's current holder.
func leaseLost(l Lease, owner string, token int64) error {
	switch {
	case token != l.Token && owner != "":
		return fmt.Errorf("%w: %s took the run over (token %d, ours %d)", ErrLeaseLost, owner, token, l.Token)
	case token != l.Token:
		return fmt.Errorf("%w: the run was taken over (token %d, ours %d)", ErrLeaseLost, token, l.Token)
	}
	return fmt.Errorf("%w: it was released", ErrLeaseLost)
}

func checkRequest(req LeaseRequest) error {
	if req.Owner == "" {
		return errors.New("lease request without an owner")
	}
	if req.TTL <= 0 {
		return fmt.Errorf("lease request with TTL %v", req.TTL)
	}
	return nil
}

// Acquire takes the run's lease for req.Owner, for req.TTL. A live lease
// of another holder is refused with a *BusyError (ErrBusy) naming it,
// unless req.TakeOver names exactly that holder. A lease is not
// re-entrant: a second acquisition by the same owner while the first is
// live is refused too.
func (s *SQLite) Acquire(ctx context.Context, runID string, req LeaseRequest) (Lease, error) {
	if err := checkRequest(req); err != nil {
		return Lease{}, fmt.Errorf("run %s: acquire lease: %w", runID, err)
	}
	// A new holder reads the run's last step back rather than trusting
	// what this store remembers of it.
	s.forgetTail(runID)
	var out Lease
	err := s.write(ctx, "run "+runID+": acquire lease", func(tx *wtx) error {
		var cur Lease
		var expires int64
		err := tx.QueryRowContext(ctx, `SELECT lease_owner, lease_token, lease_expires_ns FROM runs WHERE id = ?`, runID).
			Scan(&cur.Owner, &cur.Token, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		cur.RunID, cur.Expires = runID, fromNs(expires)
		now := s.now()
		taking := req.TakeOver != nil && req.TakeOver.Owner == cur.Owner && req.TakeOver.Token == cur.Token
		if cur.Live(now) && !taking {
			return &BusyError{Holder: cur}
		}
		out = Lease{RunID: runID, Owner: req.Owner, Token: cur.Token + 1, Expires: now.Add(req.TTL).UTC()}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET lease_owner = ?, lease_token = ?, lease_expires_ns = ? WHERE id = ?`,
			out.Owner, out.Token, out.Expires.UnixNano(), runID)
		return err
	})
	return out, err
}

// Renew extends a held lease to ttl from now. A lease that is no longer
// the run's is ErrLeaseLost; one that expired while no one took the run
// over is still the run's and is renewed.
func (s *SQLite) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		return l, fmt.Errorf("run %s: renew lease: TTL %v", l.RunID, ttl)
	}
	err := s.write(ctx, "run "+l.RunID+": renew lease", func(tx *wtx) error {
		if _, _, err := fence(ctx, tx, l); err != nil {
			return err
		}
		l.Expires = s.now().Add(ttl).UTC()
		_, err := tx.ExecContext(ctx, `UPDATE runs SET lease_expires_ns = ? WHERE id = ?`, l.Expires.UnixNano(), l.RunID)
		return err
	})
	return l, err
}

// Release gives the lease up: the run is free for the next driver at once.
// Releasing a lease that is no longer the run's is ErrLeaseLost and changes
// nothing.
func (s *SQLite) Release(ctx context.Context, l Lease) error {
	return s.write(ctx, "run "+l.RunID+": release lease", func(tx *wtx) error {
		if _, _, err := fence(ctx, tx, l); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE runs SET lease_owner = '', lease_expires_ns = 0 WHERE id = ?`, l.RunID)
		return err
	})
}

// fence checks, inside a write transaction, that l is still the run's
// lease, and returns the run's key and status.
func fence(ctx context.Context, tx querier, l Lease) (rk int64, status Status, err error) {
	var owner, st string
	var token int64
	err = tx.QueryRowContext(ctx, `SELECT rk, status, lease_owner, lease_token FROM runs WHERE id = ?`, l.RunID).
		Scan(&rk, &st, &owner, &token)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", fmt.Errorf("run %s: %w", l.RunID, ErrNotFound)
	}
	if err != nil {
		return 0, "", err
	}
	if l.Owner == "" || owner != l.Owner || token != l.Token {
		return 0, "", leaseLost(l, owner, token)
	}
	return rk, Status(st), nil
}

// lostOrMissing explains why a fenced insert wrote nothing: the run is
// gone, or its lease is not l.
func lostOrMissing(ctx context.Context, q querier, l Lease) error {
	var owner string
	var token int64
	err := q.QueryRowContext(ctx, `SELECT lease_owner, lease_token FROM runs WHERE id = ?`, l.RunID).Scan(&owner, &token)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", l.RunID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	return leaseLost(l, owner, token)
}
