package shell

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// drive runs the loop: Step, checkpoint, perform, Resume, until the run ends,
// pauses, or ctx ends.
func (r *Runner) drive(ctx context.Context, ag *Agent, cur *cursor) (Outcome, error) {
	runCtx := ctx
	if r.opts.RunTimeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, r.opts.RunTimeout)
		defer cancel()
	}
	cfg := ag.Config
	// Checkpoints run to their end whatever ctx does: a request is durable
	// before it is made, or not made.
	durable := context.WithoutCancel(ctx)
	for {
		// A state that came from Resume (or the first state of a run) is new;
		// a loaded checkpoint is already durable and is only re-issued.
		fresh := cur.result != nil || (cur.st.Pending == nil && !cur.st.Done())
		a, err := core.Step(cfg, cur.st)
		if err != nil {
			return Outcome{}, fmt.Errorf("run %s: step: %w", cur.id, err)
		}
		if fresh {
			// Persist before acting: the request is durable before it is made.
			cp := store.Checkpoint{Seq: cur.seq + 1, Result: cur.result, Action: a}
			if err := r.store.Checkpoint(durable, cur.id, cp); err != nil {
				return Outcome{}, fmt.Errorf("run %s: checkpoint step %d: %w", cur.id, cp.Seq, err)
			}
			cur.seq, cur.result = cp.Seq, nil
		}
		cur.st = a.Next()

		var res core.Result
		switch a := a.(type) {
		case core.Complete:
			r.emit(func() Event { return Event{RunID: cur.id, Seq: cur.seq, Kind: "complete", Text: a.Answer} })
			return r.outcome(cur, store.StatusCompleted), nil
		case core.Fail:
			r.emit(func() Event {
				return Event{RunID: cur.id, Seq: cur.seq, Kind: "fail", Text: fmt.Sprintf("%s: %s", a.Code, a.Reason)}
			})
			return r.outcome(cur, store.StatusFailed), nil
		case core.RequestExternalToolCalls:
			if !fresh {
				// A pause re-issued from a stored state (a fork taken at a
				// pause) has no new checkpoint to set the status.
				if err := r.store.SetStatus(context.WithoutCancel(ctx), cur.id, store.StatusAwaitingToolResults, ""); err != nil {
					return Outcome{}, fmt.Errorf("run %s: mark awaiting tool results: %w", cur.id, err)
				}
			}
			r.emit(func() Event { return Event{RunID: cur.id, Seq: cur.seq, Kind: "external", Text: callNames(a.Calls)} })
			out := r.outcome(cur, store.StatusAwaitingToolResults)
			out.Pending = a.Calls
			return out, nil
		case core.RequestModelCall:
			res, err = r.callModel(runCtx, ag, cur, a)
		case core.RequestToolCalls:
			// Only a request reloaded from a checkpoint can have journaled calls.
			res, err = r.runTools(runCtx, ag, cur, a, !fresh)
		case core.RequestMemorySearch, core.RequestMemoryCreate, core.RequestMemoryTraverse:
			res, err = r.memory(runCtx, cur, a)
		default:
			return Outcome{}, fmt.Errorf("run %s: unknown action %T", cur.id, a)
		}
		if err != nil {
			if ctx.Err() != nil {
				return r.interrupt(cur, ctx.Err())
			}
			if runCtx.Err() != nil {
				// The run's own deadline passed: it fails, it is not resumable.
				res = core.Cancelled{Reason: fmt.Sprintf("the run's deadline of %s passed", r.opts.RunTimeout)}
			} else {
				return Outcome{}, fmt.Errorf("run %s step %d: %w", cur.id, cur.seq, err)
			}
		}
		next, err := core.Resume(cfg, cur.st, res)
		if err != nil {
			return Outcome{}, fmt.Errorf("run %s step %d: resume: %w", cur.id, cur.seq, err)
		}
		cur.st, cur.result = next, res
	}
}

// interrupt marks the run interrupted; its last checkpoint stays the pending
// request, so Resume performs it again.
func (r *Runner) interrupt(cur *cursor, cause error) (Outcome, error) {
	if err := r.store.SetStatus(context.Background(), cur.id, store.StatusInterrupted, cause.Error()); err != nil {
		return Outcome{}, fmt.Errorf("run %s: mark interrupted: %w", cur.id, err)
	}
	r.emit(func() Event { return Event{RunID: cur.id, Seq: cur.seq, Kind: "interrupted", Text: cause.Error()} })
	out := r.outcome(cur, store.StatusInterrupted)
	return out, nil
}

func (r *Runner) outcome(cur *cursor, status store.Status) Outcome {
	st := cur.st
	return Outcome{RunID: cur.id, Status: status, Answer: st.Answer, Failure: st.Failure, ToolsUsed: st.ToolsUsed, Sources: st.Sources, Steps: cur.seq}
}

func (r *Runner) callModel(ctx context.Context, ag *Agent, cur *cursor, a core.RequestModelCall) (core.Result, error) {
	p := ag.Models[a.Role]
	if p == nil {
		return nil, fmt.Errorf("%w %s", ErrNoProvider, a.Role)
	}
	start := time.Now()
	reply, err := p.Complete(ctx, ModelRequest{Role: a.Role, Call: cur.st.Counters.ModelCalls, Messages: a.Messages, Tools: a.Tools})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The provider gave up: the model's failure is data, the run fails.
		reply = core.ModelReply{Error: err.Error()}
	}
	r.emit(func() Event {
		return Event{RunID: cur.id, Seq: cur.seq, Kind: "model", Text: describeReply(a.Role, reply), Duration: time.Since(start), Usage: reply.Usage}
	})
	return reply, nil
}

func (r *Runner) memory(ctx context.Context, cur *cursor, a core.Action) (core.Result, error) {
	start := time.Now()
	var res core.Result
	switch a := a.(type) {
	case core.RequestMemorySearch:
		hits, err := r.store.MemorySearch(ctx, a.Namespace, a.Query, a.Limit)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res = core.MemoryHits{Hits: hits, Error: errText(err)}
	case core.RequestMemoryCreate:
		created, err := r.store.MemoryCreate(ctx, a.Namespace, a.Entities, a.Relations)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			created = core.MemoryCreated{Error: err.Error()}
		}
		res = created
	case core.RequestMemoryTraverse:
		tr, err := r.store.MemoryTraverse(ctx, a.Namespace, a.From, a.Relation, a.Depth)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			tr = core.MemoryTraversed{Error: err.Error()}
		}
		res = tr
	}
	r.emit(func() Event {
		return Event{RunID: cur.id, Seq: cur.seq, Kind: "memory", Text: core.DescribeAction(a) + " -> " + core.DescribeResult(res), Duration: time.Since(start)}
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
