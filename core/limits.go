package core

import (
	"fmt"
	"strings"
)

// LimitPolicy is what happens when a run reaches Limits.MaxTurns.
type LimitPolicy string

// The limit policies. LimitFail (the default) fails the run with
// FailMaxTurns. LimitAnswer asks the primary model once more, without
// tools, for a final answer with what it has learned; the run completes
// with that answer, or fails with FailMaxTurns if the reply has none. So
// LimitAnswer makes at most MaxTurns+1 calls to the primary.
const (
	LimitFail   LimitPolicy = "fail"
	LimitAnswer LimitPolicy = "answer"
)

// finalRequest is what the model reads when its turns are used up under
// LimitAnswer.
const finalRequest = "You have used all your turns (%d). Do not call any tool: reply now with your final answer, " +
	"using what you have learned so far. If you could not finish, say what you found and what is missing."

// beforeModelCall checks the budgets and the turn limit before a model
// call is made. It returns the run ended, or the state to make the call
// from: unchanged, or turned to PhaseFinal by LimitAnswer.
func beforeModelCall(cfg Config, st State) (State, bool) {
	if why := spentOut(cfg, st); why != "" {
		return exhausted(st, why), true
	}
	n := cfg.Limits.MaxTurns
	if st.Phase != PhaseModel || n <= 0 || turns(st) < n {
		return st, false
	}
	if cfg.Policy.OnMaxTurns != LimitAnswer {
		return failed(st, FailMaxTurns, fmt.Sprintf("the run used its %s (max_turns) without an answer", plural(n, "model turn"))), true
	}
	st = appendMessages(st, Message{Role: RoleUser, Content: fmt.Sprintf(finalRequest, n)})
	st.Phase = PhaseFinal
	return st, false
}

// turns is how many calls the primary model has been asked: every model
// call but the helper's, and the helper is asked once per escalation by
// the time the primary is asked again.
// They count from the start of the user turn in progress.
func turns(st State) int {
	base := st.turnBase()
	calls := st.Counters.ModelCalls - st.Counters.Escalations - st.Counters.Compactions
	return calls - (base.ModelCalls - base.Escalations - base.Compactions)
}

// resumeFinal takes the primary's answer to the final request. Tool calls in
// it are not run: its text is the answer.
func resumeFinal(cfg Config, st State, r ModelReply) State {
	text := r.Text
	if parsed, err := cfg.parse(r); err == nil {
		text = parsed.Text
	}
	// Native calls are left out of the log: nothing will answer them.
	st = appendMessages(st, Message{Role: RoleAssistant, Content: r.Text})
	if text = strings.TrimSpace(text); text == "" {
		return failed(st, FailMaxTurns, fmt.Sprintf("the run used its %s (max_turns), and the model's final reply had no answer", plural(cfg.Limits.MaxTurns, "model turn")))
	}
	if cfg.Output != nil {
		out, err := structured(cfg, text)
		if err != nil {
			return failed(st, FailInvalidOutput, fmt.Sprintf("the model's final answer, asked for when its turns were used up, did not fit the output schema: %v", err))
		}
		text = string(out)
	}
	return complete(cfg, st, text)
}

// complete ends the run with its answer, cited as the agent asks.
// Messages the user sent meanwhile begin the next turn at once.
func complete(cfg Config, st State, text string) State {
	st.Phase = PhaseDone
	st.Answer = text
	st.Structured = cfg.Output != nil
	if !st.Structured {
		st.Answer = cite(cfg, st, text) // a JSON answer stays JSON
	}
	if st.Conv != nil && len(st.Conv.Queue) > 0 {
		st.Phase = PhaseModel
		return deliverQueue(st)
	}
	return st
}

// policyErrors are the problems of the run-limit policies' settings.
func (c Config) policyErrors() []string {
	var errs []string
	switch c.Policy.OnMaxTurns {
	case "", LimitFail, LimitAnswer:
	default:
		errs = append(errs, fmt.Sprintf("policy.on_max_turns %q is not one of fail, answer", c.Policy.OnMaxTurns))
	}
	switch c.Policy.Citations {
	case CiteNone, CiteSources, CiteTags, CiteBoth:
	default:
		errs = append(errs, fmt.Sprintf("policy.citations %q is not one of sources, tags, both", c.Policy.Citations))
	}
	errs = append(errs, c.Budget.errors()...)
	errs = append(errs, c.Conversation.errors()...)
	if c.Output != nil {
		errs = append(errs, c.Output.Errors()...)
	}
	if c.Context != nil {
		errs = append(errs, c.Context.Errors()...)
		if c.Context.Summarizer == Helper && c.Models.Helper == "" {
			errs = append(errs, "context.summarizer is helper, and the agent has no helper model")
		}
	}
	errs = append(errs, c.Models.PrimaryPrice.errors(Primary)...)
	errs = append(errs, c.Models.HelperPrice.errors(Helper)...)
	if c.Cycles != nil {
		errs = append(errs, c.Cycles.errors()...)
	}
	if c.Collaboration != nil {
		errs = append(errs, c.Collaboration.errors()...)
		if c.Models.Helper == "" {
			errs = append(errs, "collaboration needs a helper model to ask")
		}
	}
	return errs
}

// screenTurn applies the run-limit policies that look at a reply's turn as
// a whole (after admitCalls; before acceptCalls): cycles and the
// collaboration's count. ok is true when the calls may run; otherwise the
// run has failed, or the calls were refused and the model (or the helper)
// is asked next. (A helpers program's calls, reached one statement at a
// time, are checked by admitCalls and counted by acceptCalls, not screened
// here: see ADR 0016.)
func screenTurn(cfg Config, st State, msg Message, calls []ToolCall) (State, bool) {
	st, ok := screenCycle(cfg, st, msg, calls)
	if ok && cfg.Collaboration != nil {
		st, ok = collaborateOnCalls(cfg, st, msg, calls)
	}
	return st, ok
}
