package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Divergence is the first step where re-driving the core with the recorded
// results decides differently from the recording.
type Divergence struct {
	Seq      int
	Recorded string // the recorded action, rendered by the core
	Replayed string // the action the core decides now (or the error)
	// Detail says what differs when the two render alike (a message's text,
	// a counter in the state).
	Detail string
	// From is the replayed state the divergent step was decided from (the
	// state of step Seq-1, or the new agent's first state), and Result the
	// recorded result that step folded in (nil when none): where a
	// counterfactual continuation starts (Runner.Continue).
	From   core.State
	Result core.Result
}

// ReplayReport is the outcome of a replay.
type ReplayReport struct {
	RunID string
	Steps int // steps compared
	// Diverged is nil when every action matched the recording.
	Diverged *Divergence
}

// errStop ends the iteration over steps at the first divergence.
var errStop = errors.New("stop")

// RunReader is what a replay reads of recorded runs: a Store, or a run read
// from its export file (store/runfile.File).
type RunReader interface {
	Run(ctx context.Context, runID string) (store.RunInfo, error)
	Steps(ctx context.Context, runID string, fn func(store.StepRecord) error) error
}

// ConfigFrom is an agent change of a recorded run: from the step after Seq
// on, the core follows Config.
type ConfigFrom struct {
	Seq    int
	Config core.Config
}

// Replay re-drives the core over a recorded run with cfg, feeding it the
// recorded results, without calling any model or tool, and compares every
// action (and its continuation state) with the recording, byte for byte.
func Replay(ctx context.Context, st RunReader, runID string, cfg core.Config) (ReplayReport, error) {
	return ReplayChanges(ctx, st, runID, cfg, nil)
}

// ReplayChanges is Replay of a run whose agent changed while it ran: cfg
// drives it from its start, and each change from the step after its Seq
// on (store.AgentChanges, in order).
func ReplayChanges(ctx context.Context, st RunReader, runID string, cfg core.Config, changes []ConfigFrom) (ReplayReport, error) {
	start := cfg
	rep := ReplayReport{RunID: runID}
	info, err := st.Run(ctx, runID)
	if err != nil {
		return rep, fmt.Errorf("replay %s: %w", runID, err)
	}
	var cur core.State
	err = st.Steps(ctx, runID, func(rec store.StepRecord) error {
		if rec.Seq == 0 {
			cur = rec.State
			if info.ParentID != "" || rec.State.Request.History > 0 {
				// A fork starts from a state of its parent; a run started
				// from a message history, from that history as recorded.
				return nil
			}
			// A run starts from its input: a changed prompt or tool list
			// shows in the first request.
			first, err := core.Start(cfg, core.Request{Input: info.Input})
			if err != nil {
				rep.Diverged = &Divergence{Seq: 0, Recorded: core.DescribeState(rec.State), Replayed: "error: " + err.Error()}
				return errStop
			}
			cur = first
			return nil
		}
		rep.Steps++
		cfg = start
		for _, ch := range changes {
			if ch.Seq < rec.Seq {
				cfg = ch.Config
			}
		}
		from := cur
		diverge := func(replayed string) error {
			rep.Diverged = &Divergence{Seq: rec.Seq, Recorded: core.DescribeAction(rec.Action), Replayed: replayed, From: from, Result: rec.Result}
			return errStop
		}
		if rec.Result != nil {
			next, err := core.Resume(cfg, cur, rec.Result)
			if err != nil {
				return diverge("the recorded result no longer fits: " + err.Error())
			}
			cur = next
		}
		a, err := core.Step(cfg, cur)
		if err != nil {
			return diverge("error: " + err.Error())
		}
		if !sameAction(a, rec.Action, len(cur.Messages)) {
			err := diverge(core.DescribeAction(a))
			rep.Diverged.Detail = difference(rec.Action, a)
			return err
		}
		cur = a.Next()
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return rep, fmt.Errorf("replay %s: %w", runID, err)
	}
	return rep, nil
}

// sameAction compares two actions and their continuation states byte for
// byte. The message logs before index from were compared at earlier steps
// and are append-only, so only the rest is compared: the cost of a step
// does not grow with the run.
func sameAction(a, b core.Action, from int) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ab, err1 := core.EncodeAction(a)
	bb, err2 := core.EncodeAction(b)
	if err1 != nil || err2 != nil || !bytes.Equal(ab, bb) {
		return false
	}
	as, bs := a.Next(), b.Next()
	if len(as.Messages) != len(bs.Messages) || len(as.Messages) < from {
		return false
	}
	am, bm := as.Messages[from:], bs.Messages[from:]
	as.Messages, bs.Messages = nil, nil
	return sameBytes(core.EncodeState(as))(core.EncodeState(bs)) && sameBytes(core.EncodeMessages(am))(core.EncodeMessages(bm))
}

// sameBytes compares two encodings, treating any encoding error as a difference.
func sameBytes(x []byte, err1 error) func([]byte, error) bool {
	return func(y []byte, err2 error) bool { return err1 == nil && err2 == nil && bytes.Equal(x, y) }
}

// difference finds the first difference between two actions that render the
// same: a message sent to the model, or the continuation state.
func difference(recorded, replayed core.Action) string {
	if core.DescribeAction(recorded) != core.DescribeAction(replayed) {
		return ""
	}
	rm, ok1 := recorded.(core.RequestModelCall)
	pm, ok2 := replayed.(core.RequestModelCall)
	if ok1 && ok2 {
		for i := 0; i < len(rm.Messages) && i < len(pm.Messages); i++ {
			r, p := core.DescribeMessage(rm.Messages[i]), core.DescribeMessage(pm.Messages[i])
			if r != p {
				return fmt.Sprintf("message %d differs:\n  recorded: %s\n  replayed: %s", i, r, p)
			}
		}
	}
	return fmt.Sprintf("the continuation state differs:\n  recorded: %s\n  replayed: %s",
		core.DescribeState(recorded.Next()), core.DescribeState(replayed.Next()))
}

// ErrNoContinuation reports a divergence no run can continue from: the
// changed agent refuses the run's start.
var ErrNoContinuation = errors.New("nothing to continue from")

// Continue starts a counterfactual continuation of run runID from the
// divergence d a replay found, and drives it live with ag (the changed
// agent), until it ends, pauses, stalls or ctx ends, as Fork does. The new
// run is a fork of runID at step d.Seq-1 whose first state is d.From, the
// replayed state the divergent step was decided from. The result the
// recording folded in there (d.Result) is folded in by ag as it would be
// now; when it no longer fits, that request is performed again, live. So
// the new run's first decision is the divergent one, and the rest is what
// the changed agent does from there. The new run records ag.Source as its
// agent.
func (r *Runner) Continue(ctx context.Context, ag *Agent, runID string, d Divergence) (Outcome, error) {
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	if d.Seq < 1 {
		return Outcome{}, fmt.Errorf("continue %s: %w: the agent refuses the run's start (%s)", runID, ErrNoContinuation, d.Replayed)
	}
	info, err := r.store.Run(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("continue %s: %w", runID, err)
	}
	cur := &cursor{id: r.opts.NewID(), st: d.From}
	if d.Result != nil {
		res := NewRedactor(ag.Secrets).Result(core.Sanitize(d.Result))
		if next, err := core.Resume(ag.Config, d.From, res); err == nil {
			cur.st, cur.result = next, res
		}
	}
	return r.branch(ctx, ag, info, d.Seq-1, d.From, cur, "create continuation of "+runID)
}
