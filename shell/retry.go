package shell

import (
	"errors"
	"fmt"
	"time"
)

// RetryPolicy says how a model or tool call is retried after a transient
// failure (a 429, a 5xx, a refused connection, a timeout). When it is
// exhausted the run stalls (status stalled, resumable); a permanent failure
// (a 401, a 404, a malformed request) is never retried. The zero value of a
// field means its default (DefaultModelRetry, DefaultToolRetry).
type RetryPolicy struct {
	// Attempts is the total number of attempts, the first included.
	Attempts int
	// Backoff is the wait before the first retry; it doubles for each
	// further retry, up to MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// MaxElapsed caps the time from the first attempt to the start of the
	// last: no retry starts later than that, whatever Attempts says, and a
	// server asking (Retry-After) for a wait beyond it ends the retries.
	MaxElapsed time.Duration
	// Jitter scales each wait by a random factor in [1-Jitter, 1+Jitter]
	// (0: the default; negative: none), so that runs stalled together do
	// not retry in lockstep. A Retry-After the server sent is never
	// shortened.
	Jitter float64
}

// Default retry policies.
var (
	DefaultModelRetry = RetryPolicy{Attempts: 5, Backoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second, MaxElapsed: 2 * time.Minute, Jitter: 0.2}
	// DefaultToolRetry applies to idempotent tools only: a non-idempotent
	// call is never repeated by a retry (its failure reaches the model).
	DefaultToolRetry = RetryPolicy{Attempts: 3, Backoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second, MaxElapsed: 30 * time.Second, Jitter: 0.2}
	// DefaultStoreRetry applies to a drive's store writes that fail
	// because the store is unavailable (Options.StoreRetry): about 30 s of
	// retrying, the waits growing from 100 ms to 5 s. A database restart
	// (seconds) is ridden out; past it the run stalls.
	DefaultStoreRetry = RetryPolicy{Attempts: 1000, Backoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second, MaxElapsed: 30 * time.Second, Jitter: 0.2}
	// DefaultStallBackoff spaces the retries of a stalled run
	// (Options.StallBackoff): 5 s after its first stall, then 10 s, 20 s
	// ... up to 10 min, each within ±20%. Attempts and MaxElapsed do not
	// apply: a stalled run is retried until it moves or is cancelled.
	DefaultStallBackoff = RetryPolicy{Attempts: 1, Backoff: 5 * time.Second, MaxBackoff: 10 * time.Minute, MaxElapsed: 1, Jitter: 0.2}
)

// WithDefaults fills the zero fields of p from def.
func (p RetryPolicy) WithDefaults(def RetryPolicy) RetryPolicy {
	if p.Attempts == 0 {
		p.Attempts = def.Attempts
	}
	if p.Backoff == 0 {
		p.Backoff = def.Backoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = def.MaxBackoff
	}
	if p.MaxElapsed == 0 {
		p.MaxElapsed = def.MaxElapsed
	}
	if p.Jitter == 0 {
		p.Jitter = def.Jitter
	}
	return p
}

// Validate reports a policy no retry loop can follow.
func (p RetryPolicy) Validate() error {
	var errs []error
	if p.Attempts < 0 {
		errs = append(errs, errors.New("attempts is negative"))
	}
	if p.Backoff < 0 || p.MaxBackoff < 0 || p.MaxElapsed < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if p.Jitter > 1 {
		errs = append(errs, fmt.Errorf("jitter %v is above 1", p.Jitter))
	}
	return errors.Join(errs...)
}

// Wait is the wait before retry n (n >= 1): Backoff * 2^(n-1), capped at
// MaxBackoff, scaled by 1 + Jitter*(2u-1) for u drawn uniformly from [0, 1)
// by rnd (nil: no jitter).
func (p RetryPolicy) Wait(n int, rnd func() float64) time.Duration {
	d := p.Backoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff)
	if p.Jitter > 0 && rnd != nil {
		d = time.Duration(float64(d) * (1 + p.Jitter*(2*rnd()-1)))
	}
	return max(d, 0)
}

// TransientError is a failure that may go away on its own, returned by a
// model provider once its retry policy is exhausted. The runner stalls the
// run on it (resumable); any provider error that is not ErrModelPermanent
// is taken as transient too.
type TransientError struct {
	Err error
	// Attempts is how many attempts were made.
	Attempts int
	// RetryAfter, when positive, is how long the server asked to wait
	// before the next attempt.
	RetryAfter time.Duration
}

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// Secret is a value an agent names as secret (an API key, a header token):
// it is replaced by a marker in everything the run stores, exports or
// prints, and in tool output the model sees.
type Secret struct {
	// Name is the environment variable it was read from.
	Name  string
	Value string
}

// InDoubtPolicy decides what happens to a non-idempotent call that was in
// flight when its run stopped (an intent and no outcome), when no operator
// answered it with resume --results.
type InDoubtPolicy string

// In-doubt policies.
const (
	// InDoubtUnknown tells the model the outcome is unknown (the default).
	InDoubtUnknown InDoubtPolicy = "unknown"
	// InDoubtRerun runs the call again.
	InDoubtRerun InDoubtPolicy = "rerun"
	// InDoubtWait stalls the run until an operator answers the call with
	// resume --results (what it did, or that it did not run).
	InDoubtWait InDoubtPolicy = "wait"
)
