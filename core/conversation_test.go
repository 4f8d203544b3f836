package core

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// turn drives st through one user turn of the testConfig agent: the model
// searches for query, then answers answer. It returns the state at rest.
func searchTurn(t *testing.T, cfg Config, st State, query, answer string) State {
	t.Helper()
	a := mustStep(t, cfg, st)
	if _, ok := a.(RequestModelCall); !ok {
		t.Fatalf("want a model call, got %s", DescribeAction(a))
	}
	id := "c-" + query
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call(id, "search", `{"query":"`+query+`"}`)}})
	a = mustStep(t, cfg, st)
	if _, ok := a.(RequestToolCalls); !ok {
		t.Fatalf("want tool calls, got %s", DescribeAction(a))
	}
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: id, Output: "found " + query}}})
	a = mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: answer})
	if done, ok := mustStep(t, cfg, st).(Complete); !ok || done.Answer != answer {
		t.Fatalf("want the answer %q, got %s", answer, DescribeState(st))
	}
	return st
}

func TestConversationCarriesOverAndLimitsCountPerTurn(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxSteps = 3 // one turn: model, tools, model
	cfg.Limits.MaxTurns = 2
	st := searchTurn(t, cfg, mustStart(t, cfg, "who is Alice?"), "alice", "Alice is a cat.")
	for i, q := range []string{"bob", "carol", "dave"} {
		st = mustResume(t, cfg, st, UserMessage{Content: "and " + q + "?"})
		if st.Phase != PhaseModel || st.Answer != "" || st.UserTurns() != i+2 {
			t.Fatalf("after message %d: %s", i+2, DescribeState(st))
		}
		st = searchTurn(t, cfg, st, q, q+" is a dog.")
	}
	if st.Counters.ModelCalls != 8 || st.Conv.Turn != 4 || st.Conv.Input != "and dave?" {
		t.Fatalf("counters after four turns: %s", DescribeState(st))
	}
	if len(st.ToolsUsed) != 1 || st.ToolsUsed[0] != "search" {
		t.Fatalf("tools used: %v", st.ToolsUsed)
	}
	users := 0
	for _, m := range st.Messages {
		if m.Role == RoleUser {
			users++
		}
	}
	if users != 4 {
		t.Fatalf("%d user messages in the log, want 4", users)
	}
}

func TestBudgetPerConversationOrPerTurn(t *testing.T) {
	for _, per := range []BudgetScope{"", PerTurn} {
		cfg := testConfig()
		cfg.Budget = Budget{MaxToolCalls: 1, Per: per}
		st := searchTurn(t, cfg, mustStart(t, cfg, "q1"), "one", "1")
		st = mustResume(t, cfg, st, UserMessage{Content: "q2"})
		a := mustStep(t, cfg, st)
		st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("c2", "search", `{"query":"two"}`)}})
		end := mustStep(t, cfg, st)
		f, failedRun := end.(Fail)
		if per == PerTurn && failedRun {
			t.Fatalf("per turn: the second turn's call was refused: %s", f.Reason)
		}
		if per != PerTurn && (!failedRun || f.Code != FailBudget) {
			t.Fatalf("per conversation: the second turn's call went over the budget: %s", DescribeAction(end))
		}
	}
}

func TestMessageWhileToolsRunIsQueuedForTheNextModelCall(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("c1", "search", `{"query":"x"}`)}})
	a = mustStep(t, cfg, st)
	queued := mustResume(t, cfg, a.Next(), UserMessage{Content: "also y please"})
	again := mustStep(t, cfg, queued)
	if DescribeAction(again) != DescribeAction(a) || len(queued.Conv.Queue) != 1 {
		t.Fatalf("the pending calls changed: %s (%s)", DescribeAction(again), DescribeState(queued))
	}
	queued = mustResume(t, cfg, queued, UserMessage{Content: "and z"})
	st = mustResume(t, cfg, queued, ToolResults{Results: []ToolResult{{CallID: "c1", Output: "x!"}}})
	m, ok := mustStep(t, cfg, st).(RequestModelCall)
	if !ok {
		t.Fatalf("want a model call: %s", DescribeState(st))
	}
	n := len(m.Messages)
	if m.Messages[n-3].Role != RoleTool || m.Messages[n-2].Content != "also y please" || m.Messages[n-1].Content != "and z" {
		t.Fatalf("the model does not see the results, then the messages in order: %+v", m.Messages[n-3:])
	}
	if m.State.UserTurns() != 3 || len(m.State.Conv.Queue) != 0 {
		t.Fatalf("after delivery: %s", DescribeState(m.State))
	}
}

func TestInterruptEndsTheTurnAtAPause(t *testing.T) {
	cfg := testConfig()
	cfg.Conversation.OnMessage = OnInterrupt
	st := mustStart(t, cfg, "buy it")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("c1", "approve", `{"what":"buy"}`)}})
	a = mustStep(t, cfg, st)
	if _, ok := a.(RequestExternalToolCalls); !ok {
		t.Fatalf("want a pause: %s", DescribeAction(a))
	}
	st = mustResume(t, cfg, a.Next(), UserMessage{Content: "stop, do not buy"})
	m, ok := mustStep(t, cfg, st).(RequestModelCall)
	if !ok {
		t.Fatalf("want a model call: %s", DescribeState(st))
	}
	n := len(m.Messages)
	if tm := m.Messages[n-2]; tm.Role != RoleTool || tm.CallID != "c1" || !tm.IsError || tm.Content != interruptMessage {
		t.Fatalf("the interrupted call's result: %+v", tm)
	}
	if m.Messages[n-1].Content != "stop, do not buy" {
		t.Fatalf("the message is not last: %+v", m.Messages[n-1])
	}
	if _, err := Resume(cfg, m.State, ToolResults{Results: []ToolResult{{CallID: "c1", Output: "approved"}}}); !errors.Is(err, ErrWrongResult) {
		t.Fatalf("a late result for the interrupted call: %v", err)
	}
	if len(m.State.ToolsUsed) != 0 {
		t.Fatalf("a call that did not run is in tools_used: %v", m.State.ToolsUsed)
	}
}

func TestToolThatEndsTheTurn(t *testing.T) {
	cfg := testConfig()
	cfg.Tools = append(cfg.Tools, Tool{Name: "transfer", Parameters: []byte(`{"type":"object"}`), EndsTurn: true})
	st := mustStart(t, cfg, "I want a human")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("t1", "transfer", `{}`)}})
	a = mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "t1", Error: "no human is free"}}})
	if _, ok := mustStep(t, cfg, st).(RequestModelCall); !ok {
		t.Fatalf("a failed transfer ended the turn: %s", DescribeState(st))
	}
	a = mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("t2", "transfer", `{}`)}})
	a = mustStep(t, cfg, st)
	calls := st.Counters.ModelCalls
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "t2", Output: "Transferred to Sam."}}})
	done, ok := mustStep(t, cfg, st).(Complete)
	if !ok || done.Answer != "Transferred to Sam." || st.Counters.ModelCalls != calls {
		t.Fatalf("the transfer did not end the turn with its result: %s", DescribeState(st))
	}
	if next := mustResume(t, cfg, st, UserMessage{Content: "thanks"}); next.Phase != PhaseModel {
		t.Fatalf("the conversation does not go on: %s", DescribeState(next))
	}
}

func TestClosingAConversation(t *testing.T) {
	cfg := testConfig()
	st := searchTurn(t, cfg, mustStart(t, cfg, "q"), "q", "done")
	closed := mustResume(t, cfg, st, Cancelled{Reason: "bye"})
	f, ok := mustStep(t, cfg, closed).(Fail)
	if !ok || f.Code != FailCancelled || !strings.Contains(f.Reason, "closed") || closed.Answer != "done" {
		t.Fatalf("close: %s", DescribeState(closed))
	}
	if _, err := Resume(cfg, closed, UserMessage{Content: "hello?"}); !errors.Is(err, ErrConversationEnded) {
		t.Fatalf("a message to a closed conversation: %v", err)
	}
}

func history(t *testing.T, js string) []Message {
	t.Helper()
	var raw []struct {
		Role       Role   `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(js), &raw); err != nil {
		t.Fatal(err)
	}
	out := make([]Message, len(raw))
	for i, m := range raw {
		out[i] = Message{Role: m.Role, Content: m.Content, CallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			out[i].Calls = append(out[i].Calls, ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)})
		}
	}
	return out
}

func TestStartFromAHistory(t *testing.T) {
	cfg := testConfig()
	h := history(t, `[
		{"role":"system","content":"Be brief."},
		{"role":"user","content":"find x"},
		{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"search","arguments":"{\"query\":\"x\"}"}}]},
		{"role":"tool","tool_call_id":"a","content":"x is 1"},
		{"role":"assistant","content":"x is 1."},
		{"role":"user","content":"and y?"}]`)
	st, err := Start(cfg, Request{Messages: h})
	if err != nil {
		t.Fatal(err)
	}
	if st.Request.Input != "and y?" || st.Request.History != 6 || st.UserTurns() != 2 || len(st.Messages) != 6 {
		t.Fatalf("start: %s (input %q, history %d)", DescribeState(st), st.Request.Input, st.Request.History)
	}
	if st.Messages[0].Role != RoleSystem || st.Messages[0].Content != "Be brief." {
		t.Fatalf("the history's system message: %+v", st.Messages[0])
	}
	if m, ok := mustStep(t, cfg, st).(RequestModelCall); !ok || len(m.Messages) != 6 {
		t.Fatalf("first action: %s", DescribeAction(mustStep(t, cfg, st)))
	}
	if _, err := Start(cfg, Request{Input: "x", Messages: h}); !errors.Is(err, ErrBadHistory) {
		t.Fatalf("input and history: %v", err)
	}
	for _, c := range []struct{ js, want string }{
		{`[]`, "no messages"},
		{`[{"role":"robot","content":"hi"}]`, `unknown role "robot"`},
		{`[{"role":"user","content":"a"},{"role":"system","content":"b"},{"role":"user","content":"c"}]`, "only come first"},
		{`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"search","arguments":"{}"}}]},{"role":"user","content":"c"}]`, `call "a" has no result`},
		{`[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"z","content":"?"}]`, `call "z", which no assistant message made`},
		{`[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]`, "must end with"},
		{`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"search","arguments":"[1]"}}]},{"role":"tool","tool_call_id":"a","content":"?"}]`, "not a JSON object"},
	} {
		_, err := Start(cfg, Request{Messages: history(t, c.js)})
		if !errors.Is(err, ErrBadHistory) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.js, err, c.want)
		}
	}
}
