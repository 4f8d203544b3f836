package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Answers are a caller's answers to a run (Submit): the results of the
// external calls it is paused for, or the outcomes of its in-doubt calls.
type Answers struct {
	Results []core.ToolResult
	// NotRun lists in-doubt calls that an operator established did not
	// run: they run when the run resumes.
	NotRun []string
}

// IDs lists every call id the answers name, in order.
func (a Answers) IDs() []string {
	ids := make([]string, 0, len(a.Results)+len(a.NotRun))
	for _, r := range a.Results {
		ids = append(ids, r.CallID)
	}
	return append(ids, a.NotRun...)
}

// ErrBadResults wraps every problem ParseResults finds.
var ErrBadResults = errors.New("bad results")

// ParseResults reads answers as the CLI and the API accept them: a JSON
// array with one object per call, each with "tool_call_id" and exactly one
// of "result" (any JSON; a string is taken as is, anything else as its
// JSON text), "error" (a non-empty string: the call failed) or
// "not_run": true (for an in-doubt call: it did not run). Anything else (an
// entry with none of them, an unknown key, two entries for one id) is
// refused.
func ParseResults(data []byte) (Answers, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Answers{}, fmt.Errorf(`%w: want a JSON array of {"tool_call_id", "result" | "error" | "not_run"}: %v`, ErrBadResults, err)
	}
	var out Answers
	seen := map[string]bool{}
	for i, m := range raw {
		fail := func(format string, args ...any) (Answers, error) {
			return Answers{}, fmt.Errorf("%w: results[%d]: %s", ErrBadResults, i, fmt.Sprintf(format, args...))
		}
		var r core.ToolResult
		notRun := false
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		answers := 0
		for _, k := range keys {
			v := m[k]
			switch k {
			case "tool_call_id":
				if err := json.Unmarshal(v, &r.CallID); err != nil || r.CallID == "" {
					return fail("tool_call_id must be a non-empty string")
				}
			case "result":
				answers++
				var s string
				if err := json.Unmarshal(v, &s); err == nil {
					r.Output = s
				} else {
					r.Output = string(v)
				}
			case "error":
				answers++
				if err := json.Unmarshal(v, &r.Error); err != nil || r.Error == "" {
					return fail("error must be a non-empty string")
				}
			case "not_run":
				answers++
				if err := json.Unmarshal(v, &notRun); err != nil || !notRun {
					return fail("not_run must be true (leave it out otherwise)")
				}
			default:
				return fail("unknown key %q (want tool_call_id, and one of result, error, not_run)", k)
			}
		}
		switch {
		case r.CallID == "":
			return fail("tool_call_id is missing")
		case answers == 0:
			return fail("%s has no answer: give result, error, or not_run", r.CallID)
		case answers > 1:
			return fail("%s: give one of result, error, not_run", r.CallID)
		case seen[r.CallID]:
			return fail("a second answer for %s", r.CallID)
		}
		seen[r.CallID] = true
		if notRun {
			out.NotRun = append(out.NotRun, r.CallID)
		} else {
			out.Results = append(out.Results, r)
		}
	}
	return out, nil
}

// answer folds a caller's answers into the run loaded in cur: the results
// of the pause it waits on, or the outcomes of its in-doubt calls.
func (r *Runner) answer(ctx context.Context, h *holding, ag *Agent, cur *cursor, ans Answers) error {
	x := NewRedactor(ag.Secrets)
	p := cur.st.Pending
	if p != nil && p.Kind == core.PendingTools && len(ag.SubAgents) > 0 {
		// Results for calls of the sub-agents this run waits on.
		routed, err := r.answerChildren(ctx, ag, cur, ans)
		if routed || err != nil {
			if err == nil {
				err = r.storeWrite(h, cur, "mark running", func(ctx context.Context) error {
					return r.store.SetStatus(ctx, h.lease(), store.StatusChange{Status: store.StatusRunning})
				})
			}
			return err
		}
	}
	if p != nil && p.Kind == core.PendingExternal {
		if len(ans.NotRun) > 0 {
			return fmt.Errorf("%w: not_run answers in-doubt calls; run %s is paused for %s", ErrBadResults, cur.id, strings.Join(p.CallIDs, ", "))
		}
		res := x.Result(core.Sanitize(core.ToolResults{Results: ans.Results}))
		next, err := core.Resume(ag.Config, cur.st, res)
		if err != nil {
			if errors.Is(err, core.ErrUnknownCall) && r.answeredBefore(ctx, cur.id, ans.IDs()) {
				return fmt.Errorf("run %s: %w (it now waits for %s)", cur.id, ErrAlreadyAnswered, strings.Join(p.CallIDs, ", "))
			}
			return fmt.Errorf("results for run %s: %w", cur.id, err)
		}
		cur.st, cur.result = next, res
		r.emit(func() Event {
			return Event{RunID: cur.id, Seq: cur.seq, Kind: "results", Text: strings.Join(p.CallIDs, ", "), Result: res}
		})
		return nil
	}
	doubt, err := r.inDoubt(ctx, ag, cur)
	if err != nil {
		return err
	}
	if len(doubt) == 0 {
		if r.answeredBefore(ctx, cur.id, ans.IDs()) {
			return fmt.Errorf("run %s: %w (it is %s)", cur.id, ErrAlreadyAnswered, phaseText(cur.st))
		}
		return fmt.Errorf("%w (run %s is %s)", ErrNotPaused, cur.id, phaseText(cur.st))
	}
	byID := map[string]InDoubtCall{}
	for _, d := range doubt {
		byID[d.Call.ID] = d
	}
	for _, id := range ans.IDs() {
		if _, ok := byID[id]; !ok {
			if r.answeredBefore(ctx, cur.id, ans.IDs()) {
				return fmt.Errorf("run %s: %w (its in-doubt calls are %s)", cur.id, ErrAlreadyAnswered, doubtIDs(doubt))
			}
			return fmt.Errorf("%w: %q is not an in-doubt call of run %s (in doubt: %s)", core.ErrUnknownCall, id, cur.id, doubtIDs(doubt))
		}
	}
	for _, res := range ans.Results {
		res = x.ToolResult(sanitizeTool(res))
		if err := r.store.RecordOutcome(ctx, h.lease(), cur.seq, res); err != nil {
			return fmt.Errorf("run %s: record the answer for %s: %w", cur.id, res.CallID, err)
		}
		d := byID[res.CallID]
		d.Resolution = "answered"
		cur.inDoubt = append(cur.inDoubt, d)
	}
	for _, id := range ans.NotRun {
		if err := r.store.RetractIntent(ctx, h.lease(), cur.seq, id); err != nil {
			return fmt.Errorf("run %s: record that %s did not run: %w", cur.id, id, err)
		}
		d := byID[id]
		d.Resolution = "not_run"
		cur.inDoubt = append(cur.inDoubt, d)
	}
	return nil
}

// InDoubt lists the in-doubt calls of a run: the non-idempotent calls of
// its pending tool request that have an intent and no outcome (they were
// in flight when the run stopped). ag's tools decide what is idempotent.
func (r *Runner) InDoubt(ctx context.Context, ag *Agent, runID string) ([]InDoubtCall, error) {
	rec, err := r.store.LoadLatest(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	return r.inDoubt(ctx, ag, &cursor{id: runID, seq: rec.Seq, st: rec.State})
}

func (r *Runner) inDoubt(ctx context.Context, ag *Agent, cur *cursor) ([]InDoubtCall, error) {
	p := cur.st.Pending
	if p == nil || p.Kind != core.PendingTools || cur.st.Turn == nil {
		return nil, nil
	}
	intents, err := r.store.Intents(ctx, cur.id, cur.seq)
	if err != nil {
		return nil, fmt.Errorf("run %s: intents: %w", cur.id, err)
	}
	var out []InDoubtCall
	for _, in := range intents {
		if in.State != store.IntentStarted || !slices.Contains(p.CallIDs, in.CallID) || r.idempotent(ag, in.Tool) {
			continue
		}
		out = append(out, InDoubtCall{Call: core.ToolCall{ID: in.CallID, Name: in.Tool, Args: in.Args}, Step: cur.seq, Started: in.Started})
	}
	return out, nil
}

// answeredBefore reports whether every id was a call the run paused for
// at an earlier step and that was answered since.
func (r *Runner) answeredBefore(ctx context.Context, runID string, ids []string) bool {
	if len(ids) == 0 {
		return false
	}
	asked := map[string]bool{}
	var last []string
	err := r.store.Steps(ctx, runID, func(rec store.StepRecord) error {
		for _, id := range last {
			asked[id] = true // the pause before this step was answered
		}
		last = nil
		if a, ok := rec.Action.(core.RequestExternalToolCalls); ok {
			for _, c := range a.Calls {
				last = append(last, c.ID)
			}
		}
		return nil
	})
	if err != nil {
		return false
	}
	for _, id := range ids {
		if !asked[id] {
			return false
		}
	}
	return true
}

func doubtIDs(list []InDoubtCall) string {
	ids := make([]string, len(list))
	for i, d := range list {
		ids[i] = d.Call.ID
	}
	return strings.Join(ids, ", ")
}

// phaseText says where a run stands, for errors.
func phaseText(st core.State) string {
	switch {
	case st.Phase == core.PhaseDone:
		return "completed"
	case st.Phase == core.PhaseFailed:
		return "failed"
	case st.Pending != nil:
		return "waiting for " + string(st.Pending.Kind)
	}
	return "in phase " + string(st.Phase)
}

// sanitizeTool makes a tool result's text valid UTF-8.
func sanitizeTool(t core.ToolResult) core.ToolResult {
	if utf8.ValidString(t.Output) && utf8.ValidString(t.Error) && utf8.ValidString(t.CallID) && validAll(t.Sources) && validMIMEs(t.Attachments) {
		return t
	}
	out := core.Sanitize(core.ToolResults{Results: []core.ToolResult{t}}).(core.ToolResults).Results[0]
	out.Transient = t.Transient
	return out
}

func validMIMEs(list []core.Attachment) bool {
	for _, a := range list {
		if !utf8.ValidString(a.MIME) {
			return false
		}
	}
	return true
}

func validAll(list []string) bool {
	for _, s := range list {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
