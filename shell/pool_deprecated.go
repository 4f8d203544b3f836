package shell

import (
	"context"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// The Runner's worker-pool methods before they moved to Pool; they
// forward to it, and go in a later release.

// Create is Pool.Create.
//
// Deprecated: use Pool.Create (r.Pool().Create).
func (r *Runner) Create(ctx context.Context, ag *Agent, input string) (string, error) {
	return r.Pool().Create(ctx, ag, input)
}

// Drive is Pool.Drive.
//
// Deprecated: use Pool.Drive (r.Pool().Drive).
func (r *Runner) Drive(ctx context.Context, ag *Agent, l store.Lease, acquired time.Time, stop <-chan struct{}) (Outcome, error) {
	return r.Pool().Drive(ctx, ag, l, acquired, stop)
}

// Answer is Pool.Answer; an embedder answers a pause with Submit.
//
// Deprecated: use Pool.Answer (r.Pool().Answer), or Runner.Submit.
func (r *Runner) Answer(ctx context.Context, ag *Agent, runID string, ans Answers) (Outcome, error) {
	return r.Pool().Answer(ctx, ag, runID, ans)
}

// Requeue is Pool.Requeue.
//
// Deprecated: use Pool.Requeue (r.Pool().Requeue).
func (r *Runner) Requeue(ctx context.Context, ag *Agent, runID string) (Outcome, error) {
	return r.Pool().Requeue(ctx, ag, runID)
}

// ForkRunnable is Pool.Fork.
//
// Deprecated: use Pool.Fork (r.Pool().Fork).
func (r *Runner) ForkRunnable(ctx context.Context, ag *Agent, runID string, seq int, res core.Result) (Outcome, error) {
	return r.Pool().Fork(ctx, ag, runID, seq, res)
}

// Latest is Pool.Latest.
//
// Deprecated: use Pool.Latest (r.Pool().Latest).
func (r *Runner) Latest(ctx context.Context, runID string, lastSeq int) (core.State, int, error) {
	return r.Pool().Latest(ctx, runID, lastSeq)
}

// InDoubtAt is Pool.InDoubtAt.
//
// Deprecated: use Pool.InDoubtAt (r.Pool().InDoubtAt), or Runner.InDoubt.
func (r *Runner) InDoubtAt(ctx context.Context, ag *Agent, runID string, seq int, st core.State) ([]InDoubtCall, error) {
	return r.Pool().InDoubtAt(ctx, ag, runID, seq, st)
}
