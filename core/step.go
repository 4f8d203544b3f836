package core

import (
	"errors"
	"fmt"
)

// ErrBadState is returned by Step and Resume for a state that no run could
// have reached: a wrong version, an unknown phase, or a pending request that
// does not match the turn.
var ErrBadState = errors.New("bad state")

// Step decides what happens next. With a request already pending it re-issues
// that request unchanged (so a state reloaded after a crash repeats its last
// request); on an ended run it returns the same Complete or Fail again.
func Step(cfg Config, st State) (Action, error) {
	if err := checkState(st); err != nil {
		return nil, err
	}
	if st.Pending == nil && !st.Done() {
		st = decide(cfg, st)
	}
	return actionFor(cfg, st)
}

func checkState(st State) error {
	if st.Version != StateVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrBadState, st.Version, StateVersion)
	}
	switch st.Phase {
	case PhaseRecall, PhaseModel, PhaseEscalate, PhaseFinal, PhaseCompact, PhaseDone:
	case PhaseTools:
		if st.Turn == nil || len(st.Turn.Results) != len(st.Turn.Calls) {
			return fmt.Errorf("%w: phase tools without a well-formed turn", ErrBadState)
		}
		if p := st.Turn.Program; p != nil && p.Message < 0 {
			return fmt.Errorf("%w: the turn's program is in message %d", ErrBadState, p.Message)
		}
	case PhaseFailed:
		if st.Failure == nil {
			return fmt.Errorf("%w: phase failed without a failure", ErrBadState)
		}
	default:
		return fmt.Errorf("%w: unknown phase %q", ErrBadState, st.Phase)
	}
	if st.Pending != nil && st.Done() {
		return fmt.Errorf("%w: a request is pending on an ended run", ErrBadState)
	}
	return nil
}

// decide picks the next request and records it as pending, or ends the run.
func decide(cfg Config, st State) State {
	if st.Phase == PhaseModel {
		st = deliverQueue(st) // conversation.go
	}
	if st.Counters.Steps-st.turnBase().Steps >= cfg.maxSteps() {
		return failed(st, FailMaxSteps, fmt.Sprintf("the run reached its limit of %d steps without an answer", cfg.maxSteps()))
	}
	if st.Phase == PhaseModel || st.Phase == PhaseEscalate || st.Phase == PhaseFinal {
		var ended bool
		if st, ended = beforeModelCall(cfg, st); ended {
			return st
		}
	}
	if st.Phase == PhaseModel || st.Phase == PhaseFinal {
		var summarize bool
		if st, summarize = fitContext(cfg, st, st.Phase == PhaseFinal); st.Phase == PhaseFailed {
			return st
		} else if summarize {
			st.Counters.Steps++
			st.Counters.ModelCalls++
			st.Counters.Compactions++
			st.Phase = PhaseCompact
			st.Pending = &Pending{Kind: PendingModel, Role: cfg.summarizer()}
			return st
		}
	}
	st.Counters.Steps++
	switch st.Phase {
	case PhaseRecall:
		st.Pending = &Pending{Kind: PendingMemorySearch}
	case PhaseModel, PhaseFinal:
		st.Counters.ModelCalls++
		st.Pending = &Pending{Kind: PendingModel, Role: Primary}
	case PhaseEscalate:
		st.Counters.ModelCalls++
		st.Pending = &Pending{Kind: PendingModel, Role: Helper}
	case PhaseTools:
		st.Pending = nextBatch(cfg, st.Turn)
	}
	return st
}

// nextBatch picks what to run next from a turn, in the model's order: from
// the first unanswered call, the calls of the same kind that follow it
// without a gap. A memory call runs on its own; a run of internal (and MCP)
// calls is one RequestToolCalls (concurrent with Policy.Parallel); a run of
// external calls is one pause. So internal calls written before an
// external one run before the pause, and those written after it run once
// its result is in.
func nextBatch(cfg Config, turn *Turn) *Pending {
	var p *Pending
	for i, c := range turn.Calls {
		if turn.Results[i].CallID != "" {
			continue
		}
		kind := callKind(cfg, c)
		switch {
		case p == nil:
			p = &Pending{Kind: kind}
		case kind != p.Kind || kind != PendingTools && kind != PendingExternal:
			return p
		}
		p.CallIDs = append(p.CallIDs, c.ID)
	}
	if p == nil {
		return &Pending{Kind: PendingExternal} // no call left: pendingCalls reports the bad turn
	}
	return p
}

// callKind is the kind of request that runs c.
func callKind(cfg Config, c ToolCall) PendingKind {
	if kind, ok := memoryKind(c.Name); ok && cfg.Memory.Tools {
		return kind
	}
	if t, _ := cfg.tool(c.Name); t.mode() == ModeExternal {
		return PendingExternal
	}
	return PendingTools
}

// actionFor renders the state's pending request (or its end) as an Action.
func actionFor(cfg Config, st State) (Action, error) {
	switch st.Phase {
	case PhaseDone:
		return completeAction(st), nil
	case PhaseFailed:
		return Fail{Code: st.Failure.Code, Reason: st.Failure.Reason, State: st}, nil
	}
	p := st.Pending
	switch p.Kind {
	case PendingModel:
		switch {
		case st.Phase == PhaseCompact:
			return RequestModelCall{Role: p.Role, Messages: compactMessages(st), State: st}, nil
		case p.Role == Helper:
			return RequestModelCall{Role: Helper, Messages: helperMessages(cfg, st), State: st}, nil
		case st.Phase == PhaseFinal:
			return RequestModelCall{Role: Primary, Messages: contextView(st), State: st}, nil
		}
		return RequestModelCall{Role: Primary, Messages: contextView(st), Tools: nativeTools(cfg), State: st}, nil
	case PendingMemorySearch:
		if len(p.CallIDs) == 0 {
			return RequestMemorySearch{Namespace: cfg.namespace(), Query: st.Request.Input, Limit: cfg.recallLimit(), State: st}, nil
		}
	}
	calls, err := pendingCalls(st)
	if err != nil {
		return nil, err
	}
	switch p.Kind {
	case PendingTools:
		return RequestToolCalls{Calls: calls, Parallel: cfg.Policy.Parallel, StopOnError: cfg.Policy.StopOnError, State: st}, nil
	case PendingExternal:
		return RequestExternalToolCalls{Calls: calls, State: st}, nil
	case PendingMemorySearch, PendingMemoryCreate, PendingMemoryTraverse:
		return memoryAction(cfg, st, calls[0])
	}
	return nil, fmt.Errorf("%w: unknown pending kind %q", ErrBadState, p.Kind)
}

func pendingCalls(st State) ([]ToolCall, error) {
	if st.Turn == nil {
		return nil, fmt.Errorf("%w: pending %s without a turn", ErrBadState, st.Pending.Kind)
	}
	calls := make([]ToolCall, 0, len(st.Pending.CallIDs))
	for _, id := range st.Pending.CallIDs {
		i := st.Turn.index(id)
		if i < 0 {
			return nil, fmt.Errorf("%w: pending call %q is not in the turn", ErrBadState, id)
		}
		calls = append(calls, st.Turn.Calls[i])
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("%w: pending %s names no calls", ErrBadState, st.Pending.Kind)
	}
	return calls, nil
}

func (t *Turn) index(id string) int {
	for i, c := range t.Calls {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// nativeTools are the tools a model request carries: all of them for a
// format whose model calls tools natively (native, auto), none otherwise.
func nativeTools(cfg Config) []Tool {
	if spec, ok := cfg.formatSpec(); ok && spec.nativeTools {
		return cfg.tools()
	}
	return nil
}

func failed(st State, code FailCode, reason string) State {
	st.Pending = nil
	st.Phase = PhaseFailed
	st.Failure = &Failure{Code: code, Reason: reason}
	return st
}
