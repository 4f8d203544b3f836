package core_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"pgregory.net/rapid"
)

// Runs with the policies on end within their limits, survive crash and
// restore at any step, refuse misfit results, and are deterministic.
func TestPropPolicyRunsKeepInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.PolicyConfigs(coretest.AllFormats...).Draw(t, "cfg")
		final, results := coretest.CheckRun(t, cfg, "input")
		if !final.Done() {
			t.Fatalf("not ended: %s", core.DescribeState(final))
		}
		a1, err1 := coretest.Replay(cfg, "input", results)
		a2, err2 := coretest.Replay(cfg, "input", results)
		if err1 != nil || err2 != nil || len(a1) != len(a2) {
			t.Fatalf("replays: %v / %v, %d and %d actions", err1, err2, len(a1), len(a2))
		}
		for i := range a1 {
			if string(encodeAll(t, a1[i])) != string(encodeAll(t, a2[i])) {
				t.Fatalf("step %d differs", i)
			}
		}
	})
}

var budgetRuns struct{ exhausted, overshot atomic.Int64 }

// Budgets hold: every model call is made while each token and cost budget
// has some left, so a run ends at most one call's usage past one; tool
// calls never pass their budget; a run failed with budget_exhausted names
// a budget that is used up.
func TestPropBudgetsOvershootByOneRequestAtMost(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.PolicyConfigs(coretest.AllFormats...).Draw(t, "cfg")
		_, results := coretest.CheckRun(t, cfg, "input")
		actions, err := coretest.Replay(cfg, "input", results)
		if err != nil {
			t.Fatal(err)
		}
		b := cfg.Budget
		var last core.Usage // the usage of the last model reply fed in
		for i, a := range actions {
			st := a.Next()
			if _, ok := a.(core.RequestModelCall); ok {
				c := st.Counters
				if b.MaxInputTokens > 0 && c.PromptTokens >= b.MaxInputTokens ||
					b.MaxOutputTokens > 0 && c.CompletionTokens >= b.MaxOutputTokens ||
					b.MaxCost > 0 && c.Cost >= b.MaxCost {
					t.Fatalf("a model call made with a budget used up: %+v, budget %+v", c, b)
				}
			}
			if b.MaxToolCalls > 0 && st.Counters.ToolCalls > b.MaxToolCalls {
				t.Fatalf("%d tool calls accepted, budget %d", st.Counters.ToolCalls, b.MaxToolCalls)
			}
			if i < len(results) {
				if r, ok := results[i].(core.ModelReply); ok {
					last = r.Usage
				}
			}
		}
		final := actions[len(actions)-1].Next()
		c := final.Counters
		if b.MaxInputTokens > 0 && c.PromptTokens-last.PromptTokens >= b.MaxInputTokens {
			t.Fatalf("input tokens %d, last reply %d, budget %d: more than one request past", c.PromptTokens, last.PromptTokens, b.MaxInputTokens)
		}
		if b.MaxOutputTokens > 0 && c.CompletionTokens-last.CompletionTokens >= b.MaxOutputTokens {
			t.Fatalf("output tokens %d, last reply %d, budget %d: more than one request past", c.CompletionTokens, last.CompletionTokens, b.MaxOutputTokens)
		}
		if b.MaxCost > 0 {
			lastCost := costOf(cfg, actions, results)
			if c.Cost-lastCost >= b.MaxCost {
				t.Fatalf("cost %d, last reply %d, budget %d: more than one request past", c.Cost, lastCost, b.MaxCost)
			}
		}
		if b.MaxInputTokens > 0 && c.PromptTokens > b.MaxInputTokens || b.MaxOutputTokens > 0 && c.CompletionTokens > b.MaxOutputTokens || b.MaxCost > 0 && c.Cost > b.MaxCost {
			budgetRuns.overshot.Add(1)
		}
		if f, ok := actions[len(actions)-1].(core.Fail); ok && f.Code == core.FailBudget {
			budgetRuns.exhausted.Add(1)
			switch {
			case strings.Contains(f.Reason, "max_input_tokens is"):
				if c.PromptTokens < b.MaxInputTokens {
					t.Fatalf("failed on max_input_tokens with %d of %d used", c.PromptTokens, b.MaxInputTokens)
				}
			case strings.Contains(f.Reason, "max_output_tokens is"):
				if c.CompletionTokens < b.MaxOutputTokens {
					t.Fatalf("failed on max_output_tokens with %d of %d used", c.CompletionTokens, b.MaxOutputTokens)
				}
			case strings.Contains(f.Reason, "max_cost is"):
				if c.Cost < b.MaxCost {
					t.Fatalf("failed on max_cost with %d of %d spent", c.Cost, b.MaxCost)
				}
			case strings.Contains(f.Reason, "max_tool_calls is"):
				if b.MaxToolCalls == 0 {
					t.Fatal("failed on max_tool_calls without that budget")
				}
			default:
				t.Fatalf("budget_exhausted names no budget: %s", f.Reason)
			}
		}
	})
	if budgetRuns.exhausted.Load() == 0 || budgetRuns.overshot.Load() == 0 {
		t.Fatalf("the generated runs never exhausted (%d) or overshot (%d) a budget: the property says nothing", budgetRuns.exhausted.Load(), budgetRuns.overshot.Load())
	}
}

// costOf is the cost of the last model reply fed in, at its role's price.
func costOf(cfg core.Config, actions []core.Action, results []core.Result) int64 {
	for i := len(results) - 1; i >= 0; i-- {
		r, ok := results[i].(core.ModelReply)
		if !ok {
			continue
		}
		p := cfg.Models.PrimaryPrice
		if a, ok := actions[i].(core.RequestModelCall); ok && a.Role == core.Helper {
			p = cfg.Models.HelperPrice
		}
		return int64(max(0, r.Usage.PromptTokens))*p.Input + int64(max(0, r.Usage.CompletionTokens))*p.Output
	}
	return 0
}

// Cost is exact: the sum of every reply's tokens at its role's price.
func TestPropCostIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.PolicyConfigs(core.FormatNative).Draw(t, "cfg")
		_, results := coretest.CheckRun(t, cfg, "input")
		actions, err := coretest.Replay(cfg, "input", results)
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		priced := cfg.Models.PrimaryPrice != (core.Price{}) || cfg.Models.HelperPrice != (core.Price{})
		for i, r := range results {
			reply, ok := r.(core.ModelReply)
			if !ok || !priced {
				continue
			}
			p := cfg.Models.PrimaryPrice
			if a := actions[i].(core.RequestModelCall); a.Role == core.Helper {
				p = cfg.Models.HelperPrice
			}
			want += int64(reply.Usage.PromptTokens)*p.Input + int64(reply.Usage.CompletionTokens)*p.Output
		}
		if got := actions[len(actions)-1].Next().Counters.Cost; got != want {
			t.Fatalf("cost %d, want %d", got, want)
		}
	})
}

func TestFormatCost(t *testing.T) {
	for pico, want := range map[int64]string{
		0: "0", 1: "0.000000000001", 100_000_000: "0.0001", 512_345_000_000: "0.512345",
		core.Picounits: "1", 12 * core.Picounits / 10: "1.2", -core.Picounits / 2: "-0.5",
	} {
		if got := core.FormatCost(pico); got != want {
			t.Errorf("FormatCost(%d) = %q, want %q", pico, got, want)
		}
	}
}

// A run with max_turns asks the primary at most max_turns times, and once
// more, without tools, under the answer policy.
func TestPropMaxTurns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.Configs(coretest.AllFormats...).Draw(t, "cfg")
		cfg.Limits.MaxTurns = rapid.IntRange(1, 4).Draw(t, "max-turns")
		cfg.Policy.OnMaxTurns = rapid.SampledFrom([]core.LimitPolicy{core.LimitFail, core.LimitAnswer}).Draw(t, "policy")
		_, results := coretest.CheckRun(t, cfg, "input")
		actions, err := coretest.Replay(cfg, "input", results)
		if err != nil {
			t.Fatal(err)
		}
		primary := 0
		for _, a := range actions {
			m, ok := a.(core.RequestModelCall)
			if !ok || m.Role != core.Primary {
				continue
			}
			primary++
			if primary > cfg.Limits.MaxTurns {
				if cfg.Policy.OnMaxTurns != core.LimitAnswer || primary > cfg.Limits.MaxTurns+1 {
					t.Fatalf("primary call %d with max_turns %d, policy %s", primary, cfg.Limits.MaxTurns, cfg.Policy.OnMaxTurns)
				}
				if m.Tools != nil || !strings.Contains(m.Messages[len(m.Messages)-1].Content, "final answer") {
					t.Fatal("the final request has tools, or does not ask for the final answer")
				}
			}
		}
		if f, ok := actions[len(actions)-1].(core.Fail); ok && f.Code == core.FailMaxTurns && primary < cfg.Limits.MaxTurns {
			t.Fatalf("failed max_turns after %d primary calls of %d", primary, cfg.Limits.MaxTurns)
		}
	})
}

// The same bounds where budgets run out often and exactly: every reply
// uses a few tokens and asks for valid calls, and the budgets are small.
func TestPropBudgetsAtTheirBoundaries(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		for range 10 { // ten runs a check: exact hits are what this looks for
			spendToTheEnd(t)
		}
	})
}

// spendToTheEnd drives one run of a model that spends a little at each
// call, checking the bounds at every step.
func spendToTheEnd(t *rapid.T) {
	cfg := core.Config{Name: "spender", Models: core.Models{Primary: "m", PrimaryPrice: core.Price{Input: 3, Output: 5}},
		Limits: core.Limits{MaxSteps: 200},
		Budget: core.Budget{
			MaxInputTokens:  orZero(rapid.IntRange(1, 12)).Draw(t, "max-input"),
			MaxOutputTokens: orZero(rapid.IntRange(1, 12)).Draw(t, "max-output"),
			MaxCost:         orZero(rapid.Int64Range(1, 60)).Draw(t, "max-cost"),
			MaxToolCalls:    orZero(rapid.IntRange(1, 6)).Draw(t, "max-tool-calls"),
		},
		Tools: []core.Tool{{Name: "t", Parameters: []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}}}
	st, err := core.Start(cfg, core.Request{Input: "spend"})
	if err != nil {
		t.Fatal(err)
	}
	b, n := cfg.Budget, 0
	var last core.Usage
	var lastCost int64
	for {
		a, err := core.Step(cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		c := a.Next().Counters
		if b.MaxToolCalls > 0 && c.ToolCalls > b.MaxToolCalls {
			t.Fatalf("%d tool calls accepted, budget %d", c.ToolCalls, b.MaxToolCalls)
		}
		var res core.Result
		switch a := a.(type) {
		case core.Complete, core.Fail:
			if b.MaxInputTokens > 0 && c.PromptTokens-last.PromptTokens >= b.MaxInputTokens ||
				b.MaxOutputTokens > 0 && c.CompletionTokens-last.CompletionTokens >= b.MaxOutputTokens ||
				b.MaxCost > 0 && c.Cost-lastCost >= b.MaxCost {
				t.Fatalf("more than one request past a budget: %+v, last %+v (cost %d), budget %+v", c, last, lastCost, b)
			}
			return
		case core.RequestModelCall:
			if b.MaxInputTokens > 0 && c.PromptTokens >= b.MaxInputTokens || b.MaxOutputTokens > 0 && c.CompletionTokens >= b.MaxOutputTokens || b.MaxCost > 0 && c.Cost >= b.MaxCost {
				t.Fatalf("a model call made with a budget used up: %+v, budget %+v", c, b)
			}
			last = core.Usage{PromptTokens: rapid.IntRange(0, 4).Draw(t, "in"), CompletionTokens: rapid.IntRange(0, 4).Draw(t, "out")}
			lastCost = int64(last.PromptTokens)*3 + int64(last.CompletionTokens)*5
			reply := core.ModelReply{Usage: last}
			if rapid.IntRange(0, 9).Draw(t, "answer") == 0 {
				reply.Text = "done"
			}
			for range rapid.IntRange(1, 3).Draw(t, "calls") {
				n++
				reply.Calls = append(reply.Calls, core.NativeCall{Name: "t", Arguments: fmt.Sprintf(`{"n":%d}`, n)})
			}
			if reply.Text == "done" {
				reply.Calls = nil
			}
			res = reply
		case core.RequestToolCalls:
			var rs []core.ToolResult
			for _, call := range a.Calls {
				rs = append(rs, core.ToolResult{CallID: call.ID, Output: "ok"})
			}
			res = core.ToolResults{Results: rs}
		default:
			t.Fatalf("unexpected %s", core.DescribeAction(a))
		}
		if st, err = core.Resume(cfg, a.Next(), res); err != nil {
			t.Fatal(err)
		}
	}
}

// orZero draws 0 (no budget) half the time.
func orZero[T int | int64](g *rapid.Generator[T]) *rapid.Generator[T] {
	return rapid.OneOf(rapid.Just(T(0)), g)
}
