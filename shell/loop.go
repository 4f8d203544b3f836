package shell

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// drive runs the loop: Step, checkpoint, perform, Resume, until the run ends,
// pauses, stalls, or ctx ends. hctx is ctx, also cancelled when the lease
// h holds is lost; every write is fenced by h's lease.
func (r *Runner) drive(ctx, hctx context.Context, ag *Agent, cur *cursor, h *holding) (Outcome, error) {
	runCtx := hctx
	if r.opts.RunTimeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(hctx, r.opts.RunTimeout)
		defer cancel()
	}
	cfg := compiledConfig(ag.Config)
	x := NewRedactor(ag.Secrets)
	// Checkpoints run to their end whatever ctx does: a request is durable
	// before it is made, or not made. (The lease still fences them, and
	// its loss, which would refuse them, cuts them short: a store that
	// hangs holds the drive no longer than the lease lasts.)
	durable := h.durable
	// Cancel, in this process, tells this drive at once (localDrives).
	defer localDrives.add(cur.id, h)()
	for {
		// A state that came from Resume (or the first state of a run) is new;
		// a loaded checkpoint is already durable and is only re-issued.
		fresh := cur.result != nil || (cur.st.Pending == nil && !cur.st.Done())
		a, err := core.Step(cfg, cur.st)
		if err != nil {
			return Outcome{}, fmt.Errorf("run %s: step: %w", cur.id, err)
		}
		// left is the status the checkpoint of a fresh step left the run
		// in ("" when none was written now, or it is not known).
		var left store.Status
		if fresh {
			// Persist before acting: the request is durable before it is made.
			// A step that ends the run gives the lease up with it.
			cp := store.Checkpoint{Seq: cur.seq + 1, Result: cur.result, Action: a, Delivered: cur.delivered, Release: ends(a)}
			if left, err = r.checkpoint(h, cur, cp); err != nil {
				if o, ok := errors.AsType[*StoreOutage](err); ok {
					return r.outage(cur, h, x, o)
				}
				return Outcome{}, r.lostOr(h, fmt.Errorf("run %s: checkpoint step %d: %w", cur.id, cp.Seq, err))
			}
			if cp.Release && left.Ended() {
				h.gaveUp()
			}
			cur.seq, cur.result, cur.delivered = cp.Seq, nil, 0
			if err := r.progressed(h, cur, a); err != nil {
				return Outcome{}, r.lostOr(h, fmt.Errorf("run %s: reset its stall count: %w", cur.id, err))
			}
			if next := a.Next(); next.Done() {
				r.states.forget(cur.id)
			} else {
				r.states.put(cur.id, cp.Seq, next)
			}
		}
		cur.st = a.Next()
		if reason := h.cancelRequest(); reason != "" && cancellable(a) {
			// Someone asked for the run to end (store.Runs.RequestCancel):
			// its request is not made (nor its pause reported, nor the run
			// handed off); it gets Cancelled, and the run ends.
			next, err := core.Resume(cfg, cur.st, core.Cancelled{Reason: x.String(reason)})
			if err != nil {
				return Outcome{}, fmt.Errorf("run %s step %d: cancel: %w", cur.id, cur.seq, err)
			}
			cur.st, cur.result = next, core.Cancelled{Reason: x.String(reason)}
			continue
		}
		if checksInbox(cfg, a) && inboxDue(cur, h, a, left) {
			// A message the user sent is folded in, as a step of its
			// own, before the request is made (conversation.go).
			folded, err := r.foldInbox(h, cur, cfg, x)
			if o, ok := errors.AsType[*StoreOutage](err); ok {
				return r.outage(cur, h, x, o)
			}
			if err != nil {
				return Outcome{}, r.lostOr(h, err)
			}
			if folded {
				continue
			}
		}
		if cur.stop != nil {
			select {
			case <-cur.stop:
				cur.handOff = true
			default:
			}
		}
		if cur.handOff {
			switch a.(type) {
			case core.RequestModelCall, core.RequestToolCalls, core.RequestMemorySearch, core.RequestMemoryCreate, core.RequestMemoryTraverse:
				return r.outcome(cur, store.StatusRunning), nil
			}
		}

		var res core.Result
		switch a := a.(type) {
		case core.Complete:
			r.emit(func() Event { return Event{RunID: cur.id, Seq: cur.seq, Kind: "complete", Text: a.Answer} })
			out := r.outcome(cur, store.StatusCompleted)
			out.Output = a.Output
			return out, nil
		case core.Fail:
			r.emit(func() Event {
				return Event{RunID: cur.id, Seq: cur.seq, Kind: "fail", Text: fmt.Sprintf("%s: %s", a.Code, a.Reason)}
			})
			if a.Code == core.FailCancelled {
				return r.outcome(cur, store.StatusCancelled), nil
			}
			return r.outcome(cur, store.StatusFailed), nil
		case core.RequestExternalToolCalls:
			if !fresh {
				// A pause re-issued from a stored state (a fork taken at a
				// pause) has no new checkpoint to set the status.
				err := r.storeWrite(h, cur, "mark awaiting tool results", func(ctx context.Context) error {
					return r.store.SetStatus(ctx, h.lease(), store.StatusChange{Status: store.StatusAwaitingToolResults})
				})
				if o, ok := errors.AsType[*StoreOutage](err); ok {
					return r.outage(cur, h, x, o)
				}
				if err != nil {
					return Outcome{}, r.lostOr(h, fmt.Errorf("run %s: mark awaiting tool results: %w", cur.id, err))
				}
			}
			r.emit(func() Event { return Event{RunID: cur.id, Seq: cur.seq, Kind: "external", Text: callNames(a.Calls)} })
			out := r.outcome(cur, store.StatusAwaitingToolResults)
			out.Pending = a.Calls
			return out, nil
		case core.RequestModelCall:
			if err = h.ensure(); err == nil {
				res, err = r.callModel(runCtx, ag, cur, a, x)
			}
		case core.RequestToolCalls:
			// Only a request reloaded from a checkpoint can have journaled calls.
			res, err = r.runTools(runCtx, ag, cur, a, !fresh, h)
		case core.RequestMemorySearch, core.RequestMemoryCreate, core.RequestMemoryTraverse:
			if err = h.ensure(); err == nil {
				res, err = r.memory(runCtx, cur, h, a)
				if res != nil {
					res = x.Result(core.Sanitize(res))
				}
			}
		default:
			return Outcome{}, fmt.Errorf("run %s: unknown action %T", cur.id, a)
		}
		if err != nil {
			if o, ok := errors.AsType[*StoreOutage](err); ok {
				return r.outage(cur, h, x, o)
			}
			if lost := h.lost(); lost != nil || errors.Is(err, store.ErrLeaseLost) {
				return Outcome{}, r.lostOr(h, fmt.Errorf("run %s step %d: %w", cur.id, cur.seq, err))
			}
			// A requested cancellation wins over a stall, an interrupt and
			// a hand-off: the call was cut short for it (or failed as it
			// came), and the loop ends the run at its next turn. One that
			// came since the heartbeat last looked is looked for now, so
			// the run is not let go unended.
			if p, ok := errors.AsType[*childPause](err); ok {
				return r.pauseOnChildren(cur, h, x, p)
			}
			_, stalled := errors.AsType[*stallError](err)
			if reason := h.cancelRequest(); reason != "" || (stalled || ctx.Err() != nil) && h.cancelNow() != "" {
				continue
			}
			if stall, ok := errors.AsType[*stallError](err); ok {
				return r.stall(durable, cur, h, x, stall)
			}
			if store.Unavailable(err) && h.lost() == nil && runCtx.Err() == nil {
				// A store call not retried by storeWrite (a lease renewal
				// before acting) met the outage: the run stalls all the same.
				return r.outage(cur, h, x, &StoreOutage{What: "a store call", Err: err})
			}
			if ctx.Err() != nil {
				if errors.Is(context.Cause(ctx), ErrHandOff) {
					// Not interrupted: left running for another worker.
					return r.outcome(cur, store.StatusRunning), nil
				}
				return r.interrupt(durable, cur, h, context.Cause(ctx))
			}
			if runCtx.Err() != nil {
				// The run's own deadline passed: it is cancelled, not resumable.
				res = core.Cancelled{Reason: fmt.Sprintf("the run's deadline of %s passed", r.opts.RunTimeout)}
			} else {
				return Outcome{}, fmt.Errorf("run %s step %d: %w", cur.id, cur.seq, err)
			}
		}
		changed := ag.current()
		if target := cur.takeHandoff(); target != nil {
			changed = target // a handoff: the run goes on with that agent
		}
		if changed != ag {
			// Picked up before the result is folded in: replay applies a
			// change recorded now from the next step on, Resume included.
			if err := r.changeAgent(durable, h, cur, ag, changed); err != nil {
				return Outcome{}, err
			}
			ag, cfg = changed, changed.Config
		}
		next, err := core.Resume(cfg, cur.st, res)
		if err != nil {
			return Outcome{}, fmt.Errorf("run %s step %d: resume: %w", cur.id, cur.seq, err)
		}
		cur.st, cur.result = next, res
	}
}

// cancellable reports whether a requested cancellation ends the run
// instead of a: a request, or a pause.
func cancellable(a core.Action) bool {
	_, pause := a.(core.RequestExternalToolCalls)
	return pause || isRequest(a)
}

// ends reports whether a ends the run (unless a waiting message keeps a
// completion running).
func ends(a core.Action) bool {
	switch a.(type) {
	case core.Complete, core.Fail:
		return true
	}
	return false
}

// isRequest reports whether a is a request the shell performs (a side
// effect), as opposed to an end or a pause.
func isRequest(a core.Action) bool {
	switch a.(type) {
	case core.RequestModelCall, core.RequestToolCalls, core.RequestMemorySearch, core.RequestMemoryCreate, core.RequestMemoryTraverse:
		return true
	}
	return false
}

// stallError stops a drive whose request failed transiently past its
// retry policy: the run stalls, resumable.
type stallError struct {
	reason  string
	retryAt time.Time
}

func (e *stallError) Error() string { return "stalled: " + e.reason }

// stall marks the run stalled; its last checkpoint stays the pending
// request, so Resume performs it again. Its stall count grows by one, and
// its retry waits by Options.StallBackoff for that count (never less than
// a server asked for).
func (r *Runner) stall(ctx context.Context, cur *cursor, h *holding, x Redactor, e *stallError) (Outcome, error) {
	out, err := r.markStalled(ctx, cur, h, x, e)
	if err != nil {
		return Outcome{}, r.lostOr(h, fmt.Errorf("run %s: mark stalled: %w", cur.id, err))
	}
	return out, nil
}

func (r *Runner) markStalled(ctx context.Context, cur *cursor, h *holding, x Redactor, e *stallError) (Outcome, error) {
	reason := x.String(e.reason)
	n := cur.stallAttempts + 1
	retryAt := r.stallWait(n, e.retryAt)
	if err := r.store.SetStatus(ctx, h.lease(), store.StatusChange{Status: store.StatusStalled, Reason: reason, RetryAt: retryAt, StallAttempts: n}); err != nil {
		return Outcome{}, err
	}
	cur.stallAttempts = n
	r.emit(func() Event {
		return Event{RunID: cur.id, Seq: cur.seq, Kind: "stalled", Text: fmt.Sprintf("%s (stall %d; next try after %s)", reason, n, retryAt.UTC().Format(time.RFC3339))}
	})
	out := r.outcome(cur, store.StatusStalled)
	out.Reason, out.RetryAt, out.StallAttempts = reason, retryAt, n
	return out, nil
}

// outage ends a drive the store stayed unavailable for (o): the run
// stalls, its last checkpoint the pending request. When even marking it
// stalled fails (the store is still away, or the lease expired
// meanwhile), the drive returns o, which matches store.ErrUnavailable:
// the run is resumable all the same (an orphaned running run, or one whose
// stall was not recorded).
func (r *Runner) outage(cur *cursor, h *holding, x Redactor, o *StoreOutage) (Outcome, error) {
	if o.Lost == nil {
		out, err := r.markStalled(h.durable, cur, h, x, &stallError{reason: o.summary()})
		if err == nil {
			return out, nil
		}
		return Outcome{}, fmt.Errorf("run %s step %d: %w (and it could not be marked stalled: %v)", cur.id, cur.seq, o, err)
	}
	return Outcome{}, fmt.Errorf("run %s step %d: %w", cur.id, cur.seq, o)
}

// progressed resets the stall count of a run that stalled before and has
// now checkpointed a new step (a checkpoint that changed the run's status
// reset it in the store already).
func (r *Runner) progressed(h *holding, cur *cursor, a core.Action) error {
	if cur.stallAttempts == 0 {
		return nil
	}
	cur.stallAttempts = 0
	if store.StatusOf(a) != store.StatusRunning {
		return nil
	}
	err := r.storeWrite(h, cur, "reset the stall count", func(ctx context.Context) error {
		return r.store.SetStatus(ctx, h.lease(), store.StatusChange{Status: store.StatusRunning})
	})
	if store.Unavailable(err) {
		return nil // the count stays too high until the next stall or checkpoint; nothing is lost
	}
	return err
}

// interrupt marks the run interrupted; its last checkpoint stays the pending
// request, so Resume performs it again.
func (r *Runner) interrupt(ctx context.Context, cur *cursor, h *holding, cause error) (Outcome, error) {
	reason := "interrupted"
	if cause != nil && !errors.Is(cause, context.Canceled) {
		reason = cause.Error()
	}
	if err := r.store.SetStatus(ctx, h.lease(), store.StatusChange{Status: store.StatusInterrupted, Reason: reason}); err != nil {
		return Outcome{}, r.lostOr(h, fmt.Errorf("run %s: mark interrupted: %w", cur.id, err))
	}
	r.emit(func() Event { return Event{RunID: cur.id, Seq: cur.seq, Kind: "interrupted", Text: reason} })
	out := r.outcome(cur, store.StatusInterrupted)
	out.Reason = reason
	return out, nil
}

func (r *Runner) outcome(cur *cursor, status store.Status) Outcome {
	st := cur.st
	return Outcome{RunID: cur.id, Status: status, Answer: st.Answer, Failure: st.Failure, ToolsUsed: st.ToolsUsed, Sources: st.Sources,
		Steps: cur.seq, InDoubt: cur.inDoubt}
}

// callModel performs a model call. The provider retries transient failures
// by its policy; when it gives up on one, the run stalls; a permanent
// failure is data, and the run fails.
func (r *Runner) callModel(ctx context.Context, ag *Agent, cur *cursor, a core.RequestModelCall, x Redactor) (core.Result, error) {
	p := ag.Models[a.Role]
	if p == nil {
		return nil, fmt.Errorf("%w %s", ErrNoProvider, a.Role)
	}
	start := time.Now()
	req := modelRequest(ag.Config, a, cur.st) // the state checkpointed with a (RenderModelCall rebuilds it)
	stream := r.modelStream(&req, cur, a.Role, x)
	reply, err := p.Complete(ctx, req)
	stream.flush()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, ErrModelPermanent) {
			e := &stallError{reason: fmt.Sprintf("the %s model is unavailable: %v", a.Role, err)}
			if te, ok := errors.AsType[*TransientError](err); ok && te.RetryAfter > 0 {
				e.retryAt = time.Now().Add(te.RetryAfter)
			}
			return nil, e
		}
		// The provider gave up for good: the model's failure is data, the
		// run fails, unless the request was too long, which the core
		// compacts and asks again, once.
		reply = core.ModelReply{Error: err.Error(), Overflow: errors.Is(err, ErrContextOverflow)}
	}
	reply = x.Result(core.Sanitize(reply)).(core.ModelReply)
	r.emit(func() Event {
		return Event{RunID: cur.id, Seq: cur.seq, Kind: "model", Text: describeReply(a.Role, reply), Duration: time.Since(start), Usage: reply.Usage,
			Start: start, Request: a, Result: reply}
	})
	return reply, nil
}

// memory performs a memory request. A read meets an unavailable store
// with storeWrite's retries; a write that meets one is not repeated (it
// may have been applied): the run stalls, as it does past the retries.
// Any other failure is data the model sees.
func (r *Runner) memory(ctx context.Context, cur *cursor, h *holding, a core.Action) (core.Result, error) {
	start := time.Now()
	var res core.Result
	switch a := a.(type) {
	case core.RequestMemorySearch:
		var hits []core.MemoryHit
		err := r.storeWrite(h, cur, "memory search", func(context.Context) error {
			var err error
			hits, err = r.store.MemorySearch(ctx, a.Namespace, a.Query, a.Limit)
			return err
		})
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if store.Unavailable(err) {
			return nil, err
		}
		res = core.MemoryHits{Hits: hits, Error: errText(err)}
	case core.RequestMemoryCreate:
		created, err := r.store.MemoryCreate(ctx, a.Namespace, a.Entities, a.Relations)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if store.Unavailable(err) {
			return nil, &StoreOutage{What: "memory create", Err: err}
		}
		if err != nil {
			created = core.MemoryCreated{Error: err.Error()}
		}
		res = created
	case core.RequestMemoryTraverse:
		var tr core.MemoryTraversed
		err := r.storeWrite(h, cur, "memory traverse", func(context.Context) error {
			var err error
			tr, err = r.store.MemoryTraverse(ctx, a.Namespace, a.From, a.Relation, a.Depth)
			return err
		})
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if store.Unavailable(err) {
			return nil, err
		}
		if err != nil {
			tr = core.MemoryTraversed{Error: err.Error()}
		}
		res = tr
	}
	r.emit(func() Event {
		return Event{RunID: cur.id, Seq: cur.seq, Kind: "memory", Text: core.DescribeAction(a) + " -> " + core.DescribeResult(res), Duration: time.Since(start),
			Start: start, Request: a, Result: res}
	})
	return res, nil
}

// emit tells the observer about an event; the event (and its text) is only
// built when someone observes, so the step loop pays nothing otherwise.
func (r *Runner) emit(event func() Event) {
	if r.opts.Observer != nil {
		r.opts.Observer.Event(event())
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func describeReply(role core.ModelRole, r core.ModelReply) string {
	switch {
	case r.Error != "":
		return fmt.Sprintf("%s model failed: %s", role, r.Error)
	case len(r.Calls) > 0:
		return fmt.Sprintf("%s model: %d tool call(s): %s", role, len(r.Calls), callNames(r.Calls))
	}
	return fmt.Sprintf("%s model: %d chars of text", role, len(r.Text))
}

// callNames lists calls as name#id, comma-separated.
func callNames[C core.NativeCall | core.ToolCall](calls []C) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		switch c := any(c).(type) {
		case core.NativeCall:
			names[i] = c.Name + "#" + c.ID
		case core.ToolCall:
			names[i] = c.Name + "#" + c.ID
		}
	}
	return strings.Join(names, ", ")
}
