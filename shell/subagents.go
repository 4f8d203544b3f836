package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Sub-agents as child runs (ADR 0034). An agent may hold other agents as
// tools (Agent.SubAgents): a call of one starts a child run of that agent,
// with its own log, whose id is the parent's id, a dot and the call's id,
// so the link is the id itself and a parent that restarts finds its child
// again instead of starting another. The parent's turn waits on the call
// like any tool call; the child's answer (its output, for an agent with an
// output schema) is the call's result, and a child's failure its error,
// which the parent's model sees. What the child spent (tokens, cost, tool
// calls) is reported with the result and counted by the parent, and a
// child is started with the budget the parent has left, so budgets span
// the tree.
//
// When a child pauses for external calls, its root pauses too
// (awaiting_tool_results) with the child's calls, their ids namespaced by
// the parent's call ids: "c1/c9" is call c9 of the child started by call
// c1 (and "c1/c4/c9" a grandchild's). Results answered through the root
// go to the child, which goes on; once it answers, the parent does.
// Cancelling a run cancels its children.

// MaxAgentDepth bounds how deep sub-agents nest (a root is depth 0).
const MaxAgentDepth = 3

// SubAgent is an agent a parent calls as a tool.
type SubAgent struct {
	*Agent
	// Input says how a call's arguments become the child's input: the
	// "task" argument (the default schema's) or, for an agent declaring
	// its own parameters, the arguments' JSON.
	Task bool
}

// ChildID is the id of the child run a parent's call starts.
func ChildID(parent, callID string) string { return parent + "." + callID }

// childPause stops a parent's tool batch: some of its sub-agents paused
// for external calls, listed with namespaced ids.
type childPause struct{ pending []core.ToolCall }

func (p *childPause) Error() string {
	ids := make([]string, len(p.pending))
	for i, c := range p.pending {
		ids[i] = c.ID
	}
	return "a sub-agent paused for " + strings.Join(ids, ", ")
}

// runChild performs a call of a sub-agent: it starts the child run (or
// finds it, after a restart), drives it until it answers, fails or pauses,
// and returns its result, or the child's pending calls namespaced by the
// call's id.
func (r *Runner) runChild(ctx context.Context, ag *Agent, cur *cursor, sub *SubAgent, c core.ToolCall) (core.ToolResult, []core.ToolCall, error) {
	id := ChildID(cur.id, c.ID)
	info, err := r.store.Run(ctx, id)
	var out Outcome
	switch {
	case errors.Is(err, store.ErrNotFound):
		if depth(cur.id) >= MaxAgentDepth {
			return core.ToolResult{CallID: c.ID, Error: fmt.Sprintf("sub-agents nest at most %d deep", MaxAgentDepth)}, nil, nil
		}
		child := withBudgetLeft(sub.Agent, ag.Config, cur.st)
		input, err := taskOf(sub, c)
		if err != nil {
			return core.ToolResult{CallID: c.ID, Error: err.Error()}, nil, nil
		}
		out, err = r.startAs(ctx, child, id, core.Request{Input: input})
		if err != nil {
			return core.ToolResult{}, nil, fmt.Errorf("sub-agent %s (call %s): %w", c.Name, c.ID, err)
		}
	case err != nil:
		return core.ToolResult{}, nil, err
	default:
		out, err = r.childOutcome(ctx, sub.Agent, id, info)
		if errors.Is(err, ErrBusy) {
			// Another driver has the child (a server's worker took it
			// over after this process stopped): try again later.
			return core.ToolResult{}, nil, &stallError{reason: fmt.Sprintf("sub-agent %s (run %s) is being driven elsewhere: %v", c.Name, id, err)}
		}
		if err != nil {
			return core.ToolResult{}, nil, fmt.Errorf("sub-agent %s (call %s): %w", c.Name, c.ID, err)
		}
	}
	if ctx.Err() != nil {
		// This drive was stopped while the child ran: the parent stops as
		// the child did (interrupted), and finds the child again.
		return core.ToolResult{}, nil, ctx.Err()
	}
	return r.childResult(ctx, c, out)
}

// pauseOnChildren stops a drive whose sub-agents paused: the run is
// awaiting_tool_results, for their calls.
func (r *Runner) pauseOnChildren(cur *cursor, h *holding, x Redactor, p *childPause) (Outcome, error) {
	err := r.storeWrite(h, cur, "mark awaiting tool results", func(ctx context.Context) error {
		return r.store.SetStatus(ctx, h.lease(), store.StatusChange{Status: store.StatusAwaitingToolResults, Reason: x.String(p.Error())})
	})
	if o, ok := errors.AsType[*StoreOutage](err); ok {
		return r.outage(cur, h, x, o)
	}
	if err != nil {
		return Outcome{}, r.lostOr(h, fmt.Errorf("run %s: mark awaiting tool results: %w", cur.id, err))
	}
	r.emit(func() Event { return Event{RunID: cur.id, Seq: cur.seq, Kind: "external", Text: callNames(p.pending)} })
	out := r.outcome(cur, store.StatusAwaitingToolResults)
	out.Pending = p.pending
	return out, nil
}

// childOutcome is where an existing child stands, driving it on when it
// was interrupted.
func (r *Runner) childOutcome(ctx context.Context, sub *Agent, id string, info store.RunInfo) (Outcome, error) {
	switch info.Status {
	case store.StatusCompleted, store.StatusFailed, store.StatusCancelled, store.StatusAwaitingToolResults:
		rec, err := r.store.LoadLatest(ctx, id)
		if err != nil {
			return Outcome{}, err
		}
		out := Outcome{RunID: id, Status: info.Status, Answer: rec.State.Answer, Failure: rec.State.Failure, Steps: rec.Seq}
		if rec.State.Structured {
			out.Output = json.RawMessage(rec.State.Answer)
		}
		if info.Status == store.StatusAwaitingToolResults {
			out.Pending, err = PendingCalls(ctx, r.store, id, rec.State)
		}
		return out, err
	}
	return r.Resume(ctx, sub, id)
}

// childResult makes a child's outcome the parent call's result.
func (r *Runner) childResult(ctx context.Context, c core.ToolCall, out Outcome) (core.ToolResult, []core.ToolCall, error) {
	switch out.Status {
	case store.StatusAwaitingToolResults:
		pending := make([]core.ToolCall, len(out.Pending))
		for i, p := range out.Pending {
			p.ID = c.ID + "/" + p.ID
			pending[i] = p
		}
		return core.ToolResult{}, pending, nil
	case store.StatusStalled, store.StatusInterrupted, store.StatusRunning:
		return core.ToolResult{}, nil, &stallError{reason: fmt.Sprintf("sub-agent %s (run %s) is %s: %s", c.Name, out.RunID, out.Status, out.Reason)}
	}
	res := core.ToolResult{CallID: c.ID, Spent: r.spentBy(ctx, out.RunID)}
	switch {
	case out.Status == store.StatusCompleted && len(out.Output) > 0:
		res.Output = string(out.Output)
	case out.Status == store.StatusCompleted:
		res.Output = out.Answer
	case out.Failure != nil:
		res.Error = fmt.Sprintf("the sub-agent %s failed (%s): %s", c.Name, out.Failure.Code, out.Failure.Reason)
	default:
		res.Error = fmt.Sprintf("the sub-agent %s ended %s", c.Name, out.Status)
	}
	return res, nil, nil
}

// spentBy is what a child run spent, from its last state.
func (r *Runner) spentBy(ctx context.Context, id string) *core.Spent {
	rec, err := r.store.LoadLatest(ctx, id)
	if err != nil {
		return nil
	}
	c := rec.State.Counters
	s := core.Spent{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Cost: c.Cost, ToolCalls: c.ToolCalls}
	if s == (core.Spent{}) {
		return nil
	}
	return &s
}

// startAs is StartFrom with the run's id given.
func (r *Runner) startAs(ctx context.Context, ag *Agent, id string, req core.Request) (Outcome, error) {
	ag = ag.current()
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	return r.startID(ctx, ag, id, req)
}

func depth(id string) int { return strings.Count(id, ".") }

// taskOf is the child's input for call c.
func taskOf(sub *SubAgent, c core.ToolCall) (string, error) {
	if !sub.Task {
		return string(c.Args), nil
	}
	var args struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(c.Args, &args); err != nil || strings.TrimSpace(args.Task) == "" {
		return "", fmt.Errorf("call %s: the sub-agent %s needs a task", c.ID, c.Name)
	}
	return args.Task, nil
}

// withBudgetLeft is the child's agent with its budgets no larger than what
// the parent has left.
func withBudgetLeft(child *Agent, parent core.Config, st core.State) *Agent {
	pb, c := parent.Budget, st.Counters
	if pb == (core.Budget{}) {
		return child
	}
	cp := *child
	b := cp.Config.Budget
	left := func(limit, used int) int { return max(1, limit-used) }
	if pb.MaxInputTokens > 0 {
		b.MaxInputTokens = minPositive(b.MaxInputTokens, left(pb.MaxInputTokens, c.PromptTokens))
	}
	if pb.MaxOutputTokens > 0 {
		b.MaxOutputTokens = minPositive(b.MaxOutputTokens, left(pb.MaxOutputTokens, c.CompletionTokens))
	}
	if pb.MaxToolCalls > 0 {
		b.MaxToolCalls = minPositive(b.MaxToolCalls, left(pb.MaxToolCalls, c.ToolCalls))
	}
	if pb.MaxCost > 0 && cp.Config.Models.PrimaryPrice != (core.Price{}) {
		b.MaxCost = int64(minPositive(int(b.MaxCost), int(max(1, pb.MaxCost-c.Cost))))
	}
	cp.Config.Budget = b
	return &cp
}

func minPositive(a, b int) int {
	if a <= 0 {
		return b
	}
	return min(a, b)
}

// StepLoader reads runs and their last steps (a store).
type StepLoader interface {
	Run(ctx context.Context, runID string) (store.RunInfo, error)
	LoadLatest(ctx context.Context, runID string) (store.StepRecord, error)
}

// PendingCalls are the external calls a run waits for: its own, or, when
// it waits on sub-agents, theirs, namespaced by the calls that started
// them (see runChild).
func PendingCalls(ctx context.Context, st StepLoader, runID string, state core.State) ([]core.ToolCall, error) {
	if state.Pending == nil {
		return nil, nil
	}
	if state.Pending.Kind == core.PendingExternal {
		return state.PendingCalls(), nil
	}
	if state.Pending.Kind != core.PendingTools || state.Turn == nil {
		return nil, nil
	}
	var out []core.ToolCall
	for _, id := range state.Pending.CallIDs {
		child := ChildID(runID, id)
		info, err := st.Run(ctx, child)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if info.Status != store.StatusAwaitingToolResults {
			continue
		}
		rec, err := st.LoadLatest(ctx, child)
		if err != nil {
			return nil, err
		}
		calls, err := PendingCalls(ctx, st, child, rec.State)
		if err != nil {
			return nil, err
		}
		for _, c := range calls {
			c.ID = id + "/" + c.ID
			out = append(out, c)
		}
	}
	return out, nil
}

// answerChildren hands results namespaced by a parent's calls to the
// children those calls started (see runChild): each child is answered and
// driven on. It reports false when no result is namespaced.
func (r *Runner) answerChildren(ctx context.Context, ag *Agent, cur *cursor, ans Answers) (bool, error) {
	byCall := map[string][]core.ToolResult{}
	var order []string
	for _, res := range ans.Results {
		call, rest, ok := strings.Cut(res.CallID, "/")
		if !ok {
			return false, nil
		}
		if _, seen := byCall[call]; !seen {
			order = append(order, call)
		}
		res.CallID = rest
		byCall[call] = append(byCall[call], res)
	}
	if len(order) == 0 {
		return false, nil
	}
	for _, call := range order {
		sub := subAgentOf(ag, cur.st, call)
		if sub == nil {
			return true, fmt.Errorf("%w: %q names call %s, which is not a pending sub-agent call of run %s", core.ErrUnknownCall, byCall[call][0].CallID, call, cur.id)
		}
		if _, err := r.Submit(ctx, sub.Agent, ChildID(cur.id, call), Answers{Results: byCall[call]}); err != nil {
			return true, fmt.Errorf("sub-agent call %s: %w", call, err)
		}
	}
	return true, nil
}

// subAgentOf is the sub-agent a pending call of st calls, or nil.
func subAgentOf(ag *Agent, st core.State, callID string) *SubAgent {
	if st.Pending == nil || st.Pending.Kind != core.PendingTools || st.Turn == nil {
		return nil
	}
	for _, id := range st.Pending.CallIDs {
		if id != callID {
			continue
		}
		for _, c := range st.Turn.Calls {
			if c.ID == id {
				return ag.SubAgents[c.Name]
			}
		}
	}
	return nil
}

// cancelChildren cancels the children a run's pending calls started.
func (r *Runner) cancelChildren(ctx context.Context, ag *Agent, runID string, st core.State, reason string) {
	if st.Turn == nil || len(ag.SubAgents) == 0 {
		return
	}
	for _, c := range st.Turn.Calls {
		if sub := ag.SubAgents[c.Name]; sub != nil {
			_, _ = r.Cancel(ctx, sub.Agent, ChildID(runID, c.ID), reason)
		}
	}
}

// Child is a child run a parent's call started (see runChild).
type Child struct {
	Step   int    // the parent's step that made the call
	CallID string // the call
	Tool   string // the sub-agent's tool name
	Info   store.RunInfo
}

// Children lists the child runs of a run's sub-agent calls, in the order
// they were called.
func Children(ctx context.Context, st RunReader, runID string) ([]Child, error) {
	var out []Child
	seen := map[string]bool{}
	err := st.Steps(ctx, runID, func(rec store.StepRecord) error {
		a, ok := rec.Action.(core.RequestToolCalls)
		if !ok {
			return nil
		}
		for _, c := range a.Calls {
			id := ChildID(runID, c.ID)
			if seen[id] {
				continue
			}
			info, err := st.Run(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			seen[id] = true
			out = append(out, Child{Step: rec.Seq, CallID: c.ID, Tool: c.Name, Info: info})
		}
		return nil
	})
	return out, err
}

// Handoff is an agent a run's conversation can be handed to (an agent
// file's [[agents]] with mode = "handoff"): a call of its tool makes the
// run go on with that agent, its prompt and its tools, from the next step
// (recorded as an agent change, which replay follows). The call's result
// tells the model who it is now, with the agent's instructions. The target
// may hand back the same way.
type Handoff struct {
	Name string
	// Load builds the agent, on the first handoff to it (a target that
	// hands back is not built in a loop).
	Load func(ctx context.Context) (*Agent, error)
}

// handOffTo performs a handoff call: the result the model reads, and the
// agent the drive goes on with (cursor.takeHandoff).
func (r *Runner) handOffTo(ctx context.Context, cur *cursor, hand *Handoff, c core.ToolCall) core.ToolResult {
	target, err := hand.Load(ctx)
	if err == nil {
		err = r.check(target)
	}
	if err != nil {
		return core.ToolResult{CallID: c.ID, Error: fmt.Sprintf("cannot hand over to %s: %v", hand.Name, err)}
	}
	cur.handoffMu.Lock()
	cur.handoff = target
	cur.handoffMu.Unlock()
	text := fmt.Sprintf("The conversation is now with the %s agent: you are that agent from here on.", hand.Name)
	if p := strings.TrimSpace(target.Config.SystemPrompt); p != "" {
		text += "\nYour instructions:\n" + p
	}
	if docs := core.ToolDocs(target.Config); docs != "" {
		text += "\n\n" + docs
	}
	return core.ToolResult{CallID: c.ID, Output: text}
}

// takeHandoff returns the agent a handoff of the last batch handed the run
// to, once.
func (c *cursor) takeHandoff() *Agent {
	c.handoffMu.Lock()
	defer c.handoffMu.Unlock()
	t := c.handoff
	c.handoff = nil
	return t
}
