package shell

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Pool is a Runner's face for servers and worker pools, which share the
// work of driving runs through the store: a request makes a run durable
// and runnable (running, with no lease held) and returns at once; a
// worker claims a runnable run (store.Runs.Claim) and drives it. Several
// servers on one database share the work through it alone. An embedder
// that drives its own runs calls the Runner instead (Start, Submit,
// Resume, Fork, Cancel).
//
// Its methods, each the server's form of a Runner method:
//
//   - Create stores a new run, runnable (Runner.Start drives it at once);
//     CreateHeld stores it held, for a worker waiting to drive it
//     (DriveCreated), or to give back (Release).
//   - Answer folds answers to a pause in and leaves the run runnable
//     (Runner.Submit drives on).
//   - Requeue makes an interrupted or stalled run runnable (Runner.Resume
//     drives it).
//   - Fork creates a fork, runnable (Runner.Fork drives it).
//   - Drive drives a run a worker claimed.
//   - Latest and InDoubtAt read a run's last state and its in-doubt calls
//     cheaply, for a server's responses.
//
// A Pool shares its Runner's store, options and state cache; get it with
// Runner.Pool. It is safe for concurrent use.
type Pool struct {
	r *Runner
}

// Pool returns the runner's worker-pool operations (see Pool).
func (r *Runner) Pool() *Pool { return &r.pool }

// ErrHandOff, as the cause of a drive's context (context.WithCancelCause),
// stops the drive without marking the run interrupted: the run stays
// running, its lease released, for another worker to claim (a server
// shutting down). A call it cut short is in flight for the next driver.
var ErrHandOff = errors.New("handed off to another worker")

// Create stores a new run of ag on input, runnable: a worker drives it.
// It returns the run's id. An input over InputLimit is refused
// (ErrInputTooLarge), nothing stored.
func (p *Pool) Create(ctx context.Context, ag *Agent, input string) (string, error) {
	return p.CreateFrom(ctx, ag, core.Request{Input: input})
}

// Drive drives a run whose lease l the caller took at the time acquired
// (store.Runs.Claim), from its last checkpoint, as Runner.Resume does,
// releasing the lease when it returns. Once stop is closed it stops
// between steps, before the next request, leaving the run runnable for
// another worker.
func (p *Pool) Drive(ctx context.Context, ag *Agent, l store.Lease, acquired time.Time, stop <-chan struct{}) (Outcome, error) {
	return p.drive(ctx, ag, l, acquired, nil, stop)
}

// DriveRead is Drive for a caller that read the run (info) after it took
// the lease, to choose its agent: the run is not read again. info must be
// the run's as read while l was held (what Claim or Acquire then
// store.Runs.Run returned).
func (p *Pool) DriveRead(ctx context.Context, ag *Agent, l store.Lease, acquired time.Time, info store.RunInfo, stop <-chan struct{}) (Outcome, error) {
	return p.drive(ctx, ag, l, acquired, &info, stop)
}

// Created is a run CreateHeld stored with its lease held, for
// DriveCreated, or for Release when no worker drives it after all.
type Created struct {
	// ID is the run's id.
	ID       string
	lease    store.Lease
	acquired time.Time
	st       core.State
}

// CreateHeld is CreateFrom for a caller with a worker free to drive the
// run at once (a server's create, when a worker waits): the run is stored
// with its lease held by the runner's owner, in the same write, so that
// DriveCreated drives it from the state in hand, neither taking the lease
// nor reading the run (ADR 0037). A caller that finds no worker after all
// gives it back with Release.
func (p *Pool) CreateHeld(ctx context.Context, ag *Agent, req core.Request) (Created, error) {
	r := p.r
	if err := r.check(ag); err != nil {
		return Created{}, err
	}
	c, err := r.create(ctx, ag, r.opts.NewID(), req, true)
	if err != nil {
		return Created{}, err
	}
	r.states.put(c.ID, 0, c.st)
	return c, nil
}

// DriveCreated drives a run CreateHeld created, as Drive does a claimed
// one, from its first state; ag is the agent it was created with.
func (p *Pool) DriveCreated(ctx context.Context, ag *Agent, c Created, stop <-chan struct{}) (Outcome, error) {
	return p.r.driveHeld(ctx, ag, &cursor{id: c.ID, st: c.st, stop: stop}, c.lease, c.acquired)
}

// Release gives back the lease of a run CreateHeld created that no worker
// here will drive: the run is left runnable, for a worker that claims it.
func (p *Pool) Release(ctx context.Context, c Created) error {
	return p.r.giveBack(ctx, c.lease)
}

// giveBack releases l even when ctx has ended, waiting at most a third of
// the lease's TTL for the store.
func (r *Runner) giveBack(ctx context.Context, l store.Lease) error {
	_, err := within(context.WithoutCancel(ctx), r.opts.LeaseTTL/3, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.store.Release(ctx, l)
	})
	return err
}

func (p *Pool) drive(ctx context.Context, ag *Agent, l store.Lease, acquired time.Time, info *store.RunInfo, stop <-chan struct{}) (Outcome, error) {
	r := p.r
	err := r.check(ag)
	if err == nil && info != nil && info.ID != l.RunID {
		err = fmt.Errorf("drive run %s: the run read is %q", l.RunID, info.ID)
	}
	if err != nil {
		// The run stays runnable for a worker that can drive it; the
		// release must happen even when ctx has ended, or the run stays
		// held until the lease expires (as it does when the store does
		// not answer within a third of the lease's TTL).
		_ = r.giveBack(ctx, l)
		return Outcome{}, err
	}
	h, hctx := r.hold(ctx, l, acquired)
	defer h.release()
	var cur *cursor
	if info == nil {
		cur, err = r.load(hctx, h, ag, l.RunID)
	} else {
		cur, err = r.loadFrom(hctx, h, ag, *info)
	}
	if err != nil {
		return Outcome{}, r.lostOr(h, err)
	}
	cur.stop = stop
	return r.drive(ctx, hctx, ag, cur, h)
}

// Answer is Runner.Submit for a server: it checks and folds in the
// answers, makes them durable with the run's next checkpoint, and leaves
// the run for a worker to go on with (or reports it paused again, ended,
// or failed).
func (p *Pool) Answer(ctx context.Context, ag *Agent, runID string, ans Answers) (Outcome, error) {
	return p.prepare(ctx, ag, runID, func(hctx context.Context, h *holding, cur *cursor) error {
		return p.r.answer(hctx, h, ag, cur, ans)
	})
}

// Requeue makes an interrupted or stalled run runnable for a worker at once
// (a stalled run's retry time is ignored), recording a changed agent when
// ag.Source differs from the run's. A paused or ended run stays as it is.
func (p *Pool) Requeue(ctx context.Context, ag *Agent, runID string) (Outcome, error) {
	return p.prepare(ctx, ag, runID, func(context.Context, *holding, *cursor) error { return nil })
}

// Fork is Runner.Fork for a server: the new run is created, its first
// checkpoint made when res is given, and left runnable for a worker.
func (p *Pool) Fork(ctx context.Context, ag *Agent, runID string, seq int, res core.Result) (Outcome, error) {
	return p.r.fork(ctx, ag, runID, seq, res, true)
}

// prepare takes the run's lease, loads it (recording a changed agent and
// marking an interrupted or stalled run running), lets fold change the
// cursor, then makes that durable with one checkpoint and hands the run
// over: the lease is released with the run runnable (or paused, ended).
func (p *Pool) prepare(ctx context.Context, ag *Agent, runID string, fold func(context.Context, *holding, *cursor) error) (Outcome, error) {
	r := p.r
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

// Latest returns a run's last state and its seq, lastSeq being the last
// step as store.Runs.Run reported it: the state this runner checkpointed
// there when it did, else the store's latest (decoded from the whole log).
func (p *Pool) Latest(ctx context.Context, runID string, lastSeq int) (core.State, int, error) {
	if st, ok := p.r.states.get(runID, lastSeq); ok {
		return st, lastSeq, nil
	}
	rec, err := p.r.store.LoadLatest(ctx, runID)
	return rec.State, rec.Seq, err
}

// InDoubtAt is Runner.InDoubt given the run's last step and its state (as
// Latest returns it), without loading it.
func (p *Pool) InDoubtAt(ctx context.Context, ag *Agent, runID string, seq int, st core.State) ([]InDoubtCall, error) {
	return p.r.inDoubt(ctx, ag, &cursor{id: runID, seq: seq, st: st})
}
