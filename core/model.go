package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// resumeModel folds in a reply of the primary model: a final answer, a turn of
// valid calls, or a correction sent back to the model.
func resumeModel(cfg Config, st State, r ModelReply) State {
	parsed, perr := cfg.parse(r)
	calls := withIDs(parsed.Calls, st.Counters.Steps)
	msg := Message{Role: RoleAssistant, Content: r.Text, Opaque: r.Opaque}
	if len(r.Calls) > 0 {
		msg.Calls = nativeCalls(calls, r.Calls)
	}
	st = appendMessages(st, msg)
	if perr != nil {
		return correct(cfg, st, msg, []string{perr.Error()})
	}
	if parsed.program != nil {
		return startProgram(cfg, st, msg, parsed)
	}
	if len(calls) == 0 {
		return answer(cfg, st, parsed.Text)
	}
	if n := cfg.maxCallsPerTurn(); len(calls) > n {
		return correct(cfg, st, msg, []string{fmt.Sprintf("you made %d tool calls in one reply; at most %d are allowed per turn", len(calls), n)})
	}
	valid := make([]ToolCall, len(calls))
	var errs []string
	for i, c := range calls {
		if j := indexOfCall(calls[:i], c.ID); j >= 0 {
			errs = append(errs, fmt.Sprintf("call id %q is used by more than one call; give each call its own id", c.ID))
			continue
		}
		tc, err := ValidateCall(cfg, c)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		tc.Raw = parsed.raw(i)
		valid[i] = tc
	}
	if len(errs) > 0 {
		return correct(cfg, st, msg, errs)
	}
	st, ok := admitCalls(cfg, st, valid)
	if !ok {
		return st
	}
	if st, ok = screenTurn(cfg, st, msg, valid); !ok {
		return st
	}
	st = acceptCalls(cfg, st, valid)
	st.Counters.Corrections = 0
	st.Phase = PhaseTools
	st.Turn = &Turn{Calls: valid, Results: make([]ToolResult, len(valid)), Native: len(r.Calls) > 0, Parse: parseMeta(parsed, r.Text)}
	return st
}

// parseMeta is what the parser noticed, with each call's place in the
// reply; nil when there is nothing to record.
func parseMeta(p Parsed, text string) *ParseMeta {
	m := p.Meta
	m.Spans = spansOf(text, p.Raw)
	if m.Format == "" && len(m.Spans) == 0 && len(m.Warnings) == 0 {
		return nil
	}
	return &m
}

// admitCalls checks calls that are about to be requested against the
// policies that fail the run (ok is false): the loop policy (the same call
// again and again) and the tool-call budget. A helpers program's calls come
// here as it reaches them, then to acceptCalls.
func admitCalls(cfg Config, st State, calls []ToolCall) (State, bool) {
	for _, c := range calls {
		fp := fingerprint(c)
		if fp == st.Counters.LastCall {
			st.Counters.Repeats++
		} else {
			st.Counters.LastCall, st.Counters.Repeats = fp, 1
		}
		if st.Counters.Repeats >= cfg.maxRepeats() {
			return failed(st, FailLoop, fmt.Sprintf("the model called %s with the same arguments %d times in a row: %s", c.Name, st.Counters.Repeats, c.Args)), false
		}
	}
	if why := callsOverBudget(cfg, st, len(calls)); why != "" {
		return exhausted(st, why), false
	}
	return st, true
}

// acceptCalls records calls that will be requested: counted against the
// budget and logged for cycle detection (their tools are listed as they
// run: noteRan).
func acceptCalls(cfg Config, st State, calls []ToolCall) State {
	return logCalls(cfg, countCalls(cfg, st, len(calls)), calls)
}

// withIDs gives every call an id, deriving missing ones from (step, index).
func withIDs(calls []NativeCall, step int) []NativeCall {
	out := make([]NativeCall, len(calls))
	for i, c := range calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", step, i+1)
		}
		out[i] = c
	}
	return out
}

// nativeCalls keeps the model's native calls as it sent them, with the ids
// the run uses for them.
func nativeCalls(parsed []NativeCall, raw []NativeCall) []ToolCall {
	out := make([]ToolCall, len(raw))
	for i, c := range raw {
		id := c.ID
		if i < len(parsed) {
			id = parsed[i].ID
		}
		out[i] = ToolCall{ID: id, Name: c.Name, Args: []byte(c.Arguments)}
	}
	return out
}

func indexOfCall(calls []NativeCall, id string) int {
	for i, c := range calls {
		if c.ID == id {
			return i
		}
	}
	return -1
}

func fingerprint(c ToolCall) string {
	h := sha256.New()
	h.Write([]byte(c.Name))
	h.Write([]byte{0})
	h.Write(c.Args)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// answer ends the run with text, unless the primary is stuck and may escalate.
func answer(cfg Config, st State, text string) State {
	text = strings.TrimSpace(text)
	if cfg.Collaboration != nil {
		next, handled := collaborateOnAnswer(cfg, st, text)
		if handled {
			return next
		}
		st = next
	}
	if text == "" {
		if canEscalate(cfg, st) {
			return escalate(st, "the model gave an empty reply")
		}
		return correction(cfg, st, Message{}, []string{"your reply was empty; answer the user or call a tool"})
	}
	if phrase := stuckPhrase(cfg, text); phrase != "" && canEscalate(cfg, st) {
		return escalate(st, fmt.Sprintf("the model said it is stuck (%q)", phrase))
	}
	if cfg.Output != nil {
		out, err := structured(cfg, text) // output.go
		if err != nil {
			return outputRefused(cfg, st, err)
		}
		text = string(out)
	}
	return complete(cfg, st, text)
}

// outputRefused sends an answer that does not fit the output schema back
// to the model, at most the policy's corrections in a row, then fails.
func outputRefused(cfg Config, st State, err error) State {
	st.Counters.Corrections++
	if st.Counters.Corrections > cfg.Output.maxCorrections() {
		return failed(st, FailInvalidOutput, fmt.Sprintf("the model's answer did not fit the output schema %d time(s) in a row: %v", st.Counters.Corrections, err))
	}
	return appendMessages(st, Message{Role: RoleUser, Content: outputCorrection(err, cfg.Output.Schema)})
}

func stuckPhrase(cfg Config, text string) string {
	lower := strings.ToLower(text)
	for _, p := range cfg.stuckPhrases() {
		if p != "" && strings.Contains(lower, strings.ToLower(p)) {
			return p
		}
	}
	return ""
}

// correction sends the errors back to the model, at most maxCorrections
// times in a row; after that the run escalates if it can, else fails.
func correction(cfg Config, st State, msg Message, errs []string) State {
	feedback := "Your last reply could not be used:\n- " + strings.Join(errs, "\n- ") +
		"\nReply again with valid tool calls, or with a final answer."
	if len(msg.Calls) > 0 {
		// Native calls must each be answered before the model speaks again.
		out := make([]Message, len(msg.Calls))
		for i, c := range msg.Calls {
			out[i] = Message{Role: RoleTool, CallID: c.ID, Name: c.Name, Content: "error: not run. " + feedback}
		}
		st = appendMessages(st, out...)
	} else {
		st = appendMessages(st, Message{Role: RoleUser, Content: feedback})
	}
	st.Phase = PhaseModel
	st.Counters.Corrections++
	if st.Counters.Corrections <= cfg.maxCorrections() {
		return st
	}
	reason := fmt.Sprintf("the model's output was invalid %d time(s) in a row: %s", st.Counters.Corrections, strings.Join(errs, "; "))
	if canEscalate(cfg, st) {
		return escalate(st, reason)
	}
	return failed(st, FailInvalidOutput, reason)
}
