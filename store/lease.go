package store

import (
	"errors"
	"fmt"
	"time"
)

// Lease is the right to drive a run: only its holder may write what driving
// a run writes (checkpoints, intents, outcomes, statuses, agent changes).
// A lease lapses when its holder has not renewed it for its TTL; another
// driver may then acquire it. Every acquisition increments the run's token,
// and every fenced write checks the token in the same transaction as the
// write, so a holder that lost its lease (stopped by the OS past its expiry
// while another took over) can write nothing. See
// docs/adr/0010-run-ownership.md.
//
// Expiry is judged on one clock for all contenders, never by comparing
// wall clocks written by different hosts (docs/adr/0027-one-clock.md):
// PostgreSQL judges it by the server's clock, in the statement that takes
// the lease; SQLite by the contender's own monotonic clock, as the time it
// has watched the lease's heartbeat (a counter every renewal increments)
// not move (see BusyError.Recheck).
type Lease struct {
	RunID string
	// Owner names the holder; the shell writes "host/pid/nonce".
	Owner string
	// Token is the fencing token: 1 for the lease a run is created with,
	// one more at every acquisition.
	Token int64
	// Expires is when the lease lapses unless renewed: by the PostgreSQL
	// server's clock, or by the clock of the holder that wrote it
	// (SQLite). It is for people (who holds a run, until when), not how a
	// store decides that the lease lapsed. A zero Lease (no owner) is not
	// held.
	Expires time.Time
}

// Live reports whether the lease is held at now: it names an owner and
// has not expired. It compares now with a time another host may have
// written, so it is a hint for display; the stores decide take-overs on
// one clock (see Lease).
func (l Lease) Live(now time.Time) bool { return l.Owner != "" && now.Before(l.Expires) }

// LeaseRequest asks for a run's lease.
type LeaseRequest struct {
	// Owner names the new holder; required.
	Owner string
	// TTL is how long the lease lasts unless renewed; required.
	TTL time.Duration
	// TakeOver, when set, takes the lease from exactly this holder (owner
	// and token) even before it expires: the caller found that holder dead
	// (its process is gone), or an operator forces the take-over (Forced).
	// Another holder's live lease is still refused.
	TakeOver *Lease
	// Forced, with TakeOver, says the take-over is an operator's, of a
	// holder that may be alive: the store records it with the run
	// (RunInfo.TakeOvers), in the transaction that takes the lease. Its
	// text says who forced it and why.
	Forced string
}

// Check reports a request no store can serve.
func (req LeaseRequest) Check() error {
	if req.Owner == "" {
		return errors.New("lease request without an owner")
	}
	if req.TTL <= 0 {
		return fmt.Errorf("lease request with TTL %v", req.TTL)
	}
	if req.Forced != "" && req.TakeOver == nil {
		return errors.New("a forced lease request names no holder to take over")
	}
	return nil
}

// Takes reports whether the request may take the lease cur over at now,
// judging expiry by comparing now with cur.Expires.
//
// Deprecated: use TakesOver with expiry judged on one clock (see Lease):
// a wall clock compared with one another host wrote lets a skewed
// contender take live runs over.
func (req LeaseRequest) Takes(cur Lease, now time.Time) bool {
	return req.TakesOver(cur, !cur.Live(now))
}

// TakesOver reports whether the request may take the lease cur, which has
// lapsed as expired says (judged on the store's one clock): cur is free or
// lapsed, or is exactly the holder named by TakeOver.
func (req LeaseRequest) TakesOver(cur Lease, expired bool) bool {
	if cur.Owner == "" || expired {
		return true
	}
	return req.TakeOver != nil && req.TakeOver.Owner == cur.Owner && req.TakeOver.Token == cur.Token
}

// TakeOverNote is the line a store records for a forced take-over of cur
// by req, at the time given (the store's clock).
func (req LeaseRequest) TakeOverNote(cur Lease, at time.Time) string {
	return fmt.Sprintf("%s %s took the run over from %s (token %d): %s",
		at.UTC().Format(time.RFC3339), req.Owner, cur.Owner, cur.Token, req.Forced)
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
type BusyError struct {
	Holder Lease
	// Recheck, when positive, says that the store judges expiry by
	// watching the lease's heartbeat on its own monotonic clock (SQLite)
	// and has not yet watched it long enough: unless the holder renews
	// within Recheck, asking again then takes the lease. Zero: the lease
	// is live on the clock all contenders share (PostgreSQL's).
	Recheck time.Duration
	// Renewed says the store saw the holder renew the lease since it last
	// looked: the holder is alive (as of its last heartbeat).
	Renewed bool
}

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
