package shell

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Operations for servers, whose workers drive runs: a request makes a run
// durable and runnable (running, with no lease held) and returns; a worker
// claims the run (store.Runs.Claim) and drives it (Drive). Several servers
// on one database share the work through it alone.

// Create stores a new run of ag on input, runnable: a worker drives it.
func (r *Runner) Create(ctx context.Context, ag *Agent, input string) (string, error) {
	if err := r.check(ag); err != nil {
		return "", err
	}
	input = NewRedactor(ag.Secrets).String(input)
	st, err := core.Start(ag.Config, core.Request{Input: input})
	if err != nil {
		return "", err
	}
	id := r.opts.NewID()
	if _, err := r.store.CreateRun(ctx, store.NewRun{
		ID: id, Agent: ag.Config.Name, ConfigHash: core.ConfigHash(ag.Config),
		Config: ag.Source, Input: st.Request.Input, Initial: st,
	}); err != nil {
		return "", fmt.Errorf("create run: %w", err)
	}
	r.states.put(id, 0, st)
	return id, nil
}

// ErrHandOff, as the cause of a drive's context (context.WithCancelCause),
// stops the drive without marking the run interrupted: the run stays
// running, its lease released, for another worker to claim (a server
// shutting down). A call it cut short is in flight for the next driver.
var ErrHandOff = errors.New("handed off to another worker")

// Drive drives a run whose lease l the caller took at the time acquired
// (store.Runs.Claim), from its last checkpoint, as Resume does, releasing
// the lease when it returns. Once stop is closed it stops between steps,
// before the next request, leaving the run runnable for another worker.
func (r *Runner) Drive(ctx context.Context, ag *Agent, l store.Lease, acquired time.Time, stop <-chan struct{}) (Outcome, error) {
	if err := r.check(ag); err != nil {
		_ = r.store.Release(context.WithoutCancel(ctx), l)
		return Outcome{}, err
	}
	h, hctx := r.hold(ctx, l, acquired)
	defer h.release()
	cur, err := r.load(hctx, h, ag, l.RunID)
	if err != nil {
		return Outcome{}, r.lostOr(h, err)
	}
	cur.stop = stop
	return r.drive(ctx, hctx, ag, cur, h)
}

// Answer is Submit for a server: it checks and folds in the answers, makes
// them durable with the run's next checkpoint, and leaves the run for a
// worker to go on with (or reports it paused again, ended, or failed).
func (r *Runner) Answer(ctx context.Context, ag *Agent, runID string, ans Answers) (Outcome, error) {
	return r.prepare(ctx, ag, runID, func(hctx context.Context, h *holding, cur *cursor) error {
		return r.answer(hctx, h, ag, cur, ans)
	})
}

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

// Requeue makes an interrupted or stalled run runnable for a worker at once
// (a stalled run's retry time is ignored), recording a changed agent when
// ag.Source differs from the run's. A paused or ended run stays as it is.
func (r *Runner) Requeue(ctx context.Context, ag *Agent, runID string) (Outcome, error) {
	return r.prepare(ctx, ag, runID, func(context.Context, *holding, *cursor) error { return nil })
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

// prepare takes the run's lease, loads it (recording a changed agent and
// marking an interrupted or stalled run running), lets fold change the
// cursor, then makes that durable with one checkpoint and hands the run
// over: the lease is released with the run runnable (or paused, ended).
func (r *Runner) prepare(ctx context.Context, ag *Agent, runID string, fold func(context.Context, *holding, *cursor) error) (Outcome, error) {
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	acquired := time.Now()
	l, err := r.acquire(ctx, runID)
	if err != nil {
		return Outcome{}, err
	}
	h, hctx := r.hold(ctx, l, acquired)
	defer h.release()
	cur, err := r.load(hctx, h, ag, runID)
	if err == nil {
		err = fold(hctx, h, cur)
	}
	if err != nil {
		return Outcome{}, r.lostOr(h, err)
	}
	cur.handOff = true
	return r.drive(ctx, hctx, ag, cur, h)
}

// ForkRunnable is Fork for a server: the new run is created, its first
// checkpoint made when res is given, and left runnable for a worker.
func (r *Runner) ForkRunnable(ctx context.Context, ag *Agent, runID string, seq int, res core.Result) (Outcome, error) {
	return r.fork(ctx, ag, runID, seq, res, true)
}
