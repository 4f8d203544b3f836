package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// ErrCancelRequested: the run's driver was asked to end it cancelled and
// has not yet (see Cancel).
var ErrCancelRequested = errors.New("cancellation requested; the run's driver ends it at its next step")

// ErrNotCancellable: the run has ended (failed or cancelled).
var ErrNotCancellable = errors.New("the run has ended; there is nothing to cancel")

// Cancel ends a run that has not ended, whatever it waits for (a model, a
// tool, external results, a stall's retry time): its pending request gets
// core.Cancelled, and the run ends cancelled, never interrupted.
//
// A run no live process drives (paused, stalled, interrupted, its driver
// dead) is cancelled at once, here. A run a live process drives is asked
// to end (store.Runs.RequestCancel), and its driver ends it before its
// next request, cutting the call in flight short through its context: at
// once when the driver is in this process, else when its lease's
// heartbeat next looks, within a third of the lease's TTL. A driver that
// lets the run go without ending it (interrupted by a signal, stalled,
// handed off) leaves it to Cancel, which takes it and ends it.
//
// Cancel waits up to Options.Wait for the run to end (for a driver in this
// process, up to its lease's TTL, which it needs far less than), then
// returns the run's outcome, or ErrCancelRequested when it has not ended
// yet (the request stays, and the driver acts on it). ErrNotCancellable
// when the run had ended before the request.
//
// A completed run is a conversation at rest (ADR 0032): Cancel closes it.
// The run ends cancelled ("the conversation was closed"), its last answer
// kept, and takes no more messages.
func (r *Runner) Cancel(ctx context.Context, ag *Agent, runID, reason string) (Outcome, error) {
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	if reason == "" {
		reason = "cancelled"
	}
	reason = NewRedactor(ag.Secrets).String(reason)
	requested := false
	var deadline time.Time
	for takes := 0; ; takes++ {
		if requested && takes > 1 && !time.Now().Before(deadline) {
			// Let go, yet still held when taken (a clock that disagrees
			// with the store's): the driver, or the next, acts on it.
			return Outcome{}, fmt.Errorf("run %s: %w", runID, ErrCancelRequested)
		}
		out, err := r.cancelHeld(ctx, ag, runID, reason, requested)
		if !errors.Is(err, ErrBusy) {
			return out, err
		}
		if !requested {
			// Recorded before anyone is told: a driver that looks, now
			// or when it next loads the run, finds it.
			if err := r.store.RequestCancel(ctx, runID, reason); err != nil {
				if errors.Is(err, store.ErrEnded) {
					return Outcome{}, fmt.Errorf("run %s: %w", runID, ErrNotCancellable)
				}
				return Outcome{}, fmt.Errorf("run %s: request cancel: %w", runID, err)
			}
			requested = true
			wait := r.opts.Wait
			if ttl, here := localDrives.nudge(runID); here {
				wait = max(wait, ttl)
			}
			deadline = time.Now().Add(wait)
		}
		out, ended, err := r.awaitCancel(ctx, runID, deadline, err)
		if ended || err != nil {
			return out, err
		}
		// No live driver holds it any more, and it has not ended: take it.
	}
}

// cancelHeld takes the run's lease without waiting for a driver (ErrBusy
// when one holds it) and ends the run cancelled. requested says this
// Cancel already asked a driver to end it: a run that has ended since is
// its outcome, not ErrNotCancellable.
func (r *Runner) cancelHeld(ctx context.Context, ag *Agent, runID, reason string, requested bool) (Outcome, error) {
	acquired := time.Now()
	l, err := r.acquireWithin(ctx, runID, 0) // a driver is asked, not waited for
	if err != nil {
		return Outcome{}, err
	}
	h, hctx := r.hold(ctx, l, acquired)
	defer h.release()
	cur, err := r.load(hctx, h, ag, runID)
	if err != nil {
		return Outcome{}, r.lostOr(h, err)
	}
	if cur.st.Done() && (requested || cur.st.Phase != core.PhaseDone) {
		if requested {
			info, err := r.store.Run(ctx, runID)
			if err != nil {
				return Outcome{}, err
			}
			return endedOutcome(info), nil
		}
		return Outcome{}, fmt.Errorf("run %s: %w", runID, ErrNotCancellable)
	}
	r.cancelChildren(ctx, ag, runID, cur.st, reason)
	res := core.Cancelled{Reason: reason}
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

// awaitCancel waits for the run's driver to end it after a requested
// cancellation: ended is true with the run's outcome once it has; false
// with no error once no live driver holds it (it was let go unended, or
// its driver died), for the caller to take it; ErrCancelRequested once
// deadline passes.
func (r *Runner) awaitCancel(ctx context.Context, runID string, deadline time.Time, busy error) (out Outcome, ended bool, err error) {
	poll := 10 * time.Millisecond
	extended := false
	for {
		select {
		case <-ctx.Done():
			return Outcome{}, false, ctx.Err()
		case <-time.After(poll):
		}
		poll = min(2*poll, 100*time.Millisecond)
		info, err := r.store.Run(ctx, runID)
		if err != nil {
			return Outcome{}, false, err
		}
		if info.Status.Ended() {
			return endedOutcome(info), true, nil
		}
		if !Driven(info.Lease, time.Now()) {
			return Outcome{}, false, nil
		}
		if heldHere(info.Lease.Owner) && !extended {
			// This process holds it (a worker about to drive it, or one
			// letting it go): it is acted on or let go far sooner than
			// a lease lasts, whatever Options.Wait says.
			extended = true
			if by := time.Now().Add(r.opts.LeaseTTL); by.After(deadline) {
				deadline = by
			}
		}
		if !time.Now().Before(deadline) {
			return Outcome{}, false, fmt.Errorf("run %s: %w (%v)", runID, ErrCancelRequested, busy)
		}
	}
}

// heldHere reports whether owner names this process.
func heldHere(owner string) bool {
	h, ok := ParseOwner(owner)
	if !ok || h.PID != os.Getpid() {
		return false
	}
	alive, known := HolderAlive(owner)
	return alive && known
}

// endedOutcome is the outcome of an ended run, as the store tells it.
func endedOutcome(info store.RunInfo) Outcome {
	out := Outcome{RunID: info.ID, Status: info.Status, Answer: info.Answer, Steps: info.LastSeq}
	if info.FailCode != "" {
		out.Failure = &core.Failure{Code: info.FailCode, Reason: info.Reason}
	}
	return out
}

// cancelNow is the requested cancellation's reason, looking in the store
// first when none was seen yet: a drive about to let its run go unended
// (interrupted, stalled) asks, so that a request that came since the
// heartbeat last looked ends the run instead.
func (h *holding) cancelNow() string {
	if reason := h.cancelRequest(); reason != "" {
		return reason
	}
	h.watchCancel()
	return h.cancelRequest()
}
