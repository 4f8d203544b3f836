package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// StoreOutage is the error of a drive that stopped because the store stayed
// unavailable (store.Unavailable) past Options.StoreRetry, or past the
// run's lease. It matches store.ErrUnavailable. The run's last checkpoint
// stands: it is resumable once the store answers.
type StoreOutage struct {
	// What is the write that failed ("checkpoint step 4").
	What string
	// For is how long the write was retried.
	For time.Duration
	// Err is the store's last error.
	Err error
	// Lost is the lease's loss when the lease expired unrenewed meanwhile
	// (the run could then not be marked stalled).
	Lost error
	// Unwritten lists outcomes of calls that ran and are known to this
	// process but could not be written (nil when none); the process keeps
	// them and writes them when it drives the run again. An operator can
	// give them with resume --results.
	Unwritten []core.ToolResult
}

func (e *StoreOutage) Error() string {
	msg := e.summary()
	if len(e.Unwritten) > 0 {
		msg += "; calls that finished but whose outcomes could not be written (a results file for resume --results): " + string(ResultsJSON(e.Unwritten))
	}
	return msg
}

// summary is the error without the unwritten outcomes' contents (a stall
// reason stays short): it counts them.
func (e *StoreOutage) summary() string {
	msg := fmt.Sprintf("the store is unavailable: %s failed for %s: %v", e.What, e.For.Round(time.Millisecond), e.Err)
	if e.Lost != nil {
		msg += "; the run's lease expired meanwhile"
	}
	if n := len(e.Unwritten); n > 0 {
		msg += fmt.Sprintf("; %d finished call(s) kept their outcome in the process, to write when the store answers", n)
	}
	return msg
}

// ResultsJSON renders tool results as a results file (see ParseResults):
// [{"tool_call_id", "result" | "error"}], on one line.
func ResultsJSON(results []core.ToolResult) []byte {
	type entry struct {
		ID     string          `json:"tool_call_id"`
		Result json.RawMessage `json:"result,omitempty"`
		Error  string          `json:"error,omitempty"`
	}
	out := make([]entry, len(results))
	for i, r := range results {
		out[i] = entry{ID: r.CallID, Error: r.Error}
		if r.Error == "" {
			out[i].Result, _ = json.Marshal(r.Output)
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// Unwrap matches store.ErrUnavailable and the store's error.
func (e *StoreOutage) Unwrap() []error { return []error{store.ErrUnavailable, e.Err} }

// storeWrite performs a store write of a drive, fenced by h's lease,
// retrying it by Options.StoreRetry while the store is unavailable; past
// that (or once the lease is lost) it returns a *StoreOutage. Any other
// error is returned as is. fn gets the drive's durable context; it must be
// idempotent (a write whose commit was not acknowledged is made again).
func (r *Runner) storeWrite(h *holding, cur *cursor, what string, fn func(ctx context.Context) error) error {
	p := r.opts.StoreRetry
	first := time.Now()
	for attempt := 1; ; attempt++ {
		err := fn(h.durable)
		if err == nil || !store.Unavailable(err) {
			if err != nil && attempt > 1 && h.lost() != nil {
				// The lease expired while the store was away.
				return &StoreOutage{What: what, For: time.Since(first), Err: err, Lost: h.lost()}
			}
			return err
		}
		if lost := h.lost(); lost != nil {
			return &StoreOutage{What: what, For: time.Since(first), Err: err, Lost: lost}
		}
		wait := p.Wait(attempt, rand.Float64)
		if attempt >= p.Attempts || time.Since(first)+wait > p.MaxElapsed {
			return &StoreOutage{What: what, For: time.Since(first), Err: err}
		}
		r.emit(func() Event {
			return Event{RunID: cur.id, Seq: cur.seq, Kind: "retry", Text: fmt.Sprintf("the store is unavailable (%s: %v); retry %d in %s", what, err, attempt, wait.Round(time.Millisecond))}
		})
		t := time.NewTimer(wait)
		select {
		case <-h.durable.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// checkpoint writes cp, riding out an unavailable store (storeWrite), and
// returns the status it left the run in (store.Runs.CheckpointStatus). A
// retry that finds the step's seq taken (store.ErrSeq), the run ended
// (store.ErrEnded) or the lease gone (store.ErrLeaseLost: the step gave it
// up, cp.Release) finds out whether the attempt that seemed to fail was
// committed after all, its acknowledgement lost with the connection
// (written).
func (r *Runner) checkpoint(h *holding, cur *cursor, cp store.Checkpoint) (left store.Status, err error) {
	retried := false
	err = r.storeWrite(h, cur, fmt.Sprintf("checkpoint step %d", cp.Seq), func(ctx context.Context) error {
		var err error
		l := h.lease()
		left, err = r.store.CheckpointStatus(ctx, l, cp)
		if retried && (errors.Is(err, store.ErrSeq) || errors.Is(err, store.ErrEnded) || errors.Is(err, store.ErrLeaseLost)) {
			var ok bool
			if ok, left = r.written(ctx, cur.id, l, cp); ok {
				return nil
			}
		}
		retried = retried || store.Unavailable(err)
		return err
	})
	return left, err
}

// written reports whether step cp of the run, refused when tried again
// under the lease l, was stored by an earlier attempt: the run's last step
// is cp.Seq and the lease is still l (a take-over always raises its token),
// held, or given up by cp itself (cp.Release, a step that ended the run).
// left is then the status cp left the run in: the end's, or "" (not known)
// while the lease is held.
func (r *Runner) written(ctx context.Context, runID string, l store.Lease, cp store.Checkpoint) (ok bool, left store.Status) {
	info, err := r.store.Run(ctx, runID)
	if err != nil || info.LastSeq != cp.Seq || info.Lease.Token != l.Token {
		return false, ""
	}
	switch {
	case info.Lease.Owner == l.Owner:
		return true, ""
	case info.Lease.Owner == "" && cp.Release:
		return true, store.StatusOf(cp.Action)
	}
	return false, ""
}

// unwrittenOutcomes are outcomes of calls that ran in this process and
// could not be written while the store was unavailable: kept, by run and
// step, and written before the run's request is performed again in this
// process, so that a finished call is never taken for one in doubt.
type unwrittenOutcomes struct {
	mu sync.Mutex
	m  map[unwrittenKey][]core.ToolResult
}

type unwrittenKey struct {
	run string
	seq int
}

func (u *unwrittenOutcomes) keep(run string, seq int, res core.ToolResult) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = make(map[unwrittenKey][]core.ToolResult)
	}
	k := unwrittenKey{run, seq}
	u.m[k] = append(u.m[k], res)
}

func (u *unwrittenOutcomes) take(run string, seq int) []core.ToolResult {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := unwrittenKey{run, seq}
	out := u.m[k]
	delete(u.m, k)
	return out
}

// writeUnwritten writes the outcomes this process kept for the run's step
// (unwrittenOutcomes); those it still cannot write are kept again.
func (r *Runner) writeUnwritten(h *holding, cur *cursor) error {
	kept := r.unwritten.take(cur.id, cur.seq)
	for i, res := range kept {
		err := r.storeWrite(h, cur, "record outcome of "+res.CallID, func(ctx context.Context) error {
			return r.store.RecordOutcome(ctx, h.lease(), cur.seq, res)
		})
		if err != nil {
			for _, left := range kept[i:] {
				r.unwritten.keep(cur.id, cur.seq, left)
			}
			if o, ok := errors.AsType[*StoreOutage](err); ok {
				o.Unwritten = kept[i:]
			}
			return err
		}
	}
	return nil
}

// stallWait is when a run that stalls for the n-th time in a row is
// retried: Options.StallBackoff's wait before retry n, never earlier than
// asked (a server's Retry-After).
func (r *Runner) stallWait(n int, asked time.Time) time.Time {
	at := time.Now().Add(r.opts.StallBackoff.Wait(n, rand.Float64))
	if asked.After(at) {
		return asked
	}
	return at
}
