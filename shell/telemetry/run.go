package telemetry

import (
	"context"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Run is a stored run as a list of the calls it made, each with when it
// started and ended, read from its steps: what `stepwise trace` turns into
// spans and `stepwise stats` into counts and latencies.
type Run struct {
	Info store.RunInfo
	// Last is the state at the run's last step (its token totals).
	Last core.State
	// End is when the last step was checkpointed.
	End time.Time
	// Calls are the model, tool and memory calls that got an outcome, in
	// the order of their steps (and, within a step, the model's order).
	// A request still pending, or cancelled, is not a call.
	Calls []Call

	// changes are the run's agent changes, oldest first.
	changes []store.AgentChange
}

// CallKind is the kind of a call, named by its gen_ai.operation.name.
type CallKind string

// The kinds of call.
const (
	KindChat      CallKind = operationChat
	KindTool      CallKind = operationExecute
	KindRetrieval CallKind = operationRetrieval
)

// Call is one call of a stored run. Its time is the time from the step
// that requested it to the next step, unless the call's journal entry
// (store.Intent) says when it started and finished, as it does for each
// call of a batch of several and for non-idempotent calls.
type Call struct {
	Seq  int
	Kind CallKind
	// Name is the tool's name (execute_tool), or the model role (chat), or
	// the memory namespace (retrieval).
	Name       string
	Start, End time.Time
	// Failed: the model or tool failed (the model saw a tool's error).
	Failed bool
	// Usage is the tokens of a chat call.
	Usage core.Usage
	// External: a call the caller ran (its time includes the wait for the
	// caller's answer).
	External bool

	request core.Action
	call    core.ToolCall
	result  core.Result // ModelReply, ToolResult as ToolResults of one, memory result
}

// Duration is the call's time.
func (c Call) Duration() time.Duration { return c.End.Sub(c.Start) }

// ReadRun reads run runID's steps into its calls.
func ReadRun(ctx context.Context, st store.Runs, runID string) (*Run, error) {
	info, err := st.Run(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	changes, err := st.AgentChanges(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
	}
	r := &Run{Info: info, End: info.Created, changes: changes}
	var prev *store.StepRecord
	var toolSteps []int
	err = st.Steps(ctx, runID, func(rec store.StepRecord) error {
		if prev != nil && prev.Action != nil && rec.Result != nil {
			n := len(r.Calls)
			r.Calls = appendCalls(r.Calls, prev.Seq, prev.Action, rec.Result, prev.Created, rec.Created)
			if _, ok := prev.Action.(core.RequestToolCalls); ok && len(r.Calls) > n {
				toolSteps = append(toolSteps, prev.Seq)
			}
		}
		r.Last, r.End = rec.State, rec.Created
		prev = &rec
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("run %s: steps: %w", runID, err)
	}
	for _, seq := range toolSteps {
		intents, err := st.Intents(ctx, runID, seq)
		if err != nil {
			return nil, fmt.Errorf("run %s: intents of step %d: %w", runID, seq, err)
		}
		r.timeCalls(seq, intents)
	}
	return r, nil
}

// appendCalls adds the calls of the request a (made at step seq, at
// start) that res answered (at end).
func appendCalls(calls []Call, seq int, a core.Action, res core.Result, start, end time.Time) []Call {
	switch a := a.(type) {
	case core.RequestModelCall:
		if reply, ok := res.(core.ModelReply); ok {
			calls = append(calls, Call{Seq: seq, Kind: KindChat, Name: string(a.Role), Start: start, End: end,
				Failed: reply.Error != "", Usage: reply.Usage, request: a, result: reply})
		}
	case core.RequestToolCalls:
		calls = appendToolCalls(calls, seq, a, a.Calls, res, false, start, end)
	case core.RequestExternalToolCalls:
		calls = appendToolCalls(calls, seq, a, a.Calls, res, true, start, end)
	case core.RequestMemorySearch, core.RequestMemoryCreate, core.RequestMemoryTraverse:
		if _, ok := res.(core.Cancelled); ok || res == nil {
			break
		}
		call, ns, _ := memoryCall(a)
		c := Call{Seq: seq, Kind: KindRetrieval, Name: ns, Start: start, End: end, Failed: memoryError(res) != "", request: a, call: call, result: res}
		if call.ID != "" {
			c.Kind, c.Name = KindTool, call.Name
		}
		calls = append(calls, c)
	}
	return calls
}

func appendToolCalls(calls []Call, seq int, a core.Action, list []core.ToolCall, res core.Result, external bool, start, end time.Time) []Call {
	results, ok := res.(core.ToolResults)
	if !ok {
		return calls
	}
	byID := make(map[string]core.ToolResult, len(results.Results))
	for _, r := range results.Results {
		byID[r.CallID] = r
	}
	for _, c := range list {
		r, ok := byID[c.ID]
		if !ok {
			continue // skipped by stop-on-error
		}
		calls = append(calls, Call{Seq: seq, Kind: KindTool, Name: c.Name, Start: start, End: end, Failed: r.Failed(), External: external,
			request: a, call: c, result: core.ToolResults{Results: []core.ToolResult{r}}})
	}
	return calls
}

// timeCalls gives the calls of step seq the times their intents recorded.
func (r *Run) timeCalls(seq int, intents []store.Intent) {
	byID := make(map[string]store.Intent, len(intents))
	for _, in := range intents {
		byID[in.CallID] = in
	}
	for i := range r.Calls {
		c := &r.Calls[i]
		if c.Seq != seq || c.Kind != KindTool {
			continue
		}
		if in, ok := byID[c.call.ID]; ok && !in.Started.IsZero() && !in.Completed.IsZero() && !in.Completed.Before(in.Started) {
			c.Start, c.End = in.Started, in.Completed
		}
	}
}

// agentAt is the agent that performed step seq's request: the last agent
// change made at or before that step (a run stalled at step seq and
// resumed with a changed agent performs it with the new one), else the
// agent the run started with.
func (r *Run) agentAt(seq int) []byte {
	cfg := r.Info.StartConfig
	for _, ch := range r.changes {
		if ch.Seq <= seq {
			cfg = ch.Config
		}
	}
	if cfg == nil {
		cfg = r.Info.Config
	}
	return cfg
}

// Spans is the run's trace: its invoke_agent span, then a span for each
// call. With content, the spans carry the messages, arguments and results
// (as stored: secrets redacted).
func (r *Run) Spans(content bool) []Span {
	agents := map[string]agentInfo{}
	builderAt := func(seq int) builder {
		src := r.agentAt(seq)
		a, ok := agents[string(src)]
		if !ok {
			a = agentOf(r.Info.Agent, src)
			agents[string(src)] = a
		}
		return builder{runID: r.Info.ID, agent: a, content: content}
	}
	spans := []Span{builderAt(r.Info.LastSeq).root(r.Info, r.Last, r.End)}
	for _, c := range r.Calls {
		spans = append(spans, builderAt(c.Seq).spanOf(c))
	}
	return spans
}

// spanOf is the span of one call.
func (b builder) spanOf(c Call) Span {
	switch a := c.request.(type) {
	case core.RequestModelCall:
		return b.chat(c.Seq, a, c.result.(core.ModelReply), c.Start, c.End)
	case core.RequestMemorySearch, core.RequestMemoryCreate, core.RequestMemoryTraverse:
		return b.memory(c.Seq, a, c.result, c.Start, c.End)
	}
	return b.tool(c.Seq, c.call, c.result.(core.ToolResults).Results[0], c.External, c.Start, c.End)
}
