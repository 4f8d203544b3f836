package agentprops_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"pgregory.net/rapid"
)

// loadAgent reads the agent file under test.
func loadAgent(t *testing.T) core.Config {
	t.Helper()
	spec, err := agent.Load("support.toml")
	if err != nil {
		t.Fatal(err)
	}
	return spec.Config
}

// TestSupportAgentInvariants drives runs of support.toml with generated
// model replies and tool results and checks its invariants at every step.
func TestSupportAgentInvariants(t *testing.T) {
	cfg := loadAgent(t)
	seen := map[string]int{} // what the runs did, to show the test reaches the tools
	rapid.Check(t, func(t *rapid.T) {
		input := rapid.SampledFrom([]string{"where is order 7?", "refund order 12, it arrived broken", ""}).Draw(t, "input")
		st, err := core.Start(cfg, core.Request{Input: input})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		for step := 1; ; step++ {
			if step > cfg.Limits.MaxSteps+1 {
				t.Fatalf("the run did not end within max_steps = %d: %s", cfg.Limits.MaxSteps, core.DescribeState(st))
			}
			a, err := core.Step(cfg, st)
			if err != nil {
				t.Fatalf("Step %d: %v (%s)", step, err, core.DescribeState(st))
			}
			if err := coretest.CheckState(cfg, a.Next()); err != nil {
				t.Fatalf("step %d, after %s: %v", step, core.DescribeAction(a), err)
			}
			seen[core.ActionKind(a)]++
			var res core.Result
			switch a := a.(type) {
			case core.Complete, core.Fail:
				if n := a.Next().Counters.Steps; n > cfg.Limits.MaxSteps {
					t.Fatalf("the run took %d steps, over max_steps = %d", n, cfg.Limits.MaxSteps)
				}
				return
			case core.RequestModelCall:
				if err := everyCallAnsweredOnce(a.Messages); err != nil {
					t.Fatalf("step %d: the model would read a broken conversation: %v", step, err)
				}
				if a.Role == core.Primary {
					res = replies(cfg).Draw(t, fmt.Sprintf("reply %d", step))
				}
			case core.RequestToolCalls:
				checkTurn(t, cfg, a.Calls)
			case core.RequestExternalToolCalls:
				checkTurn(t, cfg, a.Calls)
			}
			if res == nil {
				res = coretest.ResultFor(cfg, a).Draw(t, fmt.Sprintf("result %d", step))
			}
			if st, err = core.Resume(cfg, a.Next(), res); err != nil {
				t.Fatalf("step %d: Resume refused a fitting result %s: %v", step, core.DescribeResult(res), err)
			}
		}
	})
	t.Logf("actions over all runs: %v", seen)
	for _, kind := range []string{"tools", "external", "complete", "fail"} {
		if seen[kind] == 0 {
			t.Errorf("no run reached a %s action: the generators miss part of the agent", kind)
		}
	}
}

// replies generates what the primary model may answer to support.toml:
// mostly calls its tools accept (sometimes too many, repeated, or with a
// bad order number) and answers; sometimes coretest's generic replies
// (invalid arguments, unknown tools, stuck or empty replies, truncated
// text, provider errors). coretest.Replies alone knows only its own
// argument names, so an agent's real tools need a generator like this.
func replies(cfg core.Config) *rapid.Generator[core.ModelReply] {
	return rapid.Custom(func(t *rapid.T) core.ModelReply {
		if rapid.IntRange(0, 3).Draw(t, "generic") == 0 {
			return coretest.Replies(cfg).Draw(t, "generic reply")
		}
		n := rapid.IntRange(0, 3).Draw(t, "calls")
		if n == 0 {
			return core.ModelReply{Text: rapid.SampledFrom([]string{"Order 7 has shipped.", "Refunded."}).Draw(t, "answer")}
		}
		var r core.ModelReply
		for range n {
			c := core.NativeCall{ID: rapid.SampledFrom([]string{"", "c1", "c2", "c3"}).Draw(t, "id")}
			number := rapid.IntRange(0, 3).Draw(t, "number") // 0 is out of lookup_order's bounds
			if rapid.Bool().Draw(t, "lookup") {
				c.Name, c.Arguments = "lookup_order", fmt.Sprintf(`{"number": %d}`, number)
			} else {
				c.Name, c.Arguments = "refund", fmt.Sprintf(`{"number": %d, "reason": "broken"}`, number)
			}
			r.Calls = append(r.Calls, c)
		}
		return r
	})
}

// checkTurn checks the calls the core asks the shell to run in one turn.
func checkTurn(t *rapid.T, cfg core.Config, calls []core.ToolCall) {
	if len(calls) > cfg.Limits.MaxCallsPerTurn {
		t.Fatalf("%d calls in one turn, over max_calls_per_turn = %d", len(calls), cfg.Limits.MaxCallsPerTurn)
	}
	seen := map[string]bool{}
	for _, c := range calls {
		if c.ID == "" || seen[c.ID] {
			t.Fatalf("call id %q empty or twice in one turn", c.ID)
		}
		seen[c.ID] = true
	}
}

// everyCallAnsweredOnce checks a conversation as an OpenAI-compatible
// endpoint does: each tool call of an assistant message is answered by
// exactly one tool message before the conversation goes on, and no tool
// message answers a call that was not made. (The ids are the model's: a
// model that gives two calls one id gets two answers with that id.)
func everyCallAnsweredOnce(msgs []core.Message) error {
	open := map[string]int{} // the unanswered calls of the last assistant message, by id
	for i, m := range msgs {
		switch {
		case m.Role == core.RoleTool:
			if open[m.CallID] == 0 {
				return fmt.Errorf("message %d answers call %q, which is not open", i, m.CallID)
			}
			open[m.CallID]--
		case len(keys(open)) > 0:
			return fmt.Errorf("message %d (%s) comes while calls %v are unanswered", i, m.Role, keys(open))
		}
		if m.Role == core.RoleAssistant {
			for _, c := range m.Calls {
				open[c.ID]++
			}
		}
	}
	if k := keys(open); len(k) > 0 {
		return fmt.Errorf("calls %v are unanswered at the end", k)
	}
	return nil
}

// keys lists the ids with calls left open, sorted.
func keys(m map[string]int) []string {
	var out []string
	for k, n := range m {
		if n > 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// TestTheInvariantCheckCatchesBrokenConversations shows that the check
// above fails where it should.
func TestTheInvariantCheckCatchesBrokenConversations(t *testing.T) {
	call := func(ids ...string) core.Message {
		m := core.Message{Role: core.RoleAssistant}
		for _, id := range ids {
			m.Calls = append(m.Calls, core.ToolCall{ID: id, Name: "lookup_order", Args: []byte(`{"number":1}`)})
		}
		return m
	}
	answer := func(id string) core.Message { return core.Message{Role: core.RoleTool, CallID: id, Content: "ok"} }
	user := core.Message{Role: core.RoleUser, Content: "hi"}
	for _, tc := range []struct {
		name string
		msgs []core.Message
		ok   bool
	}{
		{"answered", []core.Message{user, call("a", "b"), answer("b"), answer("a"), user}, true},
		{"unanswered", []core.Message{user, call("a", "b"), answer("a"), user}, false},
		{"answered twice", []core.Message{user, call("a"), answer("a"), answer("a")}, false},
		{"one id for two calls, answered twice", []core.Message{user, call("a", "a"), answer("a"), answer("a"), user}, true},
		{"one id for two calls, answered once", []core.Message{user, call("a", "a"), answer("a"), user}, false},
		{"open at the end", []core.Message{user, call("a")}, false},
	} {
		if err := everyCallAnsweredOnce(tc.msgs); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
