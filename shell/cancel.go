package shell

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// ErrCancelRequested: the run's driver was asked to end it cancelled and
// has not yet (see Cancel).
var ErrCancelRequested = errors.New("cancellation requested; the run's driver ends it at its next step")

// requestCancel asks the driver of a run to cancel it, and waits up to
// Options.Wait for the run to end.
func (r *Runner) requestCancel(ctx context.Context, runID, reason string, busy error) (Outcome, error) {
	if err := r.store.RequestCancel(ctx, runID, reason); err != nil {
		if errors.Is(err, store.ErrEnded) {
			return Outcome{}, fmt.Errorf("run %s: %w", runID, ErrNotCancellable)
		}
		return Outcome{}, fmt.Errorf("run %s: request cancel: %w", runID, err)
	}
	deadline := time.Now().Add(r.opts.Wait)
	for {
		info, err := r.store.Run(ctx, runID)
		if err != nil {
			return Outcome{}, err
		}
		if info.Status.Ended() {
			out := Outcome{RunID: runID, Status: info.Status, Answer: info.Answer, Steps: info.LastSeq}
			if info.FailCode != "" {
				out.Failure = &core.Failure{Code: info.FailCode, Reason: info.Reason}
			}
			return out, nil
		}
		if !time.Now().Before(deadline) {
			return Outcome{}, fmt.Errorf("run %s: %w (%v)", runID, ErrCancelRequested, busy)
		}
		select {
		case <-ctx.Done():
			return Outcome{}, ctx.Err()
		case <-time.After(min(100*time.Millisecond, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// ErrNotCancellable: the run has ended.
var ErrNotCancellable = errors.New("the run has ended; there is nothing to cancel")

// Cancel ends a run that has not ended, whatever it waits for (a model, a
// tool, external results): its pending request gets core.Cancelled, and the
// run ends cancelled. A run another live process drives is asked to end
// (store.Runs.RequestCancel): its driver sees the request within a third
// of its lease's TTL and ends the run before its next request, cutting the
// call in flight short. Cancel waits up to Options.Wait for that, then
// returns the run's outcome, or ErrCancelRequested when it has not ended
// yet (the request stays).
func (r *Runner) Cancel(ctx context.Context, ag *Agent, runID, reason string) (Outcome, error) {
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	if reason == "" {
		reason = "cancelled"
	}
	acquired := time.Now()
	l, err := r.acquireWithin(ctx, runID, 0) // a driver is asked, not waited for
	if errors.Is(err, ErrBusy) {
		return r.requestCancel(ctx, runID, NewRedactor(ag.Secrets).String(reason), err)
	}
	if err != nil {
		return Outcome{}, err
	}
	h, hctx := r.hold(ctx, l, acquired)
	defer h.release()
	cur, err := r.load(hctx, h, ag, runID)
	if err != nil {
		return Outcome{}, r.lostOr(h, err)
	}
	if cur.st.Done() {
		return Outcome{}, fmt.Errorf("run %s: %w", runID, ErrNotCancellable)
	}
	res := core.Cancelled{Reason: NewRedactor(ag.Secrets).String(reason)}
	if cur.st.Pending == nil {
		// A run's first state is stepped before anything is pending.
		a, err := core.Step(ag.Config, cur.st)
		if err != nil {
			return Outcome{}, fmt.Errorf("run %s: step: %w", runID, err)
		}
		cur.st = a.Next()
	}
	next, err := core.Resume(ag.Config, cur.st, res)
	if err != nil {
		return Outcome{}, fmt.Errorf("run %s: cancel: %w", runID, err)
	}
	cur.st, cur.result = next, res
	return r.drive(ctx, hctx, ag, cur, h)
}
