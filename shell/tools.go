package shell

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// unknownOutcome is what the model sees for a non-idempotent call that was
// in flight when the process died: it may or may not have happened.
const unknownOutcome = "outcome unknown: the run was interrupted while this call was running and the tool is not idempotent, so it was not run again; check its effect before retrying"

// runTools performs one RequestToolCalls. Calls recorded as completed before
// a crash are not run again; calls that were in flight run again when the
// tool is idempotent, and otherwise follow the agent's in-doubt policy.
// Results come back in the model's order. Nothing starts without the
// lease: a non-idempotent call's intent is fenced, and every call first
// checks that the lease is still held.
func (r *Runner) runTools(ctx context.Context, ag *Agent, cur *cursor, a core.RequestToolCalls, recovering bool, h *holding) (core.Result, error) {
	var known map[string]store.Intent
	if recovering {
		// Outcomes this process knew but could not write go first: a
		// finished call is not taken for one in doubt.
		if err := r.writeUnwritten(h, cur); err != nil {
			return nil, err
		}
		var intents []store.Intent
		err := r.storeWrite(h, cur, "load intents", func(context.Context) error {
			var err error
			intents, err = r.store.Intents(ctx, cur.id, cur.seq)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("load intents: %w", err)
		}
		known = make(map[string]store.Intent, len(intents))
		for _, in := range intents {
			known[in.CallID] = in
		}
	}
	results := make([]core.ToolResult, len(a.Calls))
	done := make([]bool, len(a.Calls))
	var todo []int
	var waiting []string
	for i, c := range a.Calls {
		in, seen := known[c.ID]
		switch {
		case seen && in.State == store.IntentCompleted && in.Result != nil:
			results[i], done[i] = *in.Result, true
		case seen && !r.idempotent(ag, c.Name):
			d := InDoubtCall{Call: c, Step: cur.seq, Started: in.Started}
			switch ag.InDoubt {
			case InDoubtRerun:
				d.Resolution = "rerun"
				todo = append(todo, i)
			case InDoubtWait:
				d.Resolution = "waiting"
				waiting = append(waiting, fmt.Sprintf("%s (%s)", c.ID, c.Name))
			default:
				d.Resolution = "unknown"
				results[i], done[i] = core.ToolResult{CallID: c.ID, Error: unknownOutcome}, true
				if err := r.recordOutcome(h, cur, results[i]); err != nil {
					return nil, err
				}
			}
			cur.inDoubt = append(cur.inDoubt, d)
			r.emit(func() Event {
				return Event{RunID: cur.id, Seq: cur.seq, Kind: "in_doubt", Text: fmt.Sprintf("%s#%s was in flight when the run stopped: %s", c.Name, c.ID, d.Resolution)}
			})
		default:
			todo = append(todo, i)
		}
	}
	if len(waiting) > 0 {
		return nil, &stallError{reason: "in doubt: " + strings.Join(waiting, ", ") +
			" may or may not have run; answer with stepwise resume " + cur.id + ` --results FILE ({"tool_call_id", "result" | "error" | "not_run": true})`}
	}

	// Journal what a crash could otherwise lose or repeat wrongly: a
	// non-idempotent call records its intent before it starts (so a crash
	// mid-call is "outcome unknown", not a second charge) and its outcome
	// after; an idempotent call does so only in a batch of several calls,
	// so the finished ones are not run again. A lone idempotent call's
	// result reaches the store with the next checkpoint, and a crash before
	// that runs it again, which its declaration allows.
	journal := len(todo) > 1
	calls := a.Calls // not a: the closure would move all of a to the heap
	var pauses []core.ToolCall
	var pauseMu sync.Mutex
	x := NewRedactor(ag.Secrets)
	run := func(i int) error {
		c := calls[i]
		idem := r.idempotent(ag, c.Name)
		if ctx.Err() != nil {
			return ctx.Err() // interrupted before it started: it never ran
		}
		if err := h.ensure(); err != nil {
			return err
		}
		if hand := ag.Handoffs[c.Name]; hand != nil {
			res := r.handOffTo(ctx, cur, hand, c)
			results[i], done[i] = res, true
			r.emit(func() Event {
				return Event{RunID: cur.id, Seq: cur.seq, Kind: "tool", Text: describeToolResult(c, res), Call: c, Result: core.ToolResults{Results: []core.ToolResult{res}}}
			})
			return nil
		}
		if sub := ag.SubAgents[c.Name]; sub != nil {
			// A child run (subagents.go): found again after a restart, so
			// it is never started twice; its pause pauses this run.
			res, pending, err := r.runChild(ctx, ag, cur, sub, c)
			if err != nil {
				return err
			}
			if pending != nil {
				pauseMu.Lock()
				pauses = append(pauses, pending...)
				pauseMu.Unlock()
				return nil
			}
			results[i], done[i] = x.ToolResult(sanitizeTool(res)), true
			r.emit(func() Event {
				return Event{RunID: cur.id, Seq: cur.seq, Kind: "tool", Text: describeToolResult(c, res), Call: c, Result: core.ToolResults{Results: []core.ToolResult{res}}}
			})
			return nil
		}
		if res, ok := r.fromCache(ctx, ag, cur, c, x); ok {
			results[i], done[i] = res, true
			r.emit(func() Event {
				return Event{RunID: cur.id, Seq: cur.seq, Kind: "tool", Text: describeToolResult(c, res)}
			})
			return nil
		}
		if !idem || journal {
			err := r.storeWrite(h, cur, "record intent of "+c.ID, func(ctx context.Context) error {
				return r.store.RecordIntent(ctx, h.lease(), cur.seq, c)
			})
			if err != nil {
				return fmt.Errorf("record intent of %s: %w", c.ID, err)
			}
		}
		start := time.Now()
		res, err := r.callWithRetry(ctx, ag, cur, c, idem, x)
		if err != nil {
			return err
		}
		if !idem || journal {
			if err := r.recordOutcome(h, cur, res); err != nil {
				return err
			}
		}
		r.toCache(ctx, ag, cur, c, res, x)
		results[i], done[i] = res, true
		r.emit(func() Event {
			return Event{RunID: cur.id, Seq: cur.seq, Kind: "tool", Text: describeToolResult(c, res), Duration: time.Since(start),
				Start: start, Call: c, Result: core.ToolResults{Results: []core.ToolResult{res}}}
		})
		return nil
	}

	if a.Parallel && !a.StopOnError && len(todo) > 1 {
		var wg sync.WaitGroup
		errs := make([]error, len(todo))
		for k, i := range todo {
			wg.Go(func() { errs[k] = run(i) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
	} else {
		for _, i := range todo {
			if a.StopOnError && anyFailed(results, done) {
				break
			}
			if err := run(i); err != nil {
				return nil, err
			}
		}
	}

	if len(pauses) > 0 {
		return nil, &childPause{pending: pauses}
	}
	out := make([]core.ToolResult, 0, len(a.Calls))
	for i := range a.Calls {
		if done[i] {
			out = append(out, results[i])
		}
	}
	return core.ToolResults{Results: out}, nil
}

// callWithRetry runs one call. An idempotent tool's transient failure is
// retried by the tool's retry policy, and when that is exhausted the run
// stalls; a non-idempotent tool is never run twice by a retry, and its
// transient failure reaches the model like any other. The result is valid
// UTF-8 and redacted. A cancelled call is ctx's error: it stays in flight,
// not completed.
func (r *Runner) callWithRetry(ctx context.Context, ag *Agent, cur *cursor, c core.ToolCall, idem bool, x Redactor) (core.ToolResult, error) {
	policy := ag.ToolRetry[c.Name].WithDefaults(DefaultToolRetry)
	first := time.Now()
	for attempt := 1; ; attempt++ {
		res := r.callTool(ctx, ag, cur, c, x)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res = x.ToolResult(sanitizeTool(res))
		if !res.Transient || !idem {
			res.Transient = false
			return res, nil
		}
		wait := policy.Wait(attempt, rand.Float64)
		if attempt >= policy.Attempts || time.Since(first)+wait > policy.MaxElapsed {
			return res, &stallError{reason: fmt.Sprintf("tool %s (call %s) failed %d time(s): %s", c.Name, c.ID, attempt, firstLine(res.Error))}
		}
		r.emit(func() Event {
			return Event{RunID: cur.id, Seq: cur.seq, Kind: "retry", Text: fmt.Sprintf("%s#%s failed (%s); retry %d in %s", c.Name, c.ID, firstLine(res.Error), attempt, wait.Round(time.Millisecond))}
		})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		case <-t.C:
		}
	}
}

// recordOutcome records a call's outcome, riding out an unavailable
// store (storeWrite). When the store stays away, the outcome is kept in
// the process (unwrittenOutcomes) and named in the *StoreOutage: the call
// finished, and is never reported in doubt by this process.
func (r *Runner) recordOutcome(h *holding, cur *cursor, res core.ToolResult) error {
	err := r.storeWrite(h, cur, "record outcome of "+res.CallID, func(ctx context.Context) error {
		return r.store.RecordOutcome(ctx, h.lease(), cur.seq, res)
	})
	if o, ok := errors.AsType[*StoreOutage](err); ok {
		r.unwritten.keep(cur.id, cur.seq, res)
		o.Unwritten = append(o.Unwritten, res)
		return o
	}
	if err != nil {
		return fmt.Errorf("record outcome of %s: %w", res.CallID, err)
	}
	return nil
}

func anyFailed(results []core.ToolResult, done []bool) bool {
	for i, r := range results {
		if done[i] && r.Failed() {
			return true
		}
	}
	return false
}

// callTool runs one call with its timeout, turning panics and timeouts into
// tool errors and capping the output.
func (r *Runner) callTool(ctx context.Context, ag *Agent, cur *cursor, c core.ToolCall, x Redactor) (res core.ToolResult) {
	t := ag.Tools[c.Name]
	if t == nil {
		return core.ToolResult{CallID: c.ID, Error: fmt.Sprintf("tool %q is not available in this shell", c.Name)}
	}
	// A rate's wait comes before the call's timeout starts.
	if err := r.waitForRate(ctx, ag, cur, c.Name, c.ID, ag.ToolSettings[c.Name].Rate); err != nil {
		return core.ToolResult{CallID: c.ID, Error: fmt.Sprintf("interrupted while it waited for its rate (%v)", err)}
	}
	timeout := r.opts.ToolTimeout
	if d, ok := ag.ToolTimeouts[c.Name]; ok && d > 0 {
		timeout = d
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			res = core.ToolResult{CallID: c.ID, Error: fmt.Sprintf("the tool crashed: %v", p)}
		}
	}()
	settings := ag.ToolSettings[c.Name]
	rc := RunContext{RunID: cur.id, Step: cur.seq, Agent: ag.Config.Name, View: runView(settings.View, ag, cur, x), Progress: r.progressFor(ag, cur, c)}
	res = t.Run(tctx, c, rc)
	res.CallID = c.ID
	if tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil && !res.Failed() {
		res = core.ToolResult{CallID: c.ID, Error: fmt.Sprintf("timed out after %s", timeout)}
	}
	res = checkOutput(settings.OutputSchema, c, res)
	res.Output = capBytes(res.Output, r.opts.MaxToolOutput)
	res.Error = capBytes(res.Error, r.opts.MaxToolOutput)
	return res
}

func (r *Runner) idempotent(ag *Agent, name string) bool {
	// The config first: it is at hand, where a tool may build its Spec
	// on every call.
	for _, t := range ag.Config.ToolList() {
		if t.Name == name && t.Idempotent {
			return true
		}
	}
	t := ag.Tools[name]
	return t != nil && t.Spec().Idempotent
}

// capBytes cuts s to n bytes on a UTF-8 boundary, saying so.
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[output capped at %d of %d bytes]", cut, len(s))
}

func describeToolResult(c core.ToolCall, r core.ToolResult) string {
	if r.Failed() {
		return fmt.Sprintf("%s#%s failed: %s", c.Name, c.ID, firstLine(r.Error))
	}
	if r.Cached {
		return fmt.Sprintf("%s#%s ok (%d bytes, cached)", c.Name, c.ID, len(r.Output))
	}
	return fmt.Sprintf("%s#%s ok (%d bytes)", c.Name, c.ID, len(r.Output))
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i] + " …"
		}
	}
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
