package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors returned by Resume for a result that does not fit the pending
// request. Resume leaves the state unchanged whenever it returns one.
var (
	ErrNothingPending  = errors.New("no request is pending")
	ErrWrongResult     = errors.New("result does not match the pending request")
	ErrUnknownCall     = errors.New("result for a call that is not pending")
	ErrDuplicateResult = errors.New("more than one result for a call")
	ErrMissingResults  = errors.New("results missing for pending calls")
)

// Resume folds the outcome of the pending request into the state. A result of
// the wrong kind, for an unknown or repeated call id, or missing a required
// call is refused with an error and the state is left as it was. Cancelled
// ends the run whatever is pending.
func Resume(cfg Config, st State, res Result) (State, error) {
	if err := checkState(st); err != nil {
		return st, err
	}
	res = sanitize(res)
	var next State
	var err error
	switch r := res.(type) {
	case UserMessage:
		next, err = receive(cfg, st, r) // conversation.go
	case Cancelled:
		return cancel(st, r)
	default:
		if st.Pending == nil {
			return st, fmt.Errorf("%w (phase %s)", ErrNothingPending, st.Phase)
		}
		next, err = resume(cfg, st, res)
	}
	if err != nil {
		return st, err
	}
	if next.Phase != PhaseFailed && next.Counters.Bytes > cfg.maxStateBytes() {
		next = failed(next, FailStateTooLarge, fmt.Sprintf("the conversation grew to about %d bytes, over the limit of %d", next.Counters.Bytes, cfg.maxStateBytes()))
	}
	return next, nil
}

// cancel ends the run cancelled: at whatever request is pending, or, on a
// run that answered, closing its conversation.
func cancel(st State, c Cancelled) (State, error) {
	reason := "the run was cancelled"
	switch {
	case st.Phase == PhaseDone:
		reason = "the conversation was closed"
	case st.Pending == nil:
		return st, fmt.Errorf("%w (phase %s)", ErrNothingPending, st.Phase)
	}
	if c.Reason != "" {
		reason += ": " + c.Reason
	}
	return failed(st, FailCancelled, reason), nil
}

func resume(cfg Config, st State, res Result) (State, error) {
	p := st.Pending
	switch p.Kind {
	case PendingModel:
		r, ok := res.(ModelReply)
		if !ok {
			return st, wrongKind(p, res)
		}
		st.Pending = nil
		st.Counters.PromptTokens += r.Usage.PromptTokens
		st.Counters.CompletionTokens += r.Usage.CompletionTokens
		st = charge(cfg, st, p.Role, r.Usage)
		if r.Error != "" {
			if r.Overflow && p.Role == Primary && (st.Phase == PhaseModel || st.Phase == PhaseFinal) {
				if next, again := overflowed(cfg, st, r); again {
					return next, nil // context.go: compacted, then asked again
				}
			}
			return failed(st, FailModelError, fmt.Sprintf("the %s model failed: %s", p.Role, r.Error)), nil
		}
		if st.Phase == PhaseCompact {
			return resumeCompact(cfg, st, r), nil
		}
		if p.Role == Primary {
			st = noteReply(st, r, len(st.Messages))
		}
		if st.Phase == PhaseFinal {
			return resumeFinal(cfg, st, r), nil
		}
		if p.Role == Helper {
			return resumeHelper(st, r), nil
		}
		return resumeModel(cfg, st, r), nil
	case PendingTools, PendingExternal:
		r, ok := res.(ToolResults)
		if !ok {
			return st, wrongKind(p, res)
		}
		return answerCalls(cfg, st, r.Results)
	case PendingMemorySearch, PendingMemoryCreate, PendingMemoryTraverse:
		return resumeMemory(cfg, st, res)
	}
	return st, fmt.Errorf("%w: unknown pending kind %q", ErrBadState, p.Kind)
}

func wrongKind(p *Pending, res Result) error {
	return fmt.Errorf("%w: pending %s, got %s", ErrWrongResult, p.Kind, resultKind(res))
}

// answerCalls records results for pending calls. It checks them all before
// changing anything: every id must be pending and answered at most once, and
// every pending id must be answered, except that with stop-on-error the calls
// after a failed one may be left out.
func answerCalls(cfg Config, st State, results []ToolResult) (State, error) {
	p := st.Pending
	seen := make([]bool, len(p.CallIDs))
	firstFailed := len(p.CallIDs)
	for _, r := range results {
		i := slices.Index(p.CallIDs, r.CallID)
		if i < 0 {
			return st, fmt.Errorf("%w: %q (pending: %s)", ErrUnknownCall, r.CallID, strings.Join(p.CallIDs, ", "))
		}
		if seen[i] {
			return st, fmt.Errorf("%w: %q", ErrDuplicateResult, r.CallID)
		}
		seen[i] = true
		if r.Failed() && i < firstFailed {
			firstFailed = i
		}
	}
	stopping := cfg.Policy.StopOnError && firstFailed < len(p.CallIDs)
	var missing []string
	for i, ok := range seen {
		if !ok && !(stopping && p.Kind == PendingTools && i > firstFailed) {
			missing = append(missing, p.CallIDs[i])
		}
	}
	if len(missing) > 0 {
		return st, fmt.Errorf("%w: %s", ErrMissingResults, strings.Join(missing, ", "))
	}

	turn := *st.Turn
	turn.Results = append([]ToolResult(nil), st.Turn.Results...)
	for _, r := range results {
		i := turn.index(r.CallID)
		t, _ := cfg.tool(turn.Calls[i].Name)
		r.Output = cfg.modelOutput(t, r.Output) // summary.go: summarized or cut
		r.Error = truncate(r.Error, cfg.resultCap(t))
		turn.Results[i] = r
		st.Sources = addOnce(st.Sources, r.Sources...)
		st = spend(cfg, st, r.Spent)
	}
	st = noteRan(st, &turn, results)
	if stopping {
		failedID := p.CallIDs[firstFailed]
		for i := range turn.Results {
			if turn.Results[i].CallID == "" {
				turn.Results[i] = ToolResult{CallID: turn.Calls[i].ID, Error: fmt.Sprintf("not run: call %s failed and this agent stops a turn at the first error", failedID)}
			}
		}
		turn.Stopped = true
	}
	st.Pending = nil
	st.Turn = &turn
	for _, r := range turn.Results {
		if r.CallID == "" {
			return st, nil // more of this turn to run
		}
	}
	if turn.Program != nil {
		return resumeProgram(cfg, st)
	}
	return finishTurn(cfg, st), nil
}

// finishTurn hands every result of the turn to the model, in the order the
// model asked, and goes back to the model.
func finishTurn(cfg Config, st State) State { return finishTurnWith(cfg, st, "") }

// finishTurnWith is finishTurn with a note after the results of a text
// format (a helpers program's error).
func finishTurnWith(cfg Config, st State, note string) State {
	turn := st.Turn
	st.Turn = nil
	st.Phase = PhaseModel
	results := turn.Results
	if prefix := cfg.Policy.ErrorPrefix; prefix != "" {
		results = make([]ToolResult, len(turn.Results))
		for i, r := range turn.Results {
			if r.Failed() {
				r.Error = prefix + r.Error
			}
			results[i] = r
		}
	}
	if turn.Native {
		msgs := make([]Message, len(turn.Calls))
		for i, c := range turn.Calls {
			msgs[i] = Message{Role: RoleTool, CallID: c.ID, Name: c.Name, Content: resultText(results[i]), IsError: results[i].Failed(), Attachments: results[i].Attachments}
		}
		return endTurn(cfg, afterTurn(cfg, appendMessages(st, msgs...), turn), turn)
	}
	content := renderTurnResults(cfg, st, turn.Calls, results)
	if note != "" {
		content += "\n" + note
	}
	return endTurn(cfg, afterTurn(cfg, appendMessages(st, Message{Role: RoleUser, Content: content, Attachments: attachmentsOf(results)}), turn), turn)
}

// resultText is what the model reads for a call: its output, or its error
// text exactly as the tool gave it (the state still records that it failed).
func resultText(r ToolResult) string {
	if r.Failed() {
		return r.Error
	}
	return r.Output
}
