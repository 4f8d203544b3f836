package storetest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// A synthetic run: step 0 holds a system and a user message; odd steps ask
// for a tool call after an assistant message that makes it, even steps ask
// the model again after the tool's answer (a payload of about 200 bytes).
// Model calls carry the agent's tools.

// BaseState is a valid state in phase model on input, holding msgs.
func BaseState(input string, msgs []core.Message) core.State {
	return core.State{Version: core.StateVersion, Request: core.Request{Input: input}, Phase: core.PhaseModel, Messages: msgs}
}

// initial is the first state of synthetic run id.
func initial(id string) core.State {
	return BaseState("question "+id, []core.Message{
		{Role: core.RoleSystem, Content: "be brief"},
		{Role: core.RoleUser, Content: "question " + id},
	})
}

// synth generates the checkpoints of a synthetic run in order.
type synth struct {
	log   []core.Message
	seq   int
	tools []core.Tool
}

func newSynth(id string, tools []core.Tool) *synth {
	return &synth{log: initial(id).Messages, tools: tools}
}

func (g *synth) next() store.Checkpoint {
	g.seq++
	seq := g.seq
	var res core.Result
	var a core.Action
	if seq%2 == 1 {
		call := core.ToolCall{ID: fmt.Sprintf("c%d", seq), Name: "search", Args: []byte(fmt.Sprintf(`{"q":"topic %d"}`, seq))}
		g.log = append(g.log, core.Message{Role: core.RoleAssistant, Content: fmt.Sprintf("step %d: let me search", seq), Calls: []core.ToolCall{call}})
		res = core.ModelReply{Text: "let me search", Calls: []core.NativeCall{{ID: call.ID, Name: call.Name, Arguments: string(call.Args)}},
			Usage: core.Usage{PromptTokens: 100 + seq, CompletionTokens: 10}}
		st := g.state(seq)
		st.Phase = core.PhaseTools
		st.Turn = &core.Turn{Calls: []core.ToolCall{call}, Results: make([]core.ToolResult, 1), Native: true}
		st.Pending = &core.Pending{Kind: core.PendingTools, CallIDs: []string{call.ID}}
		a = core.RequestToolCalls{Calls: []core.ToolCall{call}, State: st}
	} else {
		id := fmt.Sprintf("c%d", seq-1)
		out := fmt.Sprintf("result of step %d: ", seq)
		out += strings.Repeat("x", max(0, 200-len(out)))
		g.log = append(g.log, core.Message{Role: core.RoleTool, CallID: id, Name: "search", Content: out})
		res = core.ToolResults{Results: []core.ToolResult{{CallID: id, Output: out}}}
		st := g.state(seq)
		st.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
		a = core.RequestModelCall{Role: core.Primary, Messages: st.Messages, Tools: g.tools, State: st}
	}
	if seq == 1 {
		res = nil // step 1 follows step 0: no result led to it
	}
	return store.Checkpoint{Seq: seq, Result: res, Action: a}
}

func (g *synth) state(seq int) core.State {
	st := baseState("question", g.log[:len(g.log):len(g.log)])
	st.Counters = core.Counters{Steps: seq, ModelCalls: seq / 2, Bytes: 100 * seq}
	return st
}

// ending is the final action after g's last step: complete or fail.
func (g *synth) ending(kind string) store.Checkpoint {
	g.seq++
	st := g.state(g.seq)
	switch kind {
	case "fail":
		st.Phase, st.Failure = core.PhaseFailed, &core.Failure{Code: core.FailMaxSteps, Reason: "too many steps"}
		return store.Checkpoint{Seq: g.seq, Action: core.Fail{Code: core.FailMaxSteps, Reason: "too many steps", State: st}}
	case "cancel":
		st.Phase, st.Failure = core.PhaseFailed, &core.Failure{Code: core.FailCancelled, Reason: "the run was cancelled"}
		return store.Checkpoint{Seq: g.seq, Action: core.Fail{Code: core.FailCancelled, Reason: "the run was cancelled", State: st}}
	}
	st.Phase, st.Answer = core.PhaseDone, "the answer"
	return store.Checkpoint{Seq: g.seq, Action: core.Complete{Answer: "the answer", ToolsUsed: []string{"search"}, State: st}}
}

// pause is a pause for an external call after g's last step.
func (g *synth) pause() store.Checkpoint {
	g.seq++
	call := core.ToolCall{ID: fmt.Sprintf("e%d", g.seq), Name: "ask_user", Args: []byte(`{}`)}
	g.log = append(g.log, core.Message{Role: core.RoleAssistant, Calls: []core.ToolCall{call}})
	st := g.state(g.seq)
	st.Phase = core.PhaseTools
	st.Turn = &core.Turn{Calls: []core.ToolCall{call}, Results: make([]core.ToolResult, 1), Native: true}
	st.Pending = &core.Pending{Kind: core.PendingExternal, CallIDs: []string{call.ID}}
	return store.Checkpoint{Seq: g.seq, Action: core.RequestExternalToolCalls{Calls: []core.ToolCall{call}, State: st}}
}

// tools is a tool list of n tools of a real agent's size (about 600 bytes
// each).
func tools(n int) []core.Tool {
	out := make([]core.Tool, n)
	for i := range out {
		out[i] = core.Tool{
			Name:        fmt.Sprintf("tool_%02d", i),
			Description: fmt.Sprintf("Tool %d: looks records up in the inventory by name, category and date range, and returns the rows as a table.", i),
			Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"the record's name, or a prefix of it"},` +
				`"category":{"type":"string","enum":["hardware","software","services","other"],"description":"the category to search"},` +
				`"from":{"type":"string","description":"the first date, as YYYY-MM-DD"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":100,"default":20,"description":"how many rows at most"}},"required":["name"]}`),
		}
	}
	return out
}
