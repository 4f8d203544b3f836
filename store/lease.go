package store

import (
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

// Check reports a request no store can serve.
func (req LeaseRequest) Check() error {
	if req.Owner == "" {
		return errors.New("lease request without an owner")
	}
	if req.TTL <= 0 {
		return fmt.Errorf("lease request with TTL %v", req.TTL)
	}
	return nil
}

// Takes reports whether the request may take the lease cur over at now:
// cur is not live, or is exactly the holder named by TakeOver.
func (req LeaseRequest) Takes(cur Lease, now time.Time) bool {
	if !cur.Live(now) {
		return true
	}
	return req.TakeOver != nil && req.TakeOver.Owner == cur.Owner && req.TakeOver.Token == cur.Token
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

// LeaseLost explains ErrLeaseLost for the lease l, given the run's current
// holder and token.
func LeaseLost(l Lease, owner string, token int64) error {
	switch {
	case token != l.Token && owner != "":
		return fmt.Errorf("%w: %s took the run over (token %d, ours %d)", ErrLeaseLost, owner, token, l.Token)
	case token != l.Token:
		return fmt.Errorf("%w: the run was taken over (token %d, ours %d)", ErrLeaseLost, token, l.Token)
	}
	return fmt.Errorf("%w: it was released", ErrLeaseLost)
}
