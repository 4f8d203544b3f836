package core_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"pgregory.net/rapid"
)

// contextAgent is a native agent with one tool whose requests are bounded.
func contextAgent(t *rapid.T) core.Config {
	cfg := core.DefaultConfig()
	cfg.Name = "compactor"
	cfg.SystemPrompt = "You look things up."
	cfg.Limits.MaxStateBytes = 64 << 20
	cfg.Tools = []core.Tool{{Name: "fetch", Description: "fetch a page", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`)}}
	if rapid.Bool().Draw(t, "helper") {
		cfg.Models.Helper = "helper"
	}
	cfg.Context = &core.ContextPolicy{
		MaxTokens: rapid.IntRange(300, 20_000).Draw(t, "max-tokens"),
		KeepTurns: rapid.IntRange(0, 5).Draw(t, "keep"),
		Strategies: rapid.SampledFrom([][]core.ContextStrategy{nil, {core.ElideResults}, {core.Summarize},
			{core.Summarize, core.ElideResults}}).Draw(t, "strategies"),
		SummaryWords: rapid.IntRange(0, 200).Draw(t, "words"),
	}
	return cfg
}

// Whatever the conversation (tool outputs up to megabytes, many turns,
// summaries of any length), no request to the primary model exceeds the
// bound by the estimator; in every request each call of an assistant
// message is answered by a tool message after it and each tool message
// answers a call before it; and a run that cannot fit fails with
// context_overflow rather than send a larger request. The run's bytes are
// the same replayed from its results.
func TestPropRequestsFitTheirBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := contextAgent(t)
		st, err := core.Start(cfg, core.Request{Input: "look it up"})
		if err != nil {
			t.Fatal(err)
		}
		messages := rapid.IntRange(0, 12).Draw(t, "messages")
		var fed []core.Result
		for step := 0; step < 400; step++ {
			a, err := core.Step(cfg, st)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			var res core.Result
			switch a := a.(type) {
			case core.Fail:
				if a.Code != core.FailContext && a.Code != core.FailMaxSteps {
					t.Fatalf("failed: %s %s", a.Code, a.Reason)
				}
				return
			case core.Complete:
				if messages == 0 {
					replayed, err := coretest.ReplayConversation(cfg, "look it up", fed, true)
					if err != nil || !sameBytes(replayed, a.State) {
						t.Fatalf("replayed to other bytes: %v", err)
					}
					return
				}
				messages--
				res = core.UserMessage{Content: "and then " + strings.Repeat("?", rapid.IntRange(1, 2000).Draw(t, "question"))}
			case core.RequestModelCall:
				if a.State.Phase == core.PhaseCompact {
					res = core.ModelReply{Text: strings.Repeat("summary ", rapid.IntRange(0, 3000).Draw(t, "summary-words"))}
					break
				}
				if n, limit := core.RequestTokens(cfg, a), cfg.Context.MaxTokens; n > limit {
					t.Fatalf("a request of %d tokens, over the bound of %d (%s)", n, limit, core.DescribeState(a.State))
				}
				if why := unpaired(a.Messages); why != "" {
					t.Fatal(why)
				}
				if rapid.IntRange(0, 2).Draw(t, "answer") == 0 {
					res = core.ModelReply{Text: "done", Usage: core.Usage{PromptTokens: rapid.IntRange(0, 30_000).Draw(t, "reported")}}
				} else {
					res = core.ModelReply{Calls: []core.NativeCall{{ID: fmt.Sprintf("c%d", step), Name: "fetch", Arguments: fmt.Sprintf(`{"url":"x%d"}`, step)}}}
				}
			case core.RequestToolCalls:
				size := rapid.SampledFrom([]int{10, 2_000, 50_000, 1 << 20}).Draw(t, "output")
				res = core.ToolResults{Results: []core.ToolResult{{CallID: a.Calls[0].ID, Output: strings.Repeat("x", size)}}}
			default:
				t.Fatalf("unexpected %s", core.DescribeAction(a))
			}
			fed = append(fed, res)
			if st, err = core.Resume(cfg, a.Next(), res); err != nil {
				t.Fatalf("Resume(%s): %v", core.DescribeResult(res), err)
			}
		}
	})
}

func sameBytes(a, b core.State) bool {
	x, err1 := core.EncodeState(a)
	y, err2 := core.EncodeState(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// unpaired says how a request separates a call from its result, or "".
func unpaired(msgs []core.Message) string {
	open := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case core.RoleAssistant:
			if len(open) > 0 {
				return fmt.Sprintf("message %d: an assistant message while calls wait for results", i)
			}
			for _, c := range m.Calls {
				open[c.ID] = true
			}
		case core.RoleTool:
			if !open[m.CallID] {
				return fmt.Sprintf("message %d: a result for call %q, which no assistant message before it made", i, m.CallID)
			}
			delete(open, m.CallID)
		}
	}
	if len(open) > 0 {
		return "calls without results at the end of a request"
	}
	return ""
}
