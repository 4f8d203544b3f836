package core_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"pgregory.net/rapid"
)

// The tree's accounting: a result that reports what a sub-agent's run
// spent (ToolResult.Spent) is counted by the parent exactly, tokens always
// and tool calls under a tool-call budget; given children that spend no
// more than the parent has left (as the shell starts them), the parent's
// tool calls never pass its budget, and once a token budget is spent no
// further model call is made.
func TestPropTreeAccounting(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := core.DefaultConfig()
		cfg.Name = "parent"
		cfg.Tools = []core.Tool{{Name: "child", Parameters: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string"}}}`), Idempotent: true}}
		cfg.Budget = core.Budget{MaxToolCalls: rapid.IntRange(1, 30).Draw(t, "max-calls"), MaxInputTokens: rapid.IntRange(100, 5000).Draw(t, "max-input")}
		st, err := core.Start(cfg, core.Request{Input: "delegate"})
		if err != nil {
			t.Fatal(err)
		}
		wantPrompt, wantCalls := 0, 0
		for step := 0; step < 200; step++ {
			a, err := core.Step(cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			c := a.Next().Counters
			if _, ended := a.(core.Fail); ended {
				return // a budget refused the calls
			}
			if c.ToolCalls > cfg.Budget.MaxToolCalls {
				t.Fatalf("tool calls %d over the budget of %d", c.ToolCalls, cfg.Budget.MaxToolCalls)
			}
			if c.PromptTokens != wantPrompt || c.ToolCalls != wantCalls {
				t.Fatalf("counted %d prompt tokens and %d tool calls, want %d and %d", c.PromptTokens, c.ToolCalls, wantPrompt, wantCalls)
			}
			var res core.Result
			switch a := a.(type) {
			case core.Complete, core.Fail:
				return
			case core.RequestModelCall:
				if c.PromptTokens >= cfg.Budget.MaxInputTokens {
					t.Fatalf("a model call with the input budget spent (%d of %d)", c.PromptTokens, cfg.Budget.MaxInputTokens)
				}
				used := rapid.IntRange(0, 300).Draw(t, "usage")
				wantPrompt += used
				if rapid.IntRange(0, 5).Draw(t, "answer") == 0 {
					res = core.ModelReply{Text: "done", Usage: core.Usage{PromptTokens: used}}
				} else {
					wantCalls++ // counted when the call is accepted
					res = core.ModelReply{Calls: []core.NativeCall{{ID: fmt.Sprintf("c%d", step), Name: "child", Arguments: `{"task":"x"}`}}, Usage: core.Usage{PromptTokens: used}}
				}
			case core.RequestToolCalls:
				left := cfg.Budget.MaxToolCalls - a.Next().Counters.ToolCalls
				s := &core.Spent{PromptTokens: rapid.IntRange(0, 500).Draw(t, "child-tokens"), ToolCalls: rapid.IntRange(0, max(0, left)).Draw(t, "child-calls")}
				wantPrompt += s.PromptTokens
				wantCalls += s.ToolCalls
				res = core.ToolResults{Results: []core.ToolResult{{CallID: a.Calls[0].ID, Output: "ok", Spent: s}}}
			default:
				t.Fatalf("unexpected %s", core.DescribeAction(a))
			}
			if st, err = core.Resume(cfg, a.Next(), res); err != nil {
				t.Fatal(err)
			}
			if st.Phase != core.PhaseFailed && st.Counters.PromptTokens != wantPrompt {
				t.Fatalf("after %s: %d prompt tokens, want %d", core.DescribeResult(res), st.Counters.PromptTokens, wantPrompt)
			}
		}
	})
}
